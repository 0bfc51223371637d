"""Format core speed: our reads/writes against jupytext (md, py:percent) and str.splitlines.

Targets (issue 2): read >= 20x faster than jupytext's md reader, write >= 10x faster than its
md writer, read within 20x of ``str.splitlines`` on the same text.
Run: ``.venv/bin/python -m benchmarks.bench_format``.
"""

from __future__ import annotations

import copy

from benchmarks._timing import median_seconds, print_table
from jupyter_percent_agent import format as fmt

CELLS = 5000


def conversation(n: int = CELLS) -> dict:
    """A notebook of ``n`` input cells: messages with replies, some tool calls, code output."""
    cells = []
    for i in range(n):
        cid = f"m{i}"
        if i % 5 == 4:
            cell = fmt.new_message(f"import math\nprint(math.sqrt({i}))\n# step {i}",
                                   cell_id=cid, title=f"Step {i}")
            cell["metadata"][fmt.NS]["type"] = "code"
            cell["execution_count"] = i
            cell["outputs"] = [fmt.stream_output("stdout", f"{i ** 0.5}\n"),
                               fmt.stream_output("stderr", "warning: slow\n")]
        else:
            cell = fmt.new_message(
                f"Question {i}: compare plan A and plan B for module {i}.\n\n"
                "- plan A rewrites it\n- plan B refactors it\n\nWhich is better, and why?",
                attrs={"history": "include", "agent": "planner"}, cell_id=cid)
            cell["outputs"] = [fmt.reply_output(
                f"**Plan B** for module {i}.\n\nIt keeps the tests and the history.\n\n"
                "```python\nrefactor(module)\n```",
                agent="planner", out_id=f"{cid}.1",
                attrs={"time": "2025-05-30T00:00:00+08:00", "model": "gpt-4o-mini",
                       "tokens_in": 120 + i, "tokens_out": 40, "cost": 0.0003})]
            if i % 10 == 1:
                cell["outputs"][:0] = [
                    fmt.tool_call_output("count_lines", f'__result__ = count_lines("m{i}")',
                                         out_id=f"{cid}.k{i}"),
                    fmt.tool_result_output('{"lines": 1200}', out_id=f"{cid}.k{i}.1",
                                           status="success", attrs={"duration": "0.5s"}),
                ]
        cells.append(cell)
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def main() -> None:
    import jupytext
    import nbformat

    text = fmt.writes(conversation())
    nb = fmt.reads(text)
    jnb = nbformat.from_dict(copy.deepcopy(nb))  # the same notebook, as jupytext takes it
    md_text = jupytext.writes(jnb, fmt="md")
    py_text = jupytext.writes(jnb, fmt="py:percent")
    lines = len(text.split("\n"))
    print(f"\n{CELLS} cells, {len(nb['cells'])} notebook cells, {lines} lines, "
          f"{len(text) / 1e6:.2f} MB")

    t_split = median_seconds(lambda: text.splitlines(), repeat=9)
    t_read = median_seconds(lambda: fmt.reads(text), repeat=7)
    t_write = median_seconds(lambda: fmt.writes(nb), repeat=7)
    t_jmd_read = median_seconds(lambda: jupytext.reads(md_text, fmt="md"), repeat=3)
    t_jmd_write = median_seconds(lambda: jupytext.writes(jnb, fmt="md"), repeat=3)
    t_jpy_read = median_seconds(lambda: jupytext.reads(py_text, fmt="py:percent"), repeat=3)
    t_jpy_write = median_seconds(lambda: jupytext.writes(jnb, fmt="py:percent"), repeat=3)

    rows = [
        ["str.splitlines", t_split, ""],
        ["format.reads", t_read, f"{t_read / t_split:.1f}x splitlines (target <= 20x)"],
        ["format.writes", t_write, ""],
        ["jupytext.reads md", t_jmd_read, f"{t_jmd_read / t_read:.1f}x ours (target >= 20x)"],
        ["jupytext.writes md", t_jmd_write,
         f"{t_jmd_write / t_write:.1f}x ours (target >= 10x)"],
        ["jupytext.reads py:percent", t_jpy_read, f"{t_jpy_read / t_read:.1f}x ours"],
        ["jupytext.writes py:percent", t_jpy_write, f"{t_jpy_write / t_write:.1f}x ours"],
    ]
    print_table("format core vs jupytext (median seconds)", rows, ["what", "s", "ratio"])
    ok = (t_jmd_read / t_read >= 20 and t_jmd_write / t_write >= 10
          and t_read / t_split <= 20)
    print(f"\ntargets {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
