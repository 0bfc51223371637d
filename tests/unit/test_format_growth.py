"""No file can freeze or exhaust a reader (issue 34, part 6): reading is linear in the file's
size for every rule of the reader, and its peak memory is bounded by the file's size.

The inputs are the hostile files of ``jupyter_percent_agent.testing.hostile_files`` (shared with
``python -m benchmarks hostile``): unclosed fences, huge attribute values, long titles, many
cells, long outputs, in ``.msg.md`` and ``.msg.py`` files. Growth is asserted as a ratio, never
as a time: twice the input takes at most three times as long (the best of a few runs of each
size, so that a noisy neighbour on the machine does not decide), and peak memory (tracemalloc)
stays under a number of bytes per byte of the file.
"""

from __future__ import annotations

import time
import tracemalloc

import pytest

from jupyter_percent_agent.format import FormatError, reads
from jupyter_percent_agent.testing.hostile_files import HOSTILE

SIZE = 50_000  # bytes; the quadratic rules of before took seconds at this size
MEMORY_SIZE = 1_000_000
MEMORY_GOAL = 20  # peak bytes per byte of the file
# The notebook read is itself bigger than that when the file is mostly tiny cells or outputs
# (nbformat's dicts: an output dict per line of alternating streams) or a metadata dict of
# 80,000 keys: the bound there is the notebook's own size, up to twice the goal.
NOTEBOOK_BOUND = {"many cells": 30, "long streams": 50, "many attributes": 30}


def _read(text: str, path: str) -> None:
    try:
        reads(text, path=path)
    except FormatError:
        pass  # a file that is refused must be refused as fast


def _best_seconds(text: str, path: str, repeat: int, rounds: int = 5) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(repeat):
            _read(text, path)
        best = min(best, time.perf_counter() - start)
    return best


def _repeat_for(text: str, path: str) -> int:
    """How many reads of ``text`` take about 20 ms: a sample long enough to time."""
    start = time.perf_counter()
    _read(text, path)
    once = time.perf_counter() - start
    return max(1, min(1000, int(0.02 / max(once, 1e-6))))


@pytest.mark.parametrize("name", list(HOSTILE))
def test_reading_twice_the_file_takes_at_most_three_times_as_long(name: str) -> None:
    hostile = HOSTILE[name]
    small, large = hostile.make(SIZE), hostile.make(2 * SIZE)
    repeat = _repeat_for(small, hostile.path)
    ratio = float("inf")
    for _attempt in range(3):  # measured again only when noise may have made it look slow
        ratio = min(ratio, _best_seconds(large, hostile.path, repeat)
                    / _best_seconds(small, hostile.path, repeat))
        if ratio <= 3:
            break
    assert ratio <= 3, f"{name}: twice the input took {ratio:.1f} times as long"


@pytest.mark.parametrize("name", list(HOSTILE))
def test_reading_peak_memory_is_bounded_by_the_file_size(name: str) -> None:
    hostile = HOSTILE[name]
    # a text of its own: the reader's caches have never seen its lines
    text = hostile.make(MEMORY_SIZE).replace("hi", "ho")
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        _read(text, hostile.path)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    per_byte = peak / len(text)
    bound = NOTEBOOK_BOUND.get(name, MEMORY_GOAL)
    assert per_byte < bound, f"{name}: {per_byte:.0f} bytes of memory per byte of the file"


def test_an_unclosed_fence_still_may_not_hide_a_cell_heading() -> None:
    """Stopping the scan at a fence nothing closes keeps the rule that it hides no heading."""
    text = "# %% User\n\n```python\nx = 1\n\n# %% Hidden\n\nhi\n"
    with pytest.raises(FormatError, match="unclosed fence: it hides the cell heading on line 6"):
        reads(text, path="a.msg.md")


def test_unclosed_fence_lines_stay_the_body_of_their_cell() -> None:
    nb = reads("# %% User [^a]\n\n[^a]: [code]\n\n" + "```python\n" * 3 + "\\# %% x\n",
               path="a.msg.md")
    [cell] = nb["cells"]
    assert cell["source"] == "```python\n```python\n\\# %% x"
