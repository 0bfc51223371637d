"""Hostile files: time and peak memory of reading each, per MB of input, against jupytext
reading the same notebook in its Markdown form (issue 34, part 6).

The files are the hostile inputs the growth tests use (``jupyter_percent_agent.testing.
hostile_files``): a ``[code]`` body of unclosed fence lines, one huge attribute value,
100,000 cells, a 50 MB reply, and the same in a ``.msg.py`` where the script reader has a
rule of its own. Ours: ``format.reads`` of the file. Peer: ``jupytext.reads(..., fmt="md")``
of the notebook ours read, written by jupytext as Markdown (its form of the same content; for
the huge attribute, the value is cell metadata in jupytext's form too), or as ``.ipynb`` where
the content is outputs, which jupytext's Markdown leaves out. Seconds are medians
of ``ROUNDS`` runs, ours and the peer's interleaved; peak memory is tracemalloc's peak above
what was allocated before the read, in bytes per byte of the file (goal: under 20 for ours).
Also shown: twice the input, the ratio of our times (goal: at most 3, linear).
Run: ``.venv/bin/python -m benchmarks hostile`` (``HOSTILE_MB=N`` scales every size).
"""

from __future__ import annotations

import gc
import os
import statistics
import time
import tracemalloc
from collections.abc import Callable

from benchmarks._timing import print_table
from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.testing.hostile_files import HOSTILE

ROUNDS = 3
MB = 2**20
SCALE = float(os.environ.get("HOSTILE_MB", "1"))
# (hostile input, its size in MB, jupytext's form of it): the sizes; outputs are not
# part of jupytext's Markdown, so a file that is mostly outputs is read from its .ipynb
CASES = (("unclosed fences", 10, "md"), ("huge attribute", 10, "md"),
         ("many cells", 3.5, "ipynb"), ("long reply", 50, "ipynb"),
         ("script: unclosed fences", 10, "md"), ("script: huge attribute", 10, "md"))
MEMORY_GOAL = 20


def _seconds(fn: Callable[[], object]) -> float:
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _peak(fn: Callable[[], object]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def main() -> None:
    import jupytext
    import nbformat

    rows = []
    for name, mb, form in CASES:
        hostile = HOSTILE[name]
        size = int(mb * SCALE * MB)
        text = hostile.make(size)
        double = hostile.make(2 * size)
        path = hostile.path

        def ours(t: str = text, p: str = path) -> object:
            return fmt.reads(t, path=p)

        nb = ours()
        md = jupytext.writes(nbformat.from_dict(nb), fmt=form)
        del nb

        def peer(t: str = md, f: str = form) -> object:
            return jupytext.reads(t, fmt=f)

        times: dict[str, list[float]] = {"ours": [], "ours x2": [], "peer": []}
        for _ in range(ROUNDS):
            times["ours"].append(_seconds(ours))
            times["ours x2"].append(_seconds(lambda d=double, p=path: fmt.reads(d, path=p)))
            times["peer"].append(_seconds(peer))
        t = {k: statistics.median(v) for k, v in times.items()}
        ours_mem, peer_mem = _peak(ours) / len(text), _peak(peer) / len(md)
        ours_per_mb, peer_per_mb = t["ours"] / (len(text) / MB), t["peer"] / (len(md) / MB)
        rows.append((
            name, f"{len(text) / MB:.1f}", f"{form}, {len(md) / MB:.1f}", f"{ours_per_mb:.4f}",
            f"{peer_per_mb:.4f}", f"{peer_per_mb / ours_per_mb:.1f}x",
            f"{t['ours x2'] / t['ours']:.2f}", f"{ours_mem:.1f}", f"{peer_mem:.1f}",
        ))
    print_table(
        f"Hostile files: seconds and peak memory per MB, medians of {ROUNDS}", rows,
        ("file", "MB", "jupytext's form, MB", "ours s/MB", "jupytext s/MB",
         "jupytext / ours (s/MB)",
         "ours: 2x input, time ratio (goal <= 3)",
         f"ours: peak bytes per byte (goal < {MEMORY_GOAL})", "jupytext: peak bytes per byte"))
    print("\nThe template that repeats a value is bounded where prompts are rendered (the "
          "tasks' renderer), not by the format core: not measured here.")


if __name__ == "__main__":
    main()
