"""The format core against itself at another revision, in one run: what a change costs.

The ``format`` package of revision ``BENCH_REV`` (default ``HEAD``: the cost of the working
tree's changes) is taken out of git (``git archive``) into a temporary folder and imported
under another name beside this tree's, so both read and write the same conversation
(``bench_format.conversation``, as ``.msg.md`` and as ``.msg.py``) in one process, their
runs interleaved round by round: noise on a shared machine hits both alike. Shown: the
median and the best CPU time of each, and this tree's time as a ratio of the revision's (1.05:
5% slower). Both must write the same text; when they do not, the revision has another
format and the table says so.

The revision's package imports what it needs beyond ``format/`` (errors, masking) from this
tree; a revision whose ``format`` needs what this tree no longer has is refused in one line.
Run: ``BENCH_REV=5565bbc .venv/bin/python -m benchmarks format_rev``.
"""

from __future__ import annotations

import gc
import importlib
import io
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from types import ModuleType

from benchmarks._timing import print_table
from benchmarks.bench_format import SCRIPT, conversation
from jupyter_percent_agent import format as fmt

ROUNDS = int(os.environ.get("BENCH_ROUNDS", 15))
SAMPLES = 3  # timed runs per contender per round, after one to warm up
_ALIAS = "_format_at_rev"


def format_at(rev: str, into: Path) -> ModuleType:
    """The ``format`` package of git revision ``rev``, imported from ``into`` as a package
    of its own. Raises RuntimeError naming what failed."""
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(["git", "archive", "--format=tar", rev, "jupyter_percent_agent/format"],
                          cwd=root, capture_output=True, check=False)
    if done.returncode:
        raise RuntimeError(f"git archive {rev}: {done.stderr.decode(errors='replace').strip()}")
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
        if hasattr(tarfile, "data_filter"):  # Python 3.11.4+: no member outside ``into``
            tar.extractall(into, filter="data")
        else:
            tar.extractall(into)  # this repository's own archive
    shutil.move(into / "jupyter_percent_agent" / "format", into / _ALIAS)
    sys.path.insert(0, str(into))
    try:
        return importlib.import_module(_ALIAS)
    except ImportError as err:
        raise RuntimeError(f"the format package of {rev} does not import against this "
                           f"tree: {err}") from None
    finally:
        sys.path.remove(str(into))


def _timed(fn) -> list[float]:
    """CPU seconds of ``fn()`` (the thread's, not the wall clock's: what this process does,
    not how often the machine's other work takes its core), each of ``SAMPLES`` runs."""
    gc.collect()
    out = []
    for n in range(SAMPLES + 1):
        start = time.thread_time()
        result = fn()
        elapsed = time.thread_time() - start
        del result
        if n:
            out.append(elapsed)
    return out


def main() -> None:
    rev = os.environ.get("BENCH_REV", "HEAD")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            old = format_at(rev, Path(tmp))
        except RuntimeError as err:
            print(f"\nformat at {rev}: not measured: {err}")
            return
        text = fmt.writes(conversation())
        script = fmt.writes(fmt.reads(text), path=SCRIPT)
        sides = {"this tree": fmt, rev: old}
        notebooks = {name: (mod.reads(text), mod.reads(script, path=SCRIPT))
                     for name, mod in sides.items()}
        same = all(mod.writes(notebooks[name][0]) == text for name, mod in sides.items())
        rows = {
            "reads .msg.md": lambda mod, nbs: mod.reads(text),
            "writes .msg.md": lambda mod, nbs: mod.writes(nbs[0]),
            "reads .msg.py": lambda mod, nbs: mod.reads(script, path=SCRIPT),
            "writes .msg.py": lambda mod, nbs: mod.writes(nbs[1], path=SCRIPT),
        }
        samples = {(row, name): [] for row in rows for name in sides}
        order = list(sides.items())
        for _round in range(ROUNDS):
            order.reverse()  # each goes first in every other round
            for row, fn in rows.items():
                for name, mod in order:
                    nbs = notebooks[name]
                    samples[row, name] += _timed(lambda fn=fn, mod=mod, nbs=nbs: fn(mod, nbs))
    table = []
    for row in rows:
        new, was = samples[row, "this tree"], samples[row, rev]
        table.append((row, statistics.median(new) * 1e3, statistics.median(was) * 1e3,
                      statistics.median(new) / statistics.median(was), min(new) / min(was)))
    print_table(f"format: this tree against {rev} (ms; {ROUNDS} interleaved rounds of "
                f"{SAMPLES}; ratio > 1: this tree is slower)", table,
                ("", "this tree, median", f"{rev}, median", "ratio of medians",
                 "ratio of bests"))
    if not same:
        print(f"\n{rev} writes this conversation differently: the two formats differ, and so "
              "does what each run does")
