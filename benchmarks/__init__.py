"""Benchmarks: each compares the project with a named peer in the same run.

Run all with ``python -m benchmarks`` (``make bench``), or one with
``python -m benchmarks.bench_format``. Figures are medians of several runs, reported
as ratios against the peer. Timings never appear as assertions in the test suite.
"""
