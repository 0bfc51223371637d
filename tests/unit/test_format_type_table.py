"""The ``[type]`` table of the format (``format/record.py``) drives the reader and the writer.

Each row of the output table is read and written through the real ``reads``/``writes``: the
heading a row names reads as the output type and body MIME type the row says, the writer gives
that output back the same heading (with ``mime_type=`` only when the row's MIME type is not
the body's), and both directions agree, so a row added to the table works both ways.
"""

from __future__ import annotations

import copy

import pytest

from jupyter_percent_agent.format import NS, reads, writes
from jupyter_percent_agent.format import record as table
from jupyter_percent_agent.format.attrs import parse_meta
from jupyter_percent_agent.format.record import (
    CELL_TYPE_OF,
    CODE_OUTPUT,
    OUTPUT_KINDS,
    OUTPUT_OF_TYPE,
    REPLY_OUTPUT,
    TYPE_OF_CELL,
    OutputOf,
    output_of,
)

HEAD = "# %%[^c]\n[^c]: [markdown]\n\nhi\n"
LANG = "python"  # the language the default kernelspec's outputs are labelled with


def _rows() -> list:
    """(type, sub, row): every row of the table, a language and an agent's name."""
    rows = [(key.partition(":")[0], key.partition(":")[2] or None, row)
            for key, row in OUTPUT_OF_TYPE.items()]
    rows += [(LANG, None, CODE_OUTPUT), ("planner", None, REPLY_OUTPUT)]
    return [pytest.param(typ, sub, row, id=typ + (":" + sub if sub else ""))
            for typ, sub, row in rows]


ROWS = _rows()
DATA_ROWS = [param for param in ROWS if param.values[2].output_type != "error"]


def _heading(typ: str, sub: str | None) -> str:
    return "[" + typ + (":" + sub if sub else "") + "]"


def _output_text(typ: str, sub: str | None, attrs: str, body: str) -> str:
    meta = " ".join(part for part in (_heading(typ, sub), attrs) if part)
    return f"{HEAD}\n## %%%[^c.1]\n[^c.1]: {meta}\n\n{body}\n"


def _footnote(text: str, ref: str) -> tuple:
    """(type, sub, link, attributes) of the footnote ``[^ref]:`` of ``text``."""
    line = next(ln for ln in text.split("\n") if ln.startswith(f"[^{ref}]: "))
    return parse_meta(line.split(": ", 1)[1])


def _notebook_with(output: dict) -> dict:
    nb = reads(HEAD)
    nb["cells"][0]["outputs"] = [output]
    return nb


@pytest.mark.parametrize(("typ", "sub", "row"), ROWS)
def test_a_heading_reads_as_its_rows_output_and_writes_back_byte_for_byte(typ, sub, row):
    body = "stdout> x\nstderr> y" if row.output_type == "stream" else "x"
    attrs = 'ename="E" evalue="v"' if row.output_type == "error" else ""
    text = _output_text(typ, sub, attrs, body)
    outputs = reads(text)["cells"][0]["outputs"]
    assert {out["output_type"] for out in outputs} == {row.output_type}
    if row.output_type == "display_data":
        assert list(outputs[0]["data"]) == [row.mime]
    written = writes(reads(text))
    assert _footnote(written, "c.1")[:2] == (typ, sub)
    assert writes(reads(written)) == written
    assert reads(written) == reads(text)


@pytest.mark.parametrize(("typ", "sub", "row"), DATA_ROWS)
@pytest.mark.parametrize("mime", ["text/plain", "text/markdown", "text/html"])
@pytest.mark.parametrize("result", [False, True], ids=["display_data", "execute_result"])
def test_display_data_of_every_row_round_trips_and_names_a_mime_type_only_when_needed(
        typ, sub, row, mime, result):
    ns = {"type": typ} if typ != LANG else {}
    if sub:
        ns["sub"] = sub
    output = {"output_type": "display_data", "data": {mime: "x"},
              "metadata": {NS: ns} if ns else {}}
    if result:
        output = {**output, "output_type": "execute_result", "execution_count": 3}
    nb = _notebook_with(output)
    text = writes(copy.deepcopy(nb))
    _typ, _sub, _link, attrs = _footnote(text, "c.1")
    assert (_typ, _sub) == (typ, sub)
    # the writer leaves out mime_type= exactly where the reader's row supplies it
    reads_as_stream = row.output_type == "stream" and not result
    assert ("mime_type" in attrs) == (reads_as_stream or mime != row.mime)
    assert reads(text) == nb


@pytest.mark.parametrize("kind", sorted(OUTPUT_KINDS))
def test_every_output_type_is_written_with_its_own_attributes_and_read_with_its_fields(kind):
    full = {
        "stream": {"output_type": "stream", "name": "stdout", "text": "x"},
        "display_data": {"output_type": "display_data", "data": {"text/html": "<b>x</b>"},
                         "metadata": {}},
        "execute_result": {"output_type": "execute_result", "data": {"text/html": "<b>x</b>"},
                           "metadata": {}, "execution_count": 3},
        "error": {"output_type": "error", "ename": "E", "evalue": "v",
                  "traceback": ["a\nb", "c"]},
    }[kind]
    assert full.keys() == OUTPUT_KINDS[kind].fields
    nb = _notebook_with(full)
    text = writes(copy.deepcopy(nb))
    typ, _sub, _link, attrs = _footnote(text, "c.1")
    assert typ == (OUTPUT_KINDS[kind].type or LANG)
    assert attrs and list(attrs) == [a for a in OUTPUT_KINDS[kind].attrs if a in attrs]
    back = reads(text)
    assert back == nb
    assert back["cells"][0]["outputs"][0].keys() == OUTPUT_KINDS[kind].fields


def test_a_row_added_to_the_table_is_read_and_written_by_it(monkeypatch):
    """Adding an output kind is one row: a ``[diagram]`` of Mermaid text, in both directions."""
    monkeypatch.setitem(OUTPUT_OF_TYPE, "diagram", OutputOf("display_data", "text/vnd.mermaid"))
    text = _output_text("diagram", None, "", "graph TD; A-->B")
    nb = reads(text)
    assert nb["cells"][0]["outputs"][0]["data"] == {"text/vnd.mermaid": "graph TD; A-->B"}
    assert writes(copy.deepcopy(nb)) == text  # no mime_type=: the row says it
    monkeypatch.delitem(OUTPUT_OF_TYPE, "diagram")  # without the row, an agent's reply:
    assert reads(text)["cells"][0]["outputs"][0]["data"] == {"text/markdown": "graph TD; A-->B"}
    assert _footnote(writes(nb), "c.1")[3] == {"mime_type": "text/vnd.mermaid"}


def test_output_of_puts_error_before_a_language_and_type_sub_before_type():
    assert output_of("error", None, True) is OUTPUT_OF_TYPE["error"]
    assert output_of("tool", None, True) is CODE_OUTPUT
    assert output_of("output", "stderr", False) is OUTPUT_OF_TYPE["output:stderr"]
    assert output_of("output", "other", False) is REPLY_OUTPUT
    assert table.STREAMS == tuple(key.split(":")[1] for key in OUTPUT_OF_TYPE
                                  if key.startswith("output:"))


def test_every_stream_reads_from_its_prefixed_lines_and_writes_them_back():
    lines = [f"{name}> {name} says" for name in table.STREAMS]
    lines += [f"{name}>" for name in table.STREAMS]  # an empty line of each
    text = _output_text(LANG, None, "", "\n".join(lines))
    outputs = reads(text)["cells"][0]["outputs"]
    assert [(out["name"], out["text"]) for out in outputs] == [
        (name, f"{name} says\n") for name in table.STREAMS] + [
        (name, "\n") for name in table.STREAMS]
    assert writes(reads(text)) == text


@pytest.mark.parametrize("typ", sorted(CELL_TYPE_OF))
def test_every_input_type_reads_as_its_cell_type_and_writes_back(typ):
    text = f"# %%[^c]\n[^c]: [{typ}]\n\nhi\n"
    nb = reads(text)
    cell = nb["cells"][0]
    assert cell["cell_type"] == CELL_TYPE_OF[typ]
    written = writes(nb)
    assert _footnote(written, "c")[0] == typ
    assert TYPE_OF_CELL[cell["cell_type"]] == typ or cell["metadata"][NS]["type"] == typ
