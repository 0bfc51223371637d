"""Run every benchmark module (``benchmarks/bench_*.py``) in turn."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import benchmarks


def main() -> int:
    modules = pkgutil.iter_modules(benchmarks.__path__)
    names = sorted(m.name for m in modules if m.name.startswith("bench_"))
    only = set(sys.argv[1:])
    for name in names:
        if only and name not in only and name.removeprefix("bench_") not in only:
            continue
        print(f"\n## {name}")
        importlib.import_module(f"benchmarks.{name}").main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
