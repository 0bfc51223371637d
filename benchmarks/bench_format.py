"""Format core speed: our reads/writes against jupytext (md, py:percent) and str.splitlines.

Goals (issue 24): read >= 35x faster than jupytext's md reader and within 20x of
``str.splitlines`` on the same text, write >= 20x faster than jupytext's md writer. Also shown:
a first open, the same text with token counts the reader's attribute caches have never seen.
Script message files (issue 25): the same conversation as ``.msg.py`` read and written within
1.2x of ``.msg.md`` (the same reader and writer behind a comment prefix), and at least 25x
faster than jupytext's ``py:percent`` on the same notebook.
Also shown: two bounds, the cost of the steps no reader or writer of this design can skip
(:func:`floor_read`, :func:`floor_write`), so that a goal can be told from what this design
can reach in CPython; and CPython's own C JSON codec on the same notebook (``json.loads`` of
its ``.ipynb`` text, ``json.dumps`` of it, compact): no rules, no mapping, all in C, the
speed a reader or writer of any text form in pure Python does not pass.
Run: ``.venv/bin/python -m benchmarks format``.
"""

from __future__ import annotations

import copy
import gc
import json
import re
import statistics
import time
from itertools import chain

from benchmarks._timing import print_table
from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.format.attrs import NS, emit_meta, parse_meta
from jupyter_percent_agent.format.rules import scanner

CELLS = 5000
ROUNDS = 3
READ_GOAL, WRITE_GOAL, SPLIT_GOAL = 35, 20, 20
SCRIPT_GOAL, SCRIPT_PEER_GOAL = 1.2, 25
SCRIPT = "bench.msg.py"


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


def floor_read(text: str) -> list[dict]:
    """A bound, not a reader: the steps no reader of this design can skip (the scanner over
    the text, each footnote's attributes, each body sliced out, one dict per record) and
    nothing else: no mapping, no checks, no ids. The collector is paused, as ``reads`` does."""
    gc.disable()
    try:
        return _floor_read(text)
    finally:
        gc.enable()


def _floor_read(text: str) -> list[dict]:
    pattern = scanner(None, cells=True)
    index = pattern.groupindex
    g_marker, g_meta, g_bare = index["marker"], index["meta"], index["bare"]
    src = "\n" + text
    cells: list[dict] = []
    cell: dict = {"outputs": []}
    head = None
    for m in chain(pattern.finditer(src), (None,)):
        if m is not None and m.lastgroup != "cell":
            continue
        if head is not None:
            marker, meta = head.group(g_marker, g_meta)
            attrs = parse_meta(meta)[3] if meta is not None else {}
            body = src[head.end() + 1 : len(src) if m is None else m.start() - 1]
            if len(marker or head.group(g_bare)) == 3:
                cell["outputs"].append({"output_type": "display_data", "metadata": attrs,
                                        "data": {"text/markdown": body}})
            else:
                cell = {"cell_type": "code", "metadata": attrs, "source": body, "outputs": []}
                cells.append(cell)
        head = m
    return cells


def floor_write(nb: dict) -> str:
    """A bound, not a writer: one attribute line (``emit_meta``) and one f-string per
    record, and nothing else: no mapping, no ids, no escapes, no fences. The collector is
    paused, as ``writes`` does."""
    gc.disable()
    try:
        return _floor_write(nb)
    finally:
        gc.enable()


def _floor_write(nb: dict) -> str:
    parts = []
    for n, cell in enumerate(nb["cells"]):
        md = cell["metadata"]
        attrs = {k: v for k, v in md.items() if k != NS} if NS in md else md
        parts.append(f"# %%[^c{n}]\n[^c{n}]: {emit_meta('markdown', None, None, None, attrs)}"
                     f"\n\n{cell['source']}\n")
        for k, out in enumerate(cell.get("outputs") or ()):
            md = out.get("metadata") or {}
            body = out.get("text") or next(iter(out.get("data", {}).values()), "")
            parts.append(f"## %%%[^c{n}.{k}]\n[^c{n}.{k}]: "
                         f"{emit_meta('output', None, None, None, md)}\n\n{body}\n")
    return "\n".join(parts)


def main() -> None:
    import jupytext
    import nbformat

    text = fmt.writes(conversation())
    nb = fmt.reads(text)
    jnb = nbformat.from_dict(copy.deepcopy(nb))  # the same notebook, as jupytext takes it
    md_text = jupytext.writes(jnb, fmt="md")
    py_text = jupytext.writes(jnb, fmt="py:percent")
    script_text = fmt.writes(nb, path=SCRIPT)
    ipynb_text = json.dumps(nb)
    assert fmt.reads(script_text, path=SCRIPT) == nb
    lines = len(text.split("\n"))
    print(f"\n{CELLS} cells, {len(nb['cells'])} notebook cells, {lines} lines, "
          f"{len(text) / 1e6:.2f} MB")

    # A first open: the same text with token counts this process has never seen, so no
    # attribute token is in the reader's caches (one fresh variant per run).
    fresh = iter([re.sub(r"tokens_in=(\d+)", lambda m, k=k: f"tokens_in={int(m[1]) + k * 10**6}",
                         text) for k in range(1, 4 * ROUNDS + 1)])
    runs = {  # contender: (function, samples per round)
        "str.splitlines": (lambda: text.splitlines(), 5),
        "format.reads": (lambda: fmt.reads(text), 5),
        "format.reads, first open": (lambda: fmt.reads(next(fresh)), 3),
        "format.writes": (lambda: fmt.writes(nb), 5),
        "format.reads .msg.py": (lambda: fmt.reads(script_text, path=SCRIPT), 5),
        "format.writes .msg.py": (lambda: fmt.writes(nb, path=SCRIPT), 5),
        "bound: scan + footnotes + a dict per record": (lambda: floor_read(text), 5),
        "bound: emit_meta + an f-string per record": (lambda: floor_write(nb), 5),
        "json.loads, the .ipynb text (C)": (lambda: json.loads(ipynb_text), 5),
        "json.dumps, compact (C)": (lambda: json.dumps(nb), 5),
        "jupytext.reads md": (lambda: jupytext.reads(md_text, fmt="md"), 1),
        "jupytext.writes md": (lambda: jupytext.writes(jnb, fmt="md"), 1),
        "jupytext.reads py:percent": (lambda: jupytext.reads(py_text, fmt="py:percent"), 1),
        "jupytext.writes py:percent": (lambda: jupytext.writes(jnb, fmt="py:percent"), 1),
    }
    # Rounds of blocks: in each round every contender runs once to warm up, then its samples.
    # A block keeps a contender's runs together (each finds the memory the last one freed, as
    # repeated runs in one program do); the rounds spread a burst of noise on this shared
    # machine over all contenders. Each block starts after a full collection, so that none pays
    # for the garbage of the one before (a collection its own allocations trigger is its own);
    # not each run: a full collection hands freed memory back, and the run after it pays to
    # fetch it again (splitlines, all allocation, was 30% slower so).
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _round in range(ROUNDS):
        for name, (fn, count) in runs.items():
            gc.collect()
            for n in range(count + 1):
                start = time.perf_counter()
                result = fn()
                elapsed = time.perf_counter() - start
                del result  # freed after the clock stopped, for every contender alike
                if n:
                    samples[name].append(elapsed)
    med = {name: statistics.median(s) for name, s in samples.items()}
    best = {name: min(s) for name, s in samples.items()}

    def ratios(t: dict[str, float]) -> dict[str, float]:
        return {
            f"read vs splitlines (goal <= {SPLIT_GOAL}x)":
                t["format.reads"] / t["str.splitlines"],
            f"jupytext md read / ours (goal >= {READ_GOAL}x)":
                t["jupytext.reads md"] / t["format.reads"],
            f"jupytext md write / ours (goal >= {WRITE_GOAL}x)":
                t["jupytext.writes md"] / t["format.writes"],
            "jupytext md read / ours, first open":
                t["jupytext.reads md"] / t["format.reads, first open"],
            "jupytext md read / the read bound":
                t["jupytext.reads md"] / t["bound: scan + footnotes + a dict per record"],
            "jupytext md write / the write bound":
                t["jupytext.writes md"] / t["bound: emit_meta + an f-string per record"],
            "jupytext md read / C json.loads (what a reader in C reaches)":
                t["jupytext.reads md"] / t["json.loads, the .ipynb text (C)"],
            "jupytext md write / C json.dumps (what a writer in C reaches)":
                t["jupytext.writes md"] / t["json.dumps, compact (C)"],
            "jupytext py:percent read / ours": t["jupytext.reads py:percent"] / t["format.reads"],
            "jupytext py:percent write / ours":
                t["jupytext.writes py:percent"] / t["format.writes"],
            f".msg.py read / .msg.md read (goal <= {SCRIPT_GOAL}x)":
                t["format.reads .msg.py"] / t["format.reads"],
            f".msg.py write / .msg.md write (goal <= {SCRIPT_GOAL}x)":
                t["format.writes .msg.py"] / t["format.writes"],
            f"jupytext py:percent read / ours .msg.py (goal >= {SCRIPT_PEER_GOAL}x)":
                t["jupytext.reads py:percent"] / t["format.reads .msg.py"],
            f"jupytext py:percent write / ours .msg.py (goal >= {SCRIPT_PEER_GOAL}x)":
                t["jupytext.writes py:percent"] / t["format.writes .msg.py"],
        }

    print_table("format core vs jupytext (seconds)",
                [[name, med[name], best[name]] for name in runs], ["what", "median", "best"])
    rm, rb = ratios(med), ratios(best)
    print_table("ratios", [[k, f"{rm[k]:.1f}x", f"{rb[k]:.1f}x"] for k in rm],
                ["ratio", "of medians", "of bests"])
    t_read, t_write, t_split = med["format.reads"], med["format.writes"], med["str.splitlines"]
    t_jmd_read, t_jmd_write = med["jupytext.reads md"], med["jupytext.writes md"]
    ok = (t_jmd_read / t_read >= READ_GOAL and t_jmd_write / t_write >= WRITE_GOAL
          and t_read / t_split <= SPLIT_GOAL)
    print(f"\ngoals {'met' if ok else 'NOT met'} (ratios of medians)")
    t_sread, t_swrite = med["format.reads .msg.py"], med["format.writes .msg.py"]
    script_ok = (t_sread / t_read <= SCRIPT_GOAL and t_swrite / t_write <= SCRIPT_GOAL
                 and med["jupytext.reads py:percent"] / t_sread >= SCRIPT_PEER_GOAL
                 and med["jupytext.writes py:percent"] / t_swrite >= SCRIPT_PEER_GOAL)
    print(f".msg.py goals {'met' if script_ok else 'NOT met'} (ratios of medians)")


if __name__ == "__main__":
    main()
