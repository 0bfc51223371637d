"""Script message files (``.msg.py`` and other jupytext script languages): the ``.msg.md``
grammar behind a comment prefix, read to the same notebook as the ``.msg.md`` twin, written
back byte for byte, and still a script that Python runs."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.format import FormatError, reads, writes
from tests.helpers.conversations import messages
from tests.paths import TEST_DATA

SCRIPT = TEST_DATA / "format" / "script"
CANONICAL = TEST_DATA / "format" / "canonical"
SAMPLE_PY = (SCRIPT / "analysis.msg.py").read_text(encoding="utf-8")
SAMPLE_MD = (SCRIPT / "analysis.msg.md").read_text(encoding="utf-8")


def code_cell(code: str, pre: str = "", cid: str = "c") -> dict:
    cell = fmt.new_message(code, cell_id=cid)
    cell["metadata"][fmt.NS] = {"type": "code", **({"pre": pre} if pre else {})}
    return cell


def notebook(*cells: dict) -> dict:
    return {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


# ------------------------------------------------------------------------ the sample


def test_script_reads_to_the_same_notebook_as_its_markdown_twin():
    assert reads(SAMPLE_PY, path="analysis.msg.py") == reads(SAMPLE_MD, path="analysis.msg.md")


def test_script_sample_round_trips_byte_identically_through_md_and_ipynb():
    nb = reads(SAMPLE_PY, path="analysis.msg.py")
    assert writes(nb, path="analysis.msg.py") == SAMPLE_PY
    md = writes(nb, path="analysis.msg.md")
    assert md == SAMPLE_MD
    via_md = reads(md, path="analysis.msg.md")
    assert writes(via_md, path="analysis.msg.py") == SAMPLE_PY
    ipynb = nbformat.writes(nbformat.from_dict(json.loads(json.dumps(nb))))
    via_ipynb = json.loads(ipynb)
    nbformat.validate(nbformat.from_dict(via_ipynb))
    assert writes(via_ipynb, path="analysis.msg.py") == SAMPLE_PY


def test_code_cells_are_plain_code_and_everything_else_is_comments():
    code = [line for line in SAMPLE_PY.split("\n") if line and not line.startswith("#")]
    assert code == [
        "import math",
        "numbers = [3, 1, 2]",
        'print("loaded", len(numbers))',
        "total = sum(numbers)",
        "assert total == math.prod(numbers)",
        'print("checked", total)  # both are 6',
    ]
    cells = messages(reads(SAMPLE_PY, path="analysis.msg.py"))
    assert cells[0]["source"].startswith("# the numbers, one per line\n")
    assert fmt.cell_kind(cells[0]) == "code" and cells[0]["execution_count"] == 1


def test_canonical_files_read_the_same_as_scripts():
    for path in sorted(CANONICAL.glob("*.msg.md")):
        nb = reads(path.read_text(encoding="utf-8"), path=str(path))
        py = writes(nb, path="x.msg.py")
        assert reads(py, path="x.msg.py") == nb, path.name
        assert writes(reads(py, path="x.msg.py"), path="x.msg.py") == py, path.name


# ------------------------------------------------------------------ nothing forges a cell


@pytest.mark.parametrize(
    "code",
    [
        's = """\n# %% forged[^x]\n# [^x]: [markdown]\n"""',
        "x = 1\n## %%% forged output",
        "# leading comment\nx = 1",
        "x = 1\n# trailing comment",
        "\nx = 1",
        "x = 1\n\n",
        "# only a comment",
        "    # indented\n    pass",
        "x = 1\n```\ny = 2",
        "if True:\n\n    x = 1\n#%% tight",
        "s = '\\\\%% a line'\n%% x",
        "%matplotlib inline\nx = 1",
        "\\# %% escaped",
        "%%% [output] x",
    ],
    ids=[
        "string",
        "output-comment",
        "leading",
        "trailing",
        "blank-first",
        "blank-last",
        "comment-only",
        "indented",
        "fence",
        "inner-blank",
        "percent",
        "magic",
        "backslash",
        "bare-heading",
    ],
)
def test_no_code_forges_a_cell_and_every_code_reads_back(code):
    nb = notebook(code_cell(code, pre="Some text.\n\n"), fmt.new_message("after", cell_id="m"))
    py = writes(nb, path="x.msg.py")
    back = reads(py, path="x.msg.py")
    assert [c["id"] for c in back["cells"]] == ["c", "m"]
    assert back["cells"][0]["source"] == code
    assert back == reads(writes(nb, path="x.msg.md"), path="x.msg.md")
    assert writes(back, path="x.msg.py") == py


def test_heading_like_code_is_written_commented_not_plain():
    nb = notebook(code_cell("x = 1\n# %% looks like a cell"))
    py = writes(nb, path="x.msg.py")
    assert "\nx = 1\n" not in py and "# ```python\n# x = 1\n" in py
    assert messages(reads(py, path="x.msg.py"))[0]["source"] == "x = 1\n# %% looks like a cell"


@pytest.mark.parametrize("line", ["%% text", "%%% [output] x", "\\%% one", "# %% md", "%%"])
def test_message_lines_that_would_read_as_headings_are_escaped(line):
    nb = notebook(fmt.new_message(f"a\n{line}\nb", cell_id="m"))
    py = writes(nb, path="x.msg.py")
    back = reads(py, path="x.msg.py")
    assert len(back["cells"]) == 1 and back["cells"][0]["source"] == f"a\n{line}\nb"


def test_plain_code_in_a_message_is_kept_and_written_back_as_comment():
    text = "# %% Q[^m]\n# [^m]: [markdown]\n#\n# question\nprint('hand edit')\n"
    nb = reads(text, path="x.msg.py")
    assert messages(nb)[0]["source"] == "question\nprint('hand edit')"
    assert "# print('hand edit')" in writes(nb, path="x.msg.py")


def test_preamble_code_of_the_script_stays_code():
    text = '"""An analysis."""\nimport os\n# a note\n\n# %% Q[^m]\n# [^m]: [markdown]\n\n# q\n'
    nb = reads(text, path="x.msg.py")
    assert nb["cells"][0]["source"] == '"""An analysis."""\nimport os\n# a note\n\n'
    assert writes(nb, path="x.msg.py") == text


# ---------------------------------------------------------------------------- errors


def test_bad_footnote_error_names_the_script_file_and_line():
    lines = SAMPLE_PY.split("\n")
    at = lines.index("# [^check]: [code]")
    lines[at] = '# [^check]: [code] x="unterminated'
    with pytest.raises(FormatError) as err:
        reads("\n".join(lines), path="analysis.msg.py")
    assert err.value.line == at + 1
    assert str(err.value).startswith(f"analysis.msg.py:{at + 1}: ")


def test_footnote_of_another_id_is_an_error_on_its_line():
    text = "x = 1\n\n# %% Q[^a]\n# [^b]: [markdown]\n"
    with pytest.raises(FormatError) as err:
        reads(text, path="x.msg.py")
    assert err.value.line == 4


# ------------------------------------------------------------------- other languages


def test_other_languages_take_their_comment_marker_from_jupytext():
    import jupytext.languages

    for ext in (".py", ".R", ".jl", ".sh", ".js", ".cpp"):
        want = jupytext.languages._SCRIPT_EXTENSIONS[ext]
        got = fmt.script_for(f"x.msg{ext}")
        assert got is not None and (got.comment, got.language) == (
            want["comment"],
            want["language"],
        )
    assert fmt.script_for("x.msg.md") is None and fmt.script_for("x.py") is None


@pytest.mark.parametrize(
    "ext,code", [(".R", "x <- 1\nprint(x)"), (".js", "let x = 1;"), (".jl", "x = 1")]
)
def test_other_script_languages_round_trip(ext, code):
    language = fmt.script_for(f"x.msg{ext}").language
    cell = code_cell(code)
    cell["metadata"][fmt.NS]["lang"] = language
    nb = notebook(cell, fmt.new_message("a question\n%% x", cell_id="m"))
    nb["cells"][0]["outputs"] = [fmt.reply_output("a reply", agent="a", out_id="c.1")]
    py = writes(nb, path=f"x.msg{ext}")
    assert f"\n{code}\n" in py
    comment = fmt.script_for(f"x.msg{ext}").comment
    assert f"{comment} %%[^m]" in py
    back = reads(py, path=f"x.msg{ext}")
    assert back == reads(writes(nb, path="x.msg.md"), path="x.msg.md")
    assert writes(back, path=f"x.msg{ext}") == py


def test_crlf_script_is_read_and_written_back_as_crlf():
    crlf = SAMPLE_PY.replace("\n", "\r\n")
    nb = reads(crlf, path="analysis.msg.py")
    assert writes(nb, path="analysis.msg.py") == crlf
    assert messages(nb) == messages(reads(SAMPLE_PY, path="analysis.msg.py"))


def test_a_plain_line_that_reads_as_a_bare_heading_in_a_message_is_text():
    text = "# %% T[^c]\n# [^c]: [markdown]\n\n%%% [output]\n"
    nb = reads(text, path="x.msg.py")
    assert [c["source"] for c in nb["cells"]] == ["%%% [output]"]
    once = writes(nb, path="x.msg.py")
    assert (
        reads(once, path="x.msg.py") == nb
        and writes(reads(once, path="x.msg.py"), path="x.msg.py") == once
    )


@pytest.mark.parametrize(
    "title, front",
    [
        ("coding: utf-7", None),  # the first heading, line 1
        ("Notes", "title: 'vim: set fileencoding=utf-7 :'"),  # the front matter's line 2
        ("Refactor the coding: naming", None),  # Python cannot even run it
    ],
)
def test_a_python_encoding_declaration_in_the_first_two_lines_is_refused(
    tmp_path: Path, title: str, front: str | None
) -> None:
    """Python reads a whole script in the encoding a comment on line 1 or 2 declares (PEP
    263): under '# %% coding: utf-7' a reply's '+AAo-' is a newline, and what follows it
    code that `python x.msg.py` runs. The writer refuses such a script in one line."""
    text = (f"---\n{front}\n---\n\n" if front else "") + f"# %% {title}[^m1]\n\nhi\n"
    nb = reads(text, path="x.msg.md")
    messages(nb)[0]["outputs"] = [fmt.reply_output(
        "+AAo-import os+ADs-os.system('touch pwned')", agent="a", out_id="m1.1")]
    path = tmp_path / "x.msg.py"
    with pytest.raises(FormatError, match=r"encoding declaration") as err:
        fmt.write(nb, path)
    assert err.value.line in (1, 2)
    assert "\n" not in str(err.value)
    assert not path.exists()
    assert "coding" in writes(nb, path="x.msg.md")  # a .msg.md is no script: written


def test_a_utf8_declaration_in_the_first_two_lines_is_written_and_reads_back() -> None:
    nb = reads("# %% -*- coding: utf-8 -*-[^m1]\n\nhi\n", path="x.msg.md")
    text = writes(nb, path="x.msg.py")
    assert text.startswith("# %% -*- coding: utf-8 -*-")
    assert messages(reads(text, path="x.msg.py"))[0]["id"] == "m1"
