"""Property and fuzz tests of the format core (hypothesis).

Random notebooks survive notebook -> text -> notebook exactly; random texts normalise once
and are then stable; no line of any text that reads is dropped.
"""

from __future__ import annotations

import json
import re

import nbformat
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.format import FormatError, reads, writes

SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
SEPARATORS = "\r\f\v\x1c\x1d\x1e\x85\u2028\u2029"

TRICKY_LINES = [
    "# %% a heading", "## %%% out[^x]", "%%% [output]", "%% [raw]", "##### %%", "###### %% six",
    "\\# %% escaped", "\\\\## %%% twice", "```", "```python", "````", "~~~", "~~~~~ info",
    "   ```", "    ```", "[^a]: [markdown] x=1", "[^1]: a footnote", "stdout> out",
    "stderr>", "---", "...", "", " ", "\t", "plain text", "# Discussion", "## Discussion",
    "# %%%%", "#%% no space", "# %%x", "`` `", "jupyter: {}",
]

line_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",),
                                           blacklist_characters="\n"), max_size=12)
tricky_line = st.one_of(st.sampled_from(TRICKY_LINES), line_text,
                        st.sampled_from(list(SEPARATORS)).map(lambda s: "x" + s + "# %% y"))
source = st.lists(tricky_line, max_size=8).map("\n".join)

json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                        st.floats(allow_nan=False, allow_infinity=False), line_text,
                        st.text(max_size=8))
json_value = st.recursive(json_scalar, lambda kids: st.one_of(
    st.lists(kids, max_size=3), st.dictionaries(st.text(max_size=5), kids, max_size=3)),
    max_leaves=6)
meta_key = st.one_of(st.sampled_from(["history", "agent", "a b", "cell_type",
                                      "execution_count", "mime_type",
                                      "close_fence", "ename", "x=y", "\"q\""]),
                     st.text(min_size=1, max_size=6).map(lambda k: "k" + k))
metadata = st.dictionaries(meta_key, json_value, max_size=4)

mime_text = st.sampled_from(["text/plain", "text/html", "text/markdown", "image/png",
                             "text/latex", "image/svg+xml"])
mime_json = st.sampled_from(["application/json", "application/vnd.jupyter.widget-view+json"])
bundle = st.one_of(
    st.dictionaries(mime_text, source, max_size=3),
    st.dictionaries(mime_json, json_value, min_size=1, max_size=1),
)
stream = st.builds(lambda name, text: {"output_type": "stream", "name": name, "text": text},
                   st.sampled_from(["stdout", "stderr"]), source)
display = st.builds(lambda data, md: {"output_type": "display_data", "data": data,
                                      "metadata": md}, bundle, metadata)
result = st.builds(lambda data, md, n: {"output_type": "execute_result", "data": data,
                                        "metadata": md, "execution_count": n},
                   bundle, metadata, st.one_of(st.none(), st.integers(0, 999)))
error = st.builds(lambda e, v, tb: {"output_type": "error", "ename": e, "evalue": v,
                                    "traceback": tb},
                  line_text, line_text, st.lists(source, max_size=3))
output = st.one_of(stream, display, result, error)
cell_id = st.from_regex(r"[A-Za-z0-9_-]{1,12}", fullmatch=True)


@st.composite
def cells(draw):
    kind = draw(st.sampled_from(["message", "code", "markdown", "raw", "tool"]))
    cid = draw(cell_id)
    md = draw(metadata)
    ns = {}
    if draw(st.booleans()):
        ns["title"] = draw(line_text.filter(lambda t: t.strip() == t and "[^" not in t))
    if kind in ("code", "tool"):
        ns["type"] = kind
    if kind == "code" and draw(st.booleans()):
        ns["pre"] = draw(source) + "\n"
        ns["lang"] = draw(st.sampled_from(["python", "R", ""]))
    if ns:
        md[fmt.NS] = {k: v for k, v in ns.items() if v != ""}
    src = draw(source)
    if kind == "markdown":
        return {"cell_type": "markdown", "id": cid, "metadata": md, "source": src}
    if kind == "raw":
        return {"cell_type": "raw", "id": cid, "metadata": md, "source": src}
    return {"cell_type": "code", "id": cid, "metadata": md, "source": src,
            "execution_count": draw(st.one_of(st.none(), st.integers(0, 99))),
            "outputs": draw(st.lists(output, max_size=4))}


@st.composite
def notebooks(draw):
    items = draw(st.lists(cells(), max_size=5, unique_by=lambda c: c["id"]))
    meta = draw(st.one_of(st.just({"kernelspec": dict(fmt.DEFAULT_KERNELSPEC)}),
                          st.dictionaries(st.text(max_size=5).map(lambda k: "k" + k),
                                          json_value, max_size=3)))
    return {"cells": items, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}


def _clean(nb):
    """What an exact round trip must give back: NS keys the reader never writes dropped."""
    nb = json.loads(json.dumps(nb))
    for cell in nb["cells"]:
        ns = cell["metadata"].get(fmt.NS)
        if ns is not None and not ns:
            del cell["metadata"][fmt.NS]
    return nb


@SETTINGS
@given(notebooks(), st.sampled_from([None, "x.msg.py"]))
def test_random_notebooks_round_trip_exactly_through_text(nb, path):
    text = writes(nb, path=path)
    back = reads(text, path=path)
    want = _clean(nb)
    assert back["metadata"] == want["metadata"]
    assert len(back["cells"]) == len(want["cells"])
    for got, cell in zip(back["cells"], want["cells"], strict=True):
        assert got["cell_type"] == cell["cell_type"]
        assert got["id"] == cell["id"]
        assert got["source"] == cell["source"]
        assert fmt.cell_attrs(got) == fmt.cell_attrs(cell)
        assert got.get("outputs") == cell.get("outputs")
        assert got.get("execution_count") == cell.get("execution_count")
        ns_got = got["metadata"].get(fmt.NS, {})
        for key in ("title", "type", "pre"):
            assert ns_got.get(key) == cell["metadata"].get(fmt.NS, {}).get(key)
    nbformat.validate(nbformat.from_dict(back))
    assert writes(back, path=path) == text


# Ids that collide: the ones a writer makes up (``cell-N``, ``-N`` suffixes, ``PARENT.N``) and
# the front matter's and preamble's.
clashing_id = st.sampled_from(["a", "b", "b-2", "b-3", "a.1", "a.2", "cell", "cell-1", "cell-2",
                               "front-matter", "preamble", "preamble-2"])


@st.composite
def notebooks_with_clashing_ids(draw):
    """Notebooks whose cells may share ids, and whose outputs carry ids of their own."""
    nb = draw(notebooks())
    for cell in nb["cells"]:
        cell["id"] = draw(clashing_id)
        for out in cell.get("outputs", []):
            if out["output_type"] in ("display_data", "execute_result") and draw(st.booleans()):
                out["metadata"] = {**out["metadata"], fmt.NS: {"id": draw(clashing_id)}}
    return nb


@SETTINGS
@given(notebooks_with_clashing_ids(), st.sampled_from([None, "x.msg.py"]))
def test_a_notebook_with_clashing_ids_writes_a_text_that_reads_back(nb, path):
    text = writes(nb, path=path)
    back = reads(text, path=path)
    assert [c["source"] for c in back["cells"]] == [c["source"] for c in nb["cells"]]
    assert len({c["id"] for c in back["cells"]}) == len(back["cells"])
    assert writes(back, path=path) == text


ns_value = st.one_of(json_value, st.integers(-3, 9), st.sampled_from(
    ["code", "raw", "error", "output", "python", "stdout", "x y", "a]b", "[", "(", "é"]))
ns_entry = st.dictionaries(st.sampled_from(
    ["type", "title", "level", "sub", "link", "id", "lang", "pre", "post", "fence", "outputs",
     "fields", "no_source", "meta", "attrs", "name", "new", "ename"]), ns_value, max_size=4)


@st.composite
def notebooks_with_any_namespaced_metadata(draw):
    """Notebooks whose cells and outputs carry namespaced entries of any shape (a client, a
    tool or a hand-edited .ipynb may write anything there)."""
    nb = draw(notebooks())
    for cell in nb["cells"]:
        if draw(st.booleans()):
            cell["metadata"][fmt.NS] = draw(ns_entry)
        for out in cell.get("outputs", []):
            if "metadata" in out and draw(st.booleans()):
                out["metadata"] = {**out["metadata"], fmt.NS: draw(ns_entry)}
    return nb


@SETTINGS
@given(notebooks_with_any_namespaced_metadata(), st.sampled_from([None, "x.msg.py"]))
def test_any_namespaced_metadata_is_refused_or_written_as_a_text_that_reads(nb, path):
    try:
        text = writes(nb, path=path)
    except FormatError as err:
        assert fmt.NS in str(err)  # it names the entry
        return
    back = reads(text, path=path)
    assert [c["source"] for c in back["cells"]] == [c["source"] for c in nb["cells"]]


EXTRA_LINES = [
    "# %% T[^c]", "[^c]: [markdown] history=\"none\"", "## %%% R[^c.1]", "[^c.1]: [agent] n=1",
    "# %%% [python] t=1", "[^d]: [code] execution_count=3", "# %%[^d]", "[^e]: [raw]",
    '# %% [markdown] k="v"', "# %%[^e]",
]
text_line = st.one_of(st.sampled_from([*TRICKY_LINES, *EXTRA_LINES]), line_text)
texts = st.lists(text_line, max_size=14).map("\n".join)
# a script's lines: a line of a message file behind the comment marker, or as it is (code)
script_line = st.one_of(text_line.map(lambda line: "# " + line), text_line,
                        st.sampled_from(["#", "x = 1", "    # in code", "# [^d]: [code]"]))
script_texts = st.lists(script_line, max_size=14).map("\n".join)


@SETTINGS
@given(st.one_of(st.tuples(texts, st.sampled_from([None, "x.msg.md", "x.msg.py"])),
                 st.tuples(script_texts, st.just("x.msg.py"))))
@example(("```\n##### %%\n###### %% six", "x.msg.md"))  # a fence hiding a bare heading
def test_any_text_that_reads_normalises_once_then_is_stable(case):
    text, path = case
    try:
        nb = reads(text, path=path)
    except FormatError as err:
        assert err.line is None or 1 <= err.line <= text.count("\n") + 1
        return
    nbformat.validate(nbformat.from_dict(json.loads(json.dumps(nb))))
    once = writes(nb, path=path)
    again = reads(once, path=path)
    assert again == nb
    assert writes(again, path=path) == once


_HEADING = re.compile(r"^(?:#{1,5} %%%?(?=[ \t\[]|$)|%%%? \[)")
_FOOTNOTE = re.compile(r"^\[\^[^\]\s]+\]:")


def _strings(obj, out):
    if isinstance(obj, str):
        out.append(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            out.append(k)
            _strings(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _strings(v, out)
    return out


@SETTINGS
@given(texts)
def test_no_line_of_any_text_is_dropped(text):
    try:
        nb = reads(text, path="fuzz.msg.md")
    except FormatError:
        return
    blob = "\n".join(_strings(nb, []))
    for line in text.split("\n"):
        if _HEADING.match(line) or _FOOTNOTE.match(line) or not line.strip():
            continue
        if line.startswith("\\") and _HEADING.match(line.lstrip("\\")):
            line = line[1:]
        for prefix in ("stdout>", "stderr>"):
            if line.startswith(prefix):
                line = line[len(prefix):]
        if line.startswith(" jupyter:") or line.startswith("jupyter:"):
            continue
        assert line.strip() in blob, line


@SETTINGS
@given(st.lists(st.sampled_from([*list(SEPARATORS), "a", "# %% h", "\n", "```", "~~~~"]),
                max_size=30).map("".join))
def test_line_separators_in_sources_and_outputs_survive(src):
    cell = fmt.new_message(src, cell_id="a", attrs={"k": src})
    cell["outputs"] = [fmt.stream_output("stdout", src), fmt.reply_output(
        src, agent="x", out_id="a.1"), fmt.error_output("E", src, [src])]
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    back = reads(writes(nb))["cells"][0]
    assert back["source"] == src and back["metadata"]["k"] == src
    assert [fmt.output_text(o) for o in back["outputs"]] == [src, src, src]
    assert back["outputs"][2]["evalue"] == src
