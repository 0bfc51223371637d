"""The writer refuses namespaced metadata (``percent_agent``) that no heading or footnote can
hold, naming the cell or output and the key, rather than failing with a TypeError or writing a
file its own reader refuses (format/ns_checks.py)."""

from __future__ import annotations

import pytest

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.format import FormatError, reads, writes


def _notebook(cell_ns=None, out_ns=None, out=None):
    cell = fmt.new_message("hello", cell_id="q1")
    if cell_ns is not None:
        cell["metadata"][fmt.NS] = cell_ns
    if out_ns is not None or out is not None:
        cell["outputs"] = [out or fmt.reply_output("hi", agent="bot", out_id="q1.1")]
        if out_ns is not None:
            cell["outputs"][0]["metadata"][fmt.NS] = out_ns
    return {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


BAD = [
    ({"type": 3}, None, "cell 'q1': percent_agent.type must be one of"),
    ({"type": "0"}, None, "cell 'q1': percent_agent.type must be one of"),
    ({"type": "error"}, None, "cell 'q1': percent_agent.type must be one of"),
    ({"type": ["code"]}, None, "percent_agent.type must be one of"),
    ({"id": ["x"]}, None, "cell 'q1': percent_agent.id must be a string"),
    ({"type": "code", "lang": 3}, None, "percent_agent.lang must be a string"),
    ({"level": -1}, None, "cell 'q1': percent_agent.level must be a heading level from 1 to 5"),
    ({"level": 6}, None, "percent_agent.level must be a heading level from 1 to 5, not 6"),
    ({"level": "2"}, None, "percent_agent.level must be a heading level"),
    ({"sub": "a b"}, None, "cell 'q1': percent_agent.type must be words a [TYPE:SUB](LINK)"),
    ({"link": "x)y"}, None, "percent_agent.type must be words a [TYPE:SUB](LINK)"),
    (None, {"type": "a]b"}, "output 1 of [^q1]: percent_agent.type must be words"),
    (None, {"type": 5}, "output 1 of [^q1]: percent_agent.type must be words"),
    (None, {"sub": {}}, "output 1 of [^q1]: percent_agent.type must be words"),
    (None, {"id": 7}, "output 1 of [^q1]: percent_agent.id must be a string, not 7"),
    (None, {"type": "error"}, "[^q1.1]: percent_agent.type must be a type of display_data"),
    (None, {"level": 9}, "output 1 of [^q1]: percent_agent.level must be a heading level"),
]


@pytest.mark.parametrize(("cell_ns", "out_ns", "said"), BAD)
def test_metadata_no_heading_can_hold_is_refused_naming_where_and_what(cell_ns, out_ns, said):
    with pytest.raises(FormatError) as caught:
        writes(_notebook(cell_ns, out_ns))
    assert said in str(caught.value)


def test_a_streams_kept_attributes_must_be_a_mapping():
    nb = _notebook(out=fmt.stream_output("stdout", "x\n"))
    nb["cells"][0]["metadata"][fmt.NS] = {"outputs": {"0": {"name": "stdout", "attrs": "a"}}}
    with pytest.raises(FormatError, match=r"percent_agent\.attrs must be a mapping"):
        writes(nb)


@pytest.mark.parametrize(("cell_ns", "out_ns"), [
    ({"type": "code", "level": 3, "title": 5}, {"type": "planner", "sub": "x:y", "link": "l"}),
    ({"sub": "", "link": ""}, {"level": 4}),
    ({"outputs": "not a mapping"}, None),
])
def test_metadata_a_heading_can_hold_still_writes_and_reads_back(cell_ns, out_ns):
    nb = _notebook(cell_ns, out_ns)
    text = writes(nb)
    assert writes(reads(text)) == text
