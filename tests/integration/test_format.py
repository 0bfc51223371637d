"""The format core in a fresh interpreter: what reading and writing import."""

from __future__ import annotations

import subprocess
import sys


def test_import_and_reads_writes_import_no_heavy_modules():
    code = (
        "import sys, jupyter_percent_agent as j\n"
        "nb = j.reads('---\\nagents: {}\\n---\\n# %%[^a]\\n[^a]: [markdown]\\n\\nhi\\n')\n"
        "j.writes(nb)\n"
        "heavy = [m for m in ('nbformat', 'jupytext', 'litellm', 'yaml') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == ""
