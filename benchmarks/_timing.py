"""Shared timing helpers: medians of repeated runs, contenders measured in turn, and a plain
table printer."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence


def median_seconds(fn: Callable[[], object], *, repeat: int = 7, warmup: int = 1) -> float:
    """Median wall-clock seconds of ``fn()`` over ``repeat`` runs, after ``warmup`` runs."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def interleaved(
    contenders: Mapping[str, Sequence[object]],
    rounds: int,
    measure: Callable[..., tuple[float, float]],
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """``measure(*args)`` of every contender in turn, ``rounds`` times over (interleaved:
    noise on a shared machine hits all alike); the two numbers of each, listed by name."""
    firsts: dict[str, list[float]] = {name: [] for name in contenders}
    seconds: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, args in contenders.items():
            first, second = measure(*args)
            firsts[name].append(first)
            seconds[name].append(second)
    return firsts, seconds


def print_table(title: str, rows: Sequence[Sequence[object]], header: Sequence[str]) -> None:
    """Print rows under a header as an aligned Markdown table, ready for an issue note."""
    cells = [[str(c) for c in header]] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    print(f"\n### {title}\n")
    for n, row in enumerate(cells):
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
        if n == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
