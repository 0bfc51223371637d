"""Compile the format core's hot modules with mypyc into jupyter_percent_agent/format/_compiled.

Run by ``make setup`` and ``make compile`` (after editing the format core: until then the
package uses the edited Python sources, see ``jupyter_percent_agent/format/compiled.py``).
Does nothing when the build is current, unless given ``--force``.
Needs mypy and setuptools (the test extras) and a C compiler with the Python headers. The
build happens in a scratch copy of the sources; the result replaces ``_compiled`` in one
rename, so a failed or interrupted build leaves the last good one (or none) in place.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FORMAT = ROOT / "jupyter_percent_agent" / "format"
GROUP = "jupyter_percent_agent.format._core"

_SETUP = """
import sys
from setuptools import setup
from mypyc.build import mypycify

paths = sys.argv[1:]
sys.argv[1:] = ["build_ext", "--inplace", "--quiet"]
setup(name="percent-agent-format-core", ext_modules=mypycify(paths, group_name={group!r}))
"""


class BuildError(Exception):
    """mypyc or the C compiler failed; the message is their output."""


def _compiled_module() -> Any:
    # the stamp rules, loaded from their file: importing the package could load a stale build
    spec = importlib.util.spec_from_file_location("_format_compiled", FORMAT / "compiled.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(out_dir: Path = FORMAT) -> Path:
    """Compile the modules of ``compiled.MODULES``; returns the build directory."""
    compiled = _compiled_module()
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    with tempfile.TemporaryDirectory(prefix="percent-agent-mypyc-") as tmp:
        pkg = Path(tmp) / "jupyter_percent_agent" / "format"
        pkg.mkdir(parents=True)
        (pkg.parent / "__init__.py").write_text("")
        (pkg / "__init__.py").write_text("")
        for src in FORMAT.glob("*.py"):
            if src.name != "__init__.py":
                shutil.copy2(src, pkg / src.name)
        paths = ["--ignore-missing-imports",
                 *(f"jupyter_percent_agent/format/{name}.py" for name in compiled.MODULES)]
        done = subprocess.run([sys.executable, "-c", _SETUP.format(group=GROUP), *paths],
                              cwd=tmp, capture_output=True, text=True)
        if done.returncode:
            raise BuildError(done.stdout + done.stderr)
        # Stamp what was compiled (the copies), not the sources: an edit made during the
        # build then reads as stale.
        stamp = compiled.stamp(str(pkg))
        new = out_dir / (compiled.BUILD_DIR + ".new")
        shutil.rmtree(new, ignore_errors=True)
        new.mkdir()
        names = [*compiled.MODULES, GROUP.rsplit(".", 1)[1] + "__mypyc"]
        for name in names:
            shutil.copy2(pkg / (name + suffix), new / (name + suffix))
        (new / compiled.STAMP).write_text(json.dumps(stamp, indent=1) + "\n")
    final = out_dir / compiled.BUILD_DIR
    old = out_dir / (compiled.BUILD_DIR + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        os.rename(final, old)
    os.rename(new, final)
    shutil.rmtree(old, ignore_errors=True)
    return final


def main() -> int:
    if "--force" not in sys.argv and _compiled_module().usable(str(FORMAT)) is not None:
        print("compile_format: the compiled format core is up to date")
        return 0
    start = time.perf_counter()
    try:
        final = build()
    except (BuildError, OSError) as err:
        tail = "\n".join(str(err).strip().splitlines()[-15:])
        print(f"{tail}\ncompile_format: the compiled format core was not built (above: why); "
              "the package uses its Python sources", file=sys.stderr)
        return 1
    print(f"compile_format: built {final.relative_to(ROOT)} "
          f"in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
