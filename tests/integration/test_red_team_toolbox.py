"""Red team: a trusted toolbox runs the source the user read, nothing that came beside it.

A folder that travels as a zip or a tarball keeps its files' times, so it can ship
``toolbox/__pycache__/notes.cpython-XY.pyc`` whose header matches ``toolbox/notes.py``: Python
would run that bytecode instead of the source. The user reads ``notes.py``, trusts the folder,
and must get ``notes.py``. The real ``tce``, in the folder.
"""

from __future__ import annotations

import importlib.util
import marshal
import os
import struct
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent
SOURCE = (
    'def note(text: str) -> str:\n    """Take a note.\n\n    Args:\n        text: the note.\n'
    '    """\n    return text\n'
)


def ship_bytecode_beside(source: Path, code_text: str) -> None:
    """A cached bytecode file for ``source`` that Python would accept (its mtime and size)."""
    st = source.stat()
    code = compile(code_text, str(source.resolve()), "exec")
    cached = Path(importlib.util.cache_from_source(str(source.resolve())))
    cached.parent.mkdir(exist_ok=True)
    header = struct.pack("<III", 0, int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF)
    cached.write_bytes(importlib.util.MAGIC_NUMBER + header + marshal.dumps(code))


def test_a_trusted_toolbox_runs_its_source_never_bytecode_shipped_beside_it(
    tmp_path: Path, trusted, user_config_dir: Path
) -> None:
    folder = tmp_path / "unzipped"
    (folder / "toolbox").mkdir(parents=True)
    source = folder / "toolbox" / "notes.py"
    source.write_text(SOURCE)
    mark = tmp_path / "ran"
    ship_bytecode_beside(source, f"open({str(mark)!r}, 'w').close()\n" + SOURCE)
    trusted(folder)

    done = subprocess.run(
        [str(BIN / "tce"), "tools", "list", "--toolbox", "toolbox"],
        cwd=folder,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 0, done.stderr
    assert "note" in done.stdout
    assert not mark.exists()
