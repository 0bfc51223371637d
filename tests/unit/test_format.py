"""The format core: seeds, round trips, liberal input, bad input, import weight."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import nbformat
import pytest

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.format import FormatError, reads, writes
from jupyter_percent_agent.format.runner import (
    without_runner_cell_keys,
    without_runner_notebook_keys,
)
from tests.paths import ROOT, TEST_DATA

SEEDS = TEST_DATA / "format" / "seeds"
CANONICAL = TEST_DATA / "format" / "canonical"
NS = fmt.NS


def seed(name: str) -> dict:
    path = SEEDS / name
    return reads(path.read_text(encoding="utf-8"), path=str(path))


def only(nb: dict, kind: str | None = None) -> list[dict]:
    cells = [c for c in nb["cells"] if c["id"] not in ("front-matter", "preamble")]
    if kind is not None:
        cells = [c for c in cells if fmt.cell_kind(c) == kind]
    return cells


def assert_valid(nb: dict) -> None:
    nbformat.validate(nbformat.from_dict(json.loads(json.dumps(nb))))


# --------------------------------------------------------------------------- seeds


def test_seed_basic_heading_title_and_attribute():
    (cell,) = only(seed("000_basic.msg.md"))
    assert cell["cell_type"] == "code" and fmt.cell_kind(cell) == "message"
    assert cell["id"] == "1" and fmt.cell_attrs(cell) == {"key": "value"}
    assert cell["metadata"][NS]["title"] == "Optional title"


def test_seed_code_cell_carries_execution_count_and_language_attribute():
    (cell,) = only(seed("000_data_cell.msg.md"))
    assert fmt.cell_kind(cell) == "code"
    assert cell["execution_count"] == 1
    assert fmt.cell_attrs(cell) == {"language": "python"}
    (cell,) = only(seed("000_process_data.msg.md"))
    assert cell["cell_type"] == "code" and cell["execution_count"] == 2
    assert "cell_type" not in cell["metadata"]


def test_seed_output_with_metadata_on_its_heading_is_a_stdout_stream():
    (cell,) = only(seed("000_output_on_heading.msg.md"))
    assert fmt.message_text(cell) == 'print("hello")'
    (out,) = cell["outputs"]
    assert out == {"output_type": "stream", "name": "stdout", "text": "hello\n"}
    assert fmt.output_attrs(out, cell) == {"agent": "custom-agent", "time": "xxxx"}


def test_seed_agent_definition_keeps_yaml_and_prompt():
    (cell,) = only(seed("000_agent_definition.msg.md"))
    assert fmt.cell_kind(cell) == "agent"
    assert fmt.cell_attrs(cell) == {"definition": "agent", "name": "custom-agent"}
    assert "context_window: 200000" in cell["source"]
    assert cell["source"].endswith("with specific capabilities...")


def test_seed_user_input_history_none():
    (cell,) = only(seed("000_user_input.msg.md"))
    assert fmt.cell_attrs(cell) == {"history": "none", "key": "value"}


def test_seed_llm_output_is_a_reply():
    (cell,) = only(seed("000_llm_output.msg.md"))
    (out,) = cell["outputs"]
    assert out["output_type"] == "display_data"
    assert out["data"] == {"text/markdown": "输出内容..."}
    assert fmt.output_kind(out) == "reply"
    assert fmt.output_attrs(out) == {"agent": "custom-agent",
                                     "time": "2025-05-30T00:00:00+08:00"}


def test_seed_tool_output_with_status_is_a_tool_result():
    (cell,) = only(seed("000_tool_output.msg.md"))
    (out,) = cell["outputs"]
    assert fmt.output_kind(out) == "tool_result"
    assert fmt.output_attrs(out) == {"name": "tool_name", "status": "success",
                                     "duration": "0.5s"}
    assert fmt.output_text(out) == "工具返回结果..."


def test_seed_async_cell_keeps_its_link():
    (cell,) = only(seed("000_async.msg.md"))
    assert fmt.cell_kind(cell) == "async"
    assert cell["metadata"][NS]["link"] == "file_name"
    assert fmt.cell_attrs(cell) == {"id": "123"}


def test_seed_tool_definition_keeps_python_fence():
    (cell,) = only(seed("000_tool_definition.msg.md"))
    assert fmt.cell_kind(cell) == "tool"
    assert fmt.cell_attrs(cell) == {"name": "weather", "description": "获取天气信息"}
    assert "def get_weather(city: str) -> str:" in cell["source"]


def test_seed_tool_call_literal_args_and_tool_result():
    (cell,) = only(seed("000_tool_call.msg.md"))
    assert fmt.cell_kind(cell) == "tool_call"
    assert fmt.cell_attrs(cell) == {"tool": "weather", "args": '{"city":"北京"}'}
    (out,) = cell["outputs"]
    assert fmt.output_kind(out) == "tool_result"
    assert fmt.output_attrs(out) == {"tool": "weather", "status": "success", "duration": 0.5}
    assert fmt.output_text(out) == "北京 25°C 晴朗"


def test_seed_toolchain_continuation_line_belongs_to_metadata():
    (cell,) = only(seed("000_toolchain.msg.md"))
    assert fmt.cell_kind(cell) == "toolchain"
    assert fmt.cell_attrs(cell) == {
        "tools": ["data_clean", "feature_extract", "model_predict"],
        "params": '{"input": "data.csv", "output": "result.csv"}',
    }
    assert cell["source"] == ""


def test_seed_message_with_blank_line_before_footnote():
    (cell,) = only(seed("002_message.msg.md"))
    assert fmt.cell_attrs(cell) == {"key1": "value1", "key2": "value2", "history": "include"}
    assert cell["source"] == "[消息内容]"
    assert cell["metadata"][NS]["title"] == "[可选标题]"


@pytest.mark.parametrize("footnote, attrs, body", [
    ("[^a]: [markdown] k=1\n\nbody\n", {"k": 1}, "body"),
    ("[^a]: [markdown]\n  k=1\n\nbody\n", {"k": 1}, "body"),  # a continuation line
    ("[^a]: [markdown] k=1\nbody\n", {"k": 1}, "body"),  # no blank line before the body
    ("[^a]: [markdown] k=1\n   \n\nbody\n", {"k": 1}, "\nbody"),  # a blank line of spaces
    ("[^a]:\n\nbody\n", {}, "body"),
])
def test_blank_line_between_heading_and_footnote_reads_like_none(footnote, attrs, body):
    spaced = reads("## %% Title[^a]\n\n" + footnote + "\n## %%% Reply[^a.1]\n\n"
                   "[^a.1]: [bot]\n\nhi\n")
    tight = reads("## %% Title[^a]\n" + footnote + "\n## %%% Reply[^a.1]\n"
                  "[^a.1]: [bot]\n\nhi\n")
    assert spaced == tight
    (cell,) = spaced["cells"]
    assert fmt.cell_attrs(cell) == attrs
    assert cell["source"] == body
    assert fmt.cell_title(cell) == "Title"
    assert fmt.output_text(cell["outputs"][0]) == "hi"


def test_seed_reply_with_bracketed_optional_reasoning():
    (cell,) = only(seed("002_reply.msg.md"))
    (out,) = cell["outputs"]
    assert fmt.output_kind(out) == "reply"
    assert fmt.output_attrs(out)["reasoning"] == 1
    assert out["metadata"][NS]["title"] == "[可选标题]"


def test_seed_tool_call_and_result_ids_follow_req010():
    (cell,) = only(seed("002_tool_call.msg.md"))
    kinds = [fmt.output_kind(o) for o in cell["outputs"]]
    assert kinds == ["reply", "tool_call", "tool_result"]
    assert [fmt.output_id(o) for o in cell["outputs"]] == [None, "id.nonce", "id.nonce.1"]
    assert fmt.output_attrs(cell["outputs"][1]) == {"name": "tool_name"}


def test_seed_code_output_stdout_and_stderr_lines_are_streams():
    (cell,) = only(seed("002_code_output.msg.md"))
    assert fmt.message_text(cell).startswith("import sys")
    assert cell["metadata"][NS]["pre"] == "先算一下。\n\n"
    assert cell["outputs"] == [
        {"output_type": "stream", "name": "stdout", "text": "标准输出内容\n"},
        {"output_type": "stream", "name": "stderr", "text": "标准错误内容\n"},
    ]
    attrs = fmt.output_attrs(cell["outputs"][0], cell)
    assert attrs["status"] == "success" and attrs["duration"] == "0.5s"


def test_seed_discussion_md_keeps_preamble_and_reads_messages_under_last_section():
    path = SEEDS / "002_discussion.md"
    text = path.read_text(encoding="utf-8")
    nb = reads(text, path=str(path))
    pre = nb["cells"][1]
    assert pre["cell_type"] == "markdown" and pre["metadata"][NS]["type"] == "preamble"
    assert "## %% Not a message" in pre["source"]
    assert pre["source"].endswith("# Discussion\n\n")
    (cell,) = only(nb)
    assert cell["source"] == "What do you think?"
    assert fmt.output_kind(cell["outputs"][0]) == "reply"
    assert writes(nb, path=str(path)) == text
    assert fmt.front_matter(nb) == {"title": "A design note", "messages": True}


def test_seed_raw_cell():
    (cell,) = only(seed("002_raw.msg.md"))
    assert cell["cell_type"] == "raw" and fmt.cell_kind(cell) == "raw"
    assert fmt.cell_attrs(cell) == {"history": "exclude"}


@pytest.mark.parametrize("name", sorted(p.name for p in SEEDS.iterdir()))
def test_seed_files_normalise_once_then_are_stable(name):
    path = SEEDS / name
    nb = reads(path.read_text(encoding="utf-8"), path=str(path))
    assert_valid(nb)
    once = writes(nb, path=str(path))
    again = reads(once, path=str(path))
    assert again == nb
    assert writes(again, path=str(path)) == once


# --------------------------------------------------------------------------- canonical files


@pytest.mark.parametrize("name", sorted(p.name for p in CANONICAL.iterdir()))
def test_canonical_files_round_trip_byte_identical(name):
    path = CANONICAL / name
    data = path.read_bytes()
    text = data.decode("utf-8")
    nb = reads(text, path=str(path))
    assert_valid(nb)
    assert writes(nb, path=str(path)).encode("utf-8") == data


# --------------------------------------------------------------------------- corpus


def _normalise_ipynb(nb: dict) -> dict:
    nb = json.loads(json.dumps(nb))
    nb["nbformat_minor"] = 5
    without_runner_notebook_keys(nb.setdefault("metadata", {}))  # not kept (runner.py)
    for i, cell in enumerate(nb["cells"]):
        cell.setdefault("id", f"cell-{i}")
        cell["metadata"] = dict(without_runner_cell_keys(cell.get("metadata") or {}))
        cell["source"] = "".join(cell["source"]) if isinstance(cell["source"], list) \
            else cell["source"]
        for att in (cell.get("attachments") or {}).values():
            for mime, value in att.items():
                if isinstance(value, list):
                    att[mime] = "".join(value)
        for out in cell.get("outputs", []):
            if isinstance(out.get("text"), list):
                out["text"] = "".join(out["text"])
            for mime, value in out.get("data", {}).items():
                if isinstance(value, list) and not mime.endswith("json"):
                    out["data"][mime] = "".join(value)
    return nb


def corpus_files() -> list[Path]:
    root = Path(os.environ.get("PERCENT_AGENT_SHARED",
                               ROOT.parent / "shared"))
    return sorted((root / "corpus" / "jupytext-ipynb").rglob("*.ipynb"))


def test_corpus_has_all_62_notebooks(shared_dir):
    assert len(list((shared_dir / "corpus" / "jupytext-ipynb").rglob("*.ipynb"))) == 62


@pytest.mark.parametrize("as_file", [None, "x.msg.py"], ids=["msg.md", "msg.py"])
@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.parent.name + "/" + p.name)
def test_corpus_notebook_text_notebook_exact(path, as_file, shared_dir):
    nb = _normalise_ipynb(json.loads(path.read_text(encoding="utf-8")))
    text = writes(nb, path=as_file)
    back = reads(text, path=as_file)
    assert back["metadata"] == nb["metadata"]
    assert len(back["cells"]) == len(nb["cells"])
    for before, after in zip(nb["cells"], back["cells"], strict=True):
        assert after == before
    assert_valid(back)
    assert writes(back, path=as_file) == text


# --------------------------------------------------------------------------- mapping


def test_no_kernelspec_gives_the_agent_kernel_and_is_not_written():
    nb = reads("# %% Hi[^a]\n[^a]: [markdown]\n\nhello\n")
    assert nb["metadata"] == {"kernelspec": {"name": "percent-agent", "display_name": "Agent",
                                             "language": "markdown"}}
    assert "jupyter" not in writes(nb)


def test_notebook_metadata_rides_in_front_matter_jupyter_key():
    nb = reads("# %%[^a]\n[^a]: [markdown]\n")
    nb["metadata"] = {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                     "language": "python"}, "custom": {"x": [1, 2]}}
    text = writes(nb)
    assert text.startswith("---\njupyter: {")
    assert reads(text)["metadata"] == nb["metadata"]


def test_yaml_style_jupyter_metadata_is_read():
    text = ("---\ntitle: x\njupyter:\n  kernelspec:\n    name: python3\n"
            "    display_name: Python 3\n    language: python\n---\n\n# %%[^a]\n[^a]: [markdown]\n")
    nb = reads(text)
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    assert nb["cells"][0]["source"] == "---\ntitle: x\n---"


def test_markdown_note_and_its_cell_type_key():
    nb = reads('# %% Note[^n]\n[^n]: [markdown] cell_type="markdown"\n\n*just a note*\n')
    (cell,) = nb["cells"]
    assert cell["cell_type"] == "markdown" and fmt.cell_kind(cell) == "note"
    assert "outputs" not in cell and cell["metadata"] == {NS: {"title": "Note"}}
    assert 'cell_type="markdown"' in writes(nb)


def test_invalid_footnote_id_kept_in_metadata():
    nb = reads("# %%[^q.3]\n[^q.3]: [markdown]\n\nhi\n")
    (cell,) = nb["cells"]
    assert cell["id"] != "q.3" and fmt.cell_id(cell) == "q.3"
    assert "[^q.3]" in writes(nb)
    assert_valid(nb)


def test_user_metadata_clashing_with_structural_names_round_trips():
    cell = fmt.new_message("x", attrs={"cell_type": "odd", "execution_count": "x", "a b": 1})
    cell["outputs"].append({"output_type": "display_data", "data": {"text/plain": "y"},
                            "metadata": {"mime_type": 3, "execution_count": None}})
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    back = reads(writes(nb))
    assert back["cells"][0] == cell and back["metadata"] == {}


def test_multi_mime_execute_result_and_widget_and_image():
    cell = fmt.new_message("df", cell_id="c1")
    cell["execution_count"] = 4
    cell["outputs"] = [
        {"output_type": "execute_result", "execution_count": 4, "metadata": {},
         "data": {"text/plain": "   a\n0  1", "text/html": "<table>\n```\n</table>"}},
        {"output_type": "display_data", "metadata": {"image/png": {"width": 10}},
         "data": {"image/png": "iVBORw0KGgo=\n"}},
        {"output_type": "display_data", "metadata": {},
         "data": {"application/vnd.jupyter.widget-view+json":
                  {"model_id": "abc", "version_major": 2, "version_minor": 0}}},
        {"output_type": "display_data", "metadata": {}, "data": {"text/plain": "shown"}},
        {"output_type": "error", "ename": "E", "evalue": "v",
         "traceback": ["\x1b[31mline\none\x1b[0m", "two"]},
    ]
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    text = writes(nb)
    assert 'mime_type="image/png"' in text and "execution_count=4" in text
    back = reads(text)
    assert back["cells"][0] == cell
    assert_valid(back)


def test_streams_without_final_newline_and_split_blocks_round_trip():
    cell = fmt.new_message("run", cell_id="r")
    cell["outputs"] = [
        {"output_type": "stream", "name": "stdout", "text": "a\n"},
        {"output_type": "stream", "name": "stdout", "text": "b\r50%\r100%\n"},
        {"output_type": "stream", "name": "stderr", "text": ""},
        {"output_type": "stream", "name": "stdout", "text": "no newline"},
        {"output_type": "stream", "name": "stderr", "text": "\n\n"},
    ]
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    back = reads(writes(nb))
    assert back["cells"][0]["outputs"] == cell["outputs"]


def test_stream_output_attrs_given_in_memory_are_written_and_read_back_in_cell():
    cell = fmt.new_message("run", cell_id="r")
    cell["outputs"] = [fmt.stream_output("stdout", "hi\n", out_id="r.7",
                                         attrs={"status": "success"})]
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    text = writes(nb)
    assert '[^r.7]: [python] status="success"' in text
    back = reads(text)
    out = back["cells"][0]["outputs"][0]
    assert out == {"output_type": "stream", "name": "stdout", "text": "hi\n"}
    assert fmt.output_attrs(out, back["cells"][0]) == {"status": "success"}
    assert_valid(back)


def test_code_cell_fence_and_reasoning_text_round_trip():
    text = ("# %% Sum[^s]\n[^s]: [code] execution_count=2\n\nI will add.\n\n"
            "~~~~R\nx <- 1 + 1\n```\n~~~~\n\nDone.\n")
    nb = reads(text)
    (cell,) = nb["cells"]
    assert cell["source"] == "x <- 1 + 1\n```"
    assert cell["metadata"][NS]["lang"] == "R"
    assert writes(nb) == text


def test_heading_like_body_lines_are_escaped_outside_fences_only():
    src = "# %% looks like a heading\n\\## %%% already escaped\n```\n# %% in fence\n```"
    nb = {"cells": [fmt.new_message(src, cell_id="a")], "metadata": {}, "nbformat": 4,
          "nbformat_minor": 5}
    text = writes(nb)
    assert "\n\\# %% looks like a heading\n" in text
    assert "\n\\\\## %%% already escaped\n" in text
    assert "\n# %% in fence\n" in text
    assert reads(text)["cells"][0]["source"] == src


def test_unclosed_fence_in_a_source_is_closed_and_reopened():
    src = "```python\nx = 1\n# %% still code"
    cells = [fmt.new_message(src, cell_id="a"), fmt.new_message("next", cell_id="b")]
    nb = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    back = reads(writes(nb))
    assert [c["source"] for c in back["cells"]] == [src, "next"]


def test_unicode_line_separators_survive():
    seps = "\r\f\v\x1c\x1d\x1e\x85\u2028\u2029"
    src = "a" + "b".join(seps) + "# %% x" + "\u2028# %% y"
    cell = fmt.new_message(src, cell_id="a", attrs={"k": "v" + seps}, title="t\u2028t")
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    back = reads(writes(nb))
    assert back["cells"][0] == cell


def test_jupytext_percent_style_heading_is_read():
    nb = reads('# %% Setup [markdown] history="exclude"\nhello\n\n# %% [raw]\nverbatim\n')
    a, b = nb["cells"]
    assert a["cell_type"] == "code" and fmt.cell_attrs(a) == {"history": "exclude"}
    assert a["metadata"][NS]["title"] == "Setup" and a["source"] == "hello"
    assert b["cell_type"] == "raw" and b["source"] == "verbatim"


def test_title_with_brackets_that_is_not_a_type_stays_a_title():
    nb = reads("# %% Compare [draft]\nhello\n")
    assert nb["cells"][0]["metadata"][NS]["title"] == "Compare [draft]"


def test_text_before_first_heading_is_a_preamble_kept_verbatim():
    text = "Intro line\n\n  indented\n\n# %%[^a]\n[^a]: [markdown]\n\nhi\n"
    nb = reads(text, path="x.msg.md")
    assert nb["cells"][0]["source"] == "Intro line\n\n  indented\n\n"
    assert writes(nb) == text


def test_plain_md_without_section_yet_is_all_preamble_and_gains_section_on_write():
    text = "---\nmessages: true\n---\n# Notes\n\nbody\n"
    nb = reads(text, path="notes.md")
    assert writes(nb, path="notes.md") == text
    nb["cells"].append(fmt.new_message("first question", cell_id="q1"))
    out = writes(nb, path="notes.md")
    assert out.startswith(text) and "\n# Discussion\n\n# %%[^q1]" in out
    again = reads(out, path="notes.md")
    assert [c["source"] for c in only(again)] == ["first question"]


def test_message_section_title_from_front_matter_and_last_heading_wins():
    text = ("---\nmessage_section: Chat\n---\n## Chat\n\nold\n\n# %% not yet[^x]\n\n"
            "## Chat\n\n# %%[^a]\n[^a]: [markdown]\n\nhi\n\n# %%[^b]\n[^b]: [markdown]\n\n"
            "\\## Chat\n")
    nb = reads(text, path="doc.md")
    assert [c["source"] for c in only(nb)] == ["hi", "## Chat"]
    assert "# %% not yet" in nb["cells"][1]["source"]
    assert writes(nb, path="doc.md") == text


def test_crlf_file_is_read_and_written_back_with_crlf():
    text = "# %% A[^a]\r\n[^a]: [markdown]\r\n\r\nline one\r\nline two\r\n"
    nb = reads(text)
    assert nb["cells"][0]["source"] == "line one\nline two"
    assert writes(nb) == text


@pytest.mark.parametrize("text", ["\r\n", "\r\n\r\n  \r\n"])
def test_a_crlf_text_with_nothing_in_it_reads_as_what_it_writes(text):
    nb = reads(text)
    assert nb["cells"] == [] and writes(nb) == ""
    assert reads(writes(nb)) == nb


def test_model_helpers_build_valid_outputs_that_round_trip():
    cell = fmt.new_message("What is 2+2?", attrs={"history": "include"}, title="Maths")
    cid = fmt.cell_id(cell)
    cell["outputs"] = [
        fmt.reply_output("Let me check.", agent="planner", out_id=f"{cid}.1",
                         attrs={"reasoning": 1, "model": "m", "tokens_in": 3, "cost": 0.01}),
        fmt.tool_call_output("calc", "__result__ = 2 + 2", out_id=f"{cid}.n0nce"),
        fmt.tool_result_output("4", out_id=f"{cid}.n0nce.1", status="success",
                               attrs={"duration": 0.01}),
        fmt.reply_output("4", agent="planner", out_id=f"{cid}.2"),
        fmt.error_output("ValueError", "bad", ["Traceback", "ValueError: bad"]),
    ]
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    text = writes(nb)
    assert f"[^{cid}.n0nce]: [tool] name=\"calc\"" in text
    back = reads(text)
    (got,) = back["cells"]
    assert [fmt.output_kind(o) for o in got["outputs"]] == [
        "reply", "tool_call", "tool_result", "reply", "error"]
    assert fmt.output_attrs(got["outputs"][0]) == {
        "agent": "planner", "reasoning": 1, "model": "m", "tokens_in": 3, "cost": 0.01}
    assert fmt.output_text(got["outputs"][2]) == "4"
    # ids equal to the default ID.n are implied by position, not stored
    assert [fmt.output_id(o) for o in got["outputs"]] == [
        None, f"{cid}.n0nce", f"{cid}.n0nce.1", f"{cid}.2", None]
    assert writes(back) == text
    assert got["source"] == cell["source"] and got["metadata"] == cell["metadata"]
    assert_valid(back)


def test_set_front_matter_keeps_the_rest_as_written():
    text = "---\n# a comment\nagents:\n  x:\n    models: [m]\ndefault_agent: x\n---\n"
    nb = reads(text)
    fmt.set_front_matter(nb, "default_agent", "y")
    fmt.set_front_matter(nb, "new_key", [1, 2])
    src = nb["cells"][0]["source"]
    assert src.startswith("---\n# a comment\nagents:\n  x:\n    models: [m]\n")
    assert fmt.front_matter(nb) == {"agents": {"x": {"models": ["m"]}}, "default_agent": "y",
                                    "new_key": [1, 2]}
    empty = reads("")
    fmt.set_front_matter(empty, "default_agent", "z")
    assert fmt.front_matter(reads(writes(empty))) == {"default_agent": "z"}


def test_read_and_write_are_atomic_and_keep_file_mode(tmp_path):
    path = tmp_path / "chat.msg.md"
    path.write_text("# %%[^a]\n[^a]: [markdown]\n\nhi\n")
    os.chmod(path, 0o640)
    nb = fmt.read(path)
    nb["cells"][0]["source"] = "changed"
    fmt.write(nb, path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert fmt.read(path)["cells"][0]["source"] == "changed"
    assert [p.name for p in tmp_path.iterdir()] == ["chat.msg.md"]


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("[^a]: [markdown] x=1\n\nhello\n", 1, "no cell heading"),
        ("# %%[^a]\n[^a]: [bogus]\n", 2, "unknown cell type"),
        ('# %%[^a]\n[^a]: [markdown] x="unterminated\n', 2, "badly quoted"),
        ("# %%[^a]\n[^a]: [markdown] x='open\n", 2, "unterminated"),
        ('# %%[^a]\n[^a]: [markdown] x="a"b\n', 2, "badly quoted"),
        ("# %%[^a]\n[^a]: [markdown]\n\n```\ncode\n\n# %%[^b]\n[^b]: [markdown]\n", 4,
         "unclosed fence"),
        ("# %%%[^a]\n[^a]: [output]\n\nhi\n", 1, "before any message"),
        # a heading with nothing after its marker, hidden by a fence nothing closes
        ("# %%[^a]\n[^a]: [markdown]\n\n```\n##### %%\nmore\n", 4, "unclosed fence"),
        ("# %%[^a]\n[^a]: [markdown]\n\n# %%[^a]\n[^a]: [markdown]\n", 4, "duplicate id"),
        ("# %%[^a]\n[^b]: [markdown]\n", 2, "does not match"),
        ("# %%[^a]\n[^a]: [markdown] execution_count=\"x\"\n", 1, "execution_count"),
    ],
)
@pytest.mark.parametrize("name", ["bad.msg.md", "bad.msg.py"])
def test_bad_input_raises_format_error_naming_the_line(text, line, words, name):
    if name.endswith(".py"):
        text = as_script(text)
        if words == "no cell heading":  # a script's head (before its first cell) is its own
            assert reads(text, path=name)["cells"][0]["source"] == text
            return
    with pytest.raises(FormatError) as info:
        reads(text, path=name)
    assert info.value.line == line
    assert info.value.path == name
    assert words in str(info.value) and f"{name}:{line}:" in str(info.value)


def as_script(text: str) -> str:
    """``text`` (a ``.msg.md``) as a script message file writes it: every line behind ``# ``
    but a heading (its ``#`` is the comment marker) and a blank line."""
    return "\n".join(line if not line or re.match(r"#{1,5} %%", line) else "# " + line
                     for line in text.split("\n"))


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("# %%[^a]\n[^a]: [weirdtype]\n\nhello\n", 2),  # canonical
        ("# %% Title[^a]\n\n[^a]: [weirdtype] x=1\n", 3),  # a blank line between (seed 002)
        ("# %%\n[^a]: [weirdtype]\n", 2),  # a heading without a reference
        ("---\nk: v\n---\n\n# %%[^z]\n[^z]: [markdown]\n\n# %%[^a]\n[^a]: [weirdtype]\n", 9),
    ],
)
def test_unknown_cell_type_error_names_the_footnote_line(text, line):
    with pytest.raises(FormatError) as info:
        reads(text, path="bad5.msg.md")
    assert info.value.line == line
    assert str(info.value).startswith(f"bad5.msg.md:{line}: unknown cell type [weirdtype]")


def test_discussion_file_without_its_section_reads_as_document_without_messages():
    text = "---\nmessage_section: Discussion\n---\n# Doc\n\n# %% not a message\n"
    nb = reads(text, path="doc.md")
    assert only(nb) == []
    assert writes(nb, path="doc.md") == text


def test_unclosed_fence_at_end_hiding_no_heading_is_body():
    nb = reads("# %%[^a]\n[^a]: [markdown]\n\n```\nunfinished\n")
    assert nb["cells"][0]["source"] == "```\nunfinished"


# --------------------------------------------------------------------------- import weight


# --------------------------------------------------------------------------- docs


def test_docs_stand_on_their_own_without_links_outside_the_repo():
    root = ROOT
    for name in ("docs/internal-api.md", "docs/format.md"):
        text = (root / name).read_text(encoding="utf-8")
        assert "../shared/" not in text, name
        assert "(issue " not in text, name


def test_the_writer_orders_attributes_as_docs_format_md_lists_them():
    """The order docs/format.md ("Canonical form") gives for the attributes the format knows
    is the order the writer puts them in, then every other key sorted."""
    import re

    text = (ROOT / "docs" / "format.md").read_text(encoding="utf-8")
    listed = text[text.index("2. the attributes the format knows"):]
    listed = listed[: listed.index("3. every other key")]
    known = re.findall(r"`([a-z_]+)`", listed)
    assert len(known) > 30 and len(set(known)) == len(known)
    attrs = {key: 1 for key in [*reversed(known), "zz", "aa"]}
    cell = fmt.new_message("Hi", cell_id="a", attrs=attrs)
    written = writes({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    footnote = next(line for line in written.split("\n") if line.startswith("[^a]:"))
    assert re.findall(r" ([a-z_]+)=", footnote) == [*known, "aa", "zz"]


# --------------------------------------------------------------------------- argument types


def test_reads_accepts_utf8_bytes_as_read_does():
    text = "# %% Caf\u00e9[^a]\n[^a]: [markdown]\n\nh\u00e9llo\r\n"
    assert reads(text.encode("utf-8"), path="x.msg.md") == reads(text, path="x.msg.md")
    assert reads(bytearray(text.encode("utf-8"))) == reads(text)


def test_reads_of_neither_str_nor_bytes_is_a_clear_type_error():
    with pytest.raises(TypeError, match=r"reads\(\) takes the text as str .*not int"):
        reads(3)
    with pytest.raises(UnicodeDecodeError):
        reads(b"# %% \xff\n")


def test_cells_trusted_flag_is_neither_written_nor_read():
    nb = reads("# %%[^a]\n[^a]: [markdown] history=\"include\"\n\nhi\n")
    text = writes(nb)
    nb["cells"][0]["metadata"]["trusted"] = True
    assert writes(nb) == text
    assert nb["cells"][0]["metadata"]["trusted"] is True  # the caller's notebook is untouched
    leaked = reads("# %%[^a]\n[^a]: [markdown] history=\"include\" trusted=true\n\nhi\n")
    assert leaked["cells"][0]["metadata"] == {"history": "include"}
    raw = reads("# %%[^r]\n[^r]: [raw] trusted=false\n\nx\n")
    assert raw["cells"][0]["metadata"] == {}


# --------------------------------------------------------------------------- other notebooks

NOTEBOOKS = TEST_DATA / "format" / "notebooks"


@pytest.mark.parametrize("name", ["stdin_stream.ipynb", "future_types.ipynb",
                                  "later_minor_keys.ipynb"])
def test_notebooks_from_jupyterlab_and_later_nbformats_round_trip_exactly(name):
    """What JupyterLab records for input() (a "stdin" stream) and what a later nbformat may
    hold (nbformat_minor 6, a "future cell" with no source, a "future output"; nbformat_minor
    7 with keys 4.5 does not know on the notebook, its cells and every kind of output)."""
    nb = json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))
    expected = _normalise_ipynb({**nb, "cells": [c for c in nb["cells"] if "source" in c]})
    expected["nbformat_minor"] = nb["nbformat_minor"]
    expected["cells"] = [_normalise_ipynb({"cells": [c]})["cells"][0] if "source" in c else c
                         for c in nb["cells"]]
    text = writes(expected)
    back = reads(text)
    assert back == expected
    assert writes(back) == text
    assert_valid(back)


def test_a_stdin_stream_is_written_with_its_own_prefix():
    nb = json.loads((NOTEBOOKS / "stdin_stream.ipynb").read_text(encoding="utf-8"))
    text = writes(_normalise_ipynb(nb))
    assert "stdout> Welcome to the bank.\nstdin> Enter your 4-digit PIN:  1234\n" in text
    assert "stdin> first?  a\n\n## %%%" in text  # two stdin streams: two blocks


def test_a_stream_of_any_other_name_keeps_its_name_and_text():
    cell = {"cell_type": "code", "id": "a", "metadata": {}, "source": "x", "execution_count": None,
            "outputs": [{"output_type": "stream", "name": "stdout", "text": "one\n"},
                        {"output_type": "stream", "name": "log", "text": "```\n# %% not a cell\n"},
                        {"output_type": "stream", "name": "stdout", "text": "two"}]}
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell]}
    text = writes(nb)
    assert 'stream="log"' in text
    assert reads(text) == nb


def test_a_cell_of_a_future_type_is_never_a_message():
    nb = json.loads((NOTEBOOKS / "future_types.ipynb").read_text(encoding="utf-8"))
    back = reads(writes(nb))
    assert [fmt.cell_kind(c) for c in back["cells"]] == ["note", "message", "raw", "raw"]


# --------------------------------------------------------------------------- unencodable text

LONE = "\ud800"
PAIR = "\ud83d\ude00"  # the two halves of 😀, as a JSON decoder hands them over


def _reply_nb(text: str) -> dict:
    cell = fmt.new_message("Say something", cell_id="q")
    cell["outputs"].append({"output_type": "display_data", "data": {"text/markdown": text},
                            "metadata": {NS: {"type": "planner"}, "model": f"m{LONE}"}})
    cell["outputs"].append({"output_type": "stream", "name": "stdout", "text": f"{chr(55296)}\n"})
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell]}


def test_writes_never_fails_on_lone_surrogates_and_joins_pairs():
    text = writes(_reply_nb(f"before {LONE} middle {PAIR} after"))
    text.encode("utf-8")  # no UnicodeEncodeError
    assert "before \\ud800 middle \U0001f600 after" in text
    assert "stdout> \\ud800" in text
    back = reads(text)
    assert fmt.output_text(back["cells"][0]["outputs"][0]) == "before \\ud800 middle 😀 after"
    assert writes(back) == text


def test_write_keeps_the_reply_and_every_step(tmp_path):
    path = tmp_path / "s.msg.md"
    fmt.write(_reply_nb(f"tool said {LONE}"), path)
    back = fmt.read(path)
    outputs = back["cells"][0]["outputs"]
    assert fmt.output_text(outputs[0]) == "tool said \\ud800"
    assert fmt.output_text(outputs[1]) == "\\ud800\n"


def test_output_constructors_escape_lone_surrogates():
    made = [
        fmt.new_message(f"q{LONE}", attrs={"note": LONE}, title=f"t{LONE}"),
        fmt.reply_output(f"r{LONE}{PAIR}", agent="a", out_id="q.1", attrs={"model": LONE}),
        fmt.tool_call_output(f"n{LONE}", f"c{LONE}", out_id="q.k"),
        fmt.tool_result_output(f"x{LONE}", out_id="q.k.1", status="success"),
        fmt.stream_output("stdout", f"s{LONE}", attrs={"x": [LONE]}),
        fmt.error_output(f"E{LONE}", f"v{LONE}", [f"tb{LONE}"]),
    ]
    for obj in made:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")  # no UnicodeEncodeError
    assert fmt.output_text(made[1]) == "r\\ud800😀"
    assert fmt.escape_surrogates(f"a{LONE}b") == "a\\ud800b"
    assert fmt.escape_surrogates("plain") == "plain"


# --------------------------------------------------------------------------- where messages are


@pytest.mark.parametrize(
    ("front", "section"),
    [
        ("message_section: Talk", "Talk"),
        ("message_section: 'It''s ours'", "It's ours"),
        ('message_section: "Chat # 2"', "Chat # 2"),
        ("message_section: Chat # a comment", "Chat"),
        ("message_section:", "Discussion"),
        ("message_section: ~", "Discussion"),
        ("messages: true", "Discussion"),
        ("messages: Yes", "Discussion"),
        ("messages: ON # yes", "Discussion"),
        ("messages: false", None),
        ("messages: no", None),
        ('messages: "true"', None),  # a string, not a boolean
        ("messages: 1", None),
        ("message_section: Talk\nmessages: false", None),  # false wins
        ("messages: false\nmessage_section: Talk", None),
        ("messages: true\nmessage_section: Talk", "Talk"),
        ("notes:\n  messages: true", None),  # not a top-level key
        ("title: messages: true", None),
        ("agents: {}", None),
        ("", None),
    ],
)
def test_message_section_is_the_one_detector(front, section):
    text = f"---\n{front}\n---\n\n# Notes\n"
    assert fmt.message_section(text) == section
    assert fmt.message_section(text.replace("\n", "\r\n")) == section
    assert fmt.message_section(f"---\n{front}\n---\n") == section  # the front matter alone
    # and YAML agrees with it (where it is YAML)
    try:
        data = fmt.load_yaml(front) or {}
    except FormatError:
        return
    said = data.get("messages") if isinstance(data.get("messages"), bool) else None
    if said is False:
        assert section is None
    elif "message_section" in data:
        assert section == (data["message_section"] or "Discussion")
    else:
        assert section == ("Discussion" if said else None)


def test_no_front_matter_names_no_section():
    assert fmt.message_section("# Notes\n\nmessages: true\n") is None
    assert fmt.message_section("---\nmessages: true\n") is None  # never closed


def test_messages_false_means_the_whole_file_is_its_document():
    text = "---\nmessages: false\n---\n# Notes\n\n# %% not a message[^a]\n[^a]: [markdown]\n\nx\n"
    for path in ("notes.md", None):
        nb = reads(text, path=path)
        assert only(nb) == []
        assert writes(nb, path=path) == text
        nb["cells"].append(fmt.new_message("hello", cell_id="m1"))
        with pytest.raises(FormatError, match="messages: false"):
            writes(nb, path=path)
    # a NAME.msg.md is all messages, whatever its front matter says
    assert len(only(reads(text, path="notes.msg.md"))) == 1


def test_tce_chat_never_writes_a_message_into_a_messages_false_file(tmp_path, monkeypatch):
    """The symptom of three disagreeing detectors: tce chat put a message into the prose of a
    file whose front matter says messages: false. The core refuses the write; the file stays."""
    from click.testing import CliRunner

    from jupyter_percent_agent.cli import main

    monkeypatch.setenv("PERCENT_AGENT_API_BASE", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("PERCENT_AGENT_MODEL", "test-model")
    path = tmp_path / "notes.md"
    text = "---\nmessages: false\n---\n\n# Notes\n\nSome prose.\n"
    path.write_text(text)
    result = CliRunner().invoke(main, ["chat", str(path), "-m", "hello"])
    assert result.exit_code in (2, 3), result.output  # 2 once tce asks the one detector first
    assert "messages: false" in result.output or "--force" in result.output
    assert path.read_text() == text


# --------------------------------------------------------------------------- one byte form

def _conversation_of_every_kind() -> dict:
    """A conversation as the front ends build it: replies, a tool call and its result, a
    code cell with streams and an error carrying attributes, keys that clash with structure,
    an id that is not a valid nbformat id."""
    ask = fmt.new_message("Which plan costs less?", cell_id="q1",
                          attrs={"agent": "planner", "history": "include", "zeta": 1,
                                 "alpha": [1, {"b": 2, "a": 1}]}, title="Plans")
    ask["outputs"] = [
        fmt.reply_output("Let me count.", agent="planner", out_id="q1.1",
                         attrs={"model": "m", "time": "2026-01-01T00:00:00Z", "duration": 1.5,
                                "tokens_in": 10, "tokens_out": 5, "cost": 0.25,
                                "reasoning": 1}),
        fmt.tool_call_output("count", "__result__ = count()", out_id="q1.k1",
                             attrs={"target": "x"}),
        fmt.tool_result_output("12", out_id="q1.k1.1", status="success",
                               attrs={"duration": 0.5, "error": "none"}),
        fmt.reply_output("Plan B.", agent="planner", out_id="q1.2",
                         attrs={"time": "2026-01-01T00:00:01Z", "model": "m", "status": "ok"}),
    ]
    code = fmt.new_message("print(1)", cell_id="c1", kind="code",
                           attrs={"language": "python", "execution_count": 3, "cell_type": "x"})
    code["execution_count"] = 3
    code["outputs"] = [
        fmt.stream_output("stdout", "1\n", out_id="c1.1",
                          attrs={"status": "success", "duration": 0.1}),
        fmt.error_output("KeyError", "'b'", ["Traceback", "KeyError: 'b'"], out_id="c1.2",
                         attrs={"then": "retry", "agent": "a"}),
    ]
    odd = fmt.new_message("An odd id.", cell_id="plan/b", attrs={"b": 1, "a": 2})
    return {"cells": [ask, code, odd], "metadata": {"kernelspec": fmt.DEFAULT_KERNELSPEC},
            "nbformat": 4, "nbformat_minor": 5}


def _every_notebook(shared_dir: Path) -> list[tuple[str, dict, str | None]]:
    found = [("every kind", _conversation_of_every_kind(), None)]
    for folder in (SEEDS, CANONICAL):
        for path in sorted(folder.iterdir()):
            found.append((path.name, reads(path.read_text(encoding="utf-8"), path=str(path)),
                          str(path)))
    for path in corpus_files():
        found.append((path.name, _normalise_ipynb(json.loads(path.read_text(encoding="utf-8"))),
                      None))
    return found


def test_the_order_a_metadata_dict_holds_never_changes_the_bytes(shared_dir, reordered):
    import random

    shuffle = random.Random(24)
    orders = {"reversed": lambda keys: keys[::-1],
              "shuffled": lambda keys: shuffle.sample(keys, len(keys))}
    notebooks = _every_notebook(shared_dir)
    assert len(notebooks) > 80
    for name, nb, path in notebooks:
        text = writes(nb, path=path)
        for how, order in orders.items():
            assert writes(reordered(nb, order), path=path) == text, (name, how)


def test_footnote_attributes_are_written_in_the_documented_order():
    text = writes(_conversation_of_every_kind())
    assert writes(reads(text)) == text
    footnotes = [line for line in text.split("\n") if line.startswith("[^")]
    assert footnotes == [
        '[^q1]: [markdown] history="include" agent="planner" alpha=[1,{"b":2,"a":1}] zeta=1',
        '[^q1.1]: [planner] time="2026-01-01T00:00:00Z" reasoning=1 model="m" tokens_in=10'
        ' tokens_out=5 cost=0.25 duration=1.5',
        '[^q1.k1]: [tool] name="count" target="x"',
        '[^q1.k1.1]: [tool] status="success" error="none" duration=0.5',
        '[^q1.2]: [planner] time="2026-01-01T00:00:01Z" model="m" status="ok"',
        '[^c1]: [code] execution_count=3 language="python"'
        ' percent_agent={"meta":{"cell_type":"x","execution_count":3}}',
        '[^c1.1]: [python] status="success" duration=0.1',
        '[^c1.2]: [error] ename="KeyError" evalue="\'b\'" agent="a" then="retry"',
        '[^plan/b]: [markdown] a=2 b=1',
    ]


def test_a_file_saved_in_another_order_changes_once_in_its_footnotes_only():
    before = ("# %% Ask[^q]\n[^q]: [markdown] agent=\"planner\" history=\"summary\"\n\n"
              "Which plan?\n\n"
              "## %%%[^q.1]\n[^q.1]: [planner] model=\"m\" time=\"2026-01-01T00:00:00Z\""
              " duration=1.5 tokens_in=10 tokens_out=5 cost=0.25 zz=1 aa=2\n\nPlan B.\n")
    after = ("# %% Ask[^q]\n[^q]: [markdown] history=\"summary\" agent=\"planner\"\n\n"
             "Which plan?\n\n"
             "## %%%[^q.1]\n[^q.1]: [planner] time=\"2026-01-01T00:00:00Z\" model=\"m\""
             " tokens_in=10 tokens_out=5 cost=0.25 duration=1.5 aa=2 zz=1\n\nPlan B.\n")
    once = writes(reads(before))
    assert once == after
    assert writes(reads(once)) == once
    assert reads(once) == reads(before)  # the same notebook: only the bytes moved


def test_a_stream_or_error_given_an_id_and_attributes_keeps_nothing_else():
    """The [code] cells' outputs: stream_output/error_output with out_id and attrs. Their
    side entry is not a field of a later nbformat: no empty percent_agent={"fields":{}}."""
    code = fmt.new_message("print(1)", cell_id="c1", kind="code")
    code["outputs"] = [fmt.stream_output("stdout", "1\n", out_id="c1.1",
                                         attrs={"status": "success"}),
                       fmt.error_output("E", "x", [], out_id="c1.2", attrs={"then": "t"})]
    text = writes({"cells": [code], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    assert "percent_agent" not in text
    assert '[^c1.1]: [python] status="success"\n' in text
    assert writes(reads(text)) == text


def test_a_bare_number_longer_than_python_converts_is_kept_as_text():
    """Python refuses to convert an integer of more than 4300 digits: a received file holding
    one read as a traceback in tce; it is a string value, kept whole."""
    digits = "9" * 5000
    nb = reads(f"# %% a[^a]\n[^a]: [markdown] x={digits} y=-{digits}\n\nhi\n")
    attrs = fmt.cell_attrs(nb["cells"][0])
    assert attrs["x"] == digits and attrs["y"] == "-" + digits
    assert reads(writes(nb))["cells"][0] == nb["cells"][0]


def test_a_made_up_id_never_repeats_one_an_output_was_written_with():
    """Two cells with one id: the second gets a new one, which must not be the id of an output
    written above it (the reader refuses a file with a footnote id twice)."""
    first = fmt.new_message("hello", cell_id="a")
    first["outputs"] = [fmt.reply_output("hi", agent="bot", out_id="b-2")]
    nb = {"cells": [first, fmt.new_message("one", cell_id="b"),
                    fmt.new_message("two", cell_id="b")],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    back = fmt.reads(fmt.writes(nb))
    ids = [c["id"] for c in back["cells"]]
    assert ids[:2] == ["a", "b"] and ids[2] not in {"a", "b", "b-2"}
    assert [c["source"] for c in back["cells"]] == ["hello", "one", "two"]
    assert back["cells"][0]["outputs"][0]["metadata"][fmt.NS].get("id", "b-2") == "b-2"
