"""The format core carries what task runs need: ``[task]`` cells and typed new cells."""

from __future__ import annotations

import pytest

from jupyter_percent_agent import format as fmt

TASK_CELL = """## %% Write a blog[^t1]
[^t1]: [task] task_id="blog/generate_blog" sop="sop"

{"标题": "春天", "用户原始输入": "写一篇关于春天的博客"}
"""


def test_a_task_cell_reads_and_writes_back_byte_for_byte() -> None:
    nb = fmt.reads(TASK_CELL, path="t.msg.md")
    (cell,) = nb["cells"]
    assert fmt.cell_kind(cell) == "task"
    assert fmt.cell_attrs(cell) == {"task_id": "blog/generate_blog", "sop": "sop"}
    assert fmt.message_text(cell).startswith('{"标题"')
    assert fmt.writes(nb, path="t.msg.md") == TASK_CELL


@pytest.mark.parametrize("kind", ["message", "raw", "tool_call", "task"])
def test_new_cells_of_each_kind_round_trip(kind: str) -> None:
    nb = fmt.reads("", path="n.msg.md")
    cell = fmt.new_message('{"a": 1}', attrs={"task_id": "x/y", "args": {"q": [1, 2]}},
                           title="x/y", kind=kind)
    nb["cells"].append(cell)
    back = fmt.reads(fmt.writes(nb, path="n.msg.md"), path="n.msg.md")
    assert back["cells"] == nb["cells"]
    assert fmt.cell_kind(back["cells"][0]) == kind


def test_new_message_refuses_a_kind_that_is_no_input_cell() -> None:
    with pytest.raises(ValueError, match="reply"):
        fmt.new_message("x", kind="reply")
