"""Script message files run by Python, and read without importing jupytext."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.format import reads, writes
from tests.helpers.conversations import messages
from tests.paths import ROOT, TEST_DATA

SCRIPT = TEST_DATA / "format" / "script"
SAMPLE_PY = (SCRIPT / "analysis.msg.py").read_text(encoding="utf-8")


def _run(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(path)],
        capture_output=True,
        text=True,
        cwd=path.parent,
        timeout=60,
        check=False,
    )


def test_python_runs_the_code_cells_in_order_before_and_after_replies(tmp_path):
    path = tmp_path / "analysis.msg.py"
    path.write_text(SAMPLE_PY, encoding="utf-8")
    before = _run(path)
    assert before.returncode == 0, before.stderr
    assert before.stdout == "loaded 3\nchecked 6\n"
    nb = fmt.read(path)
    question = messages(nb)[1]
    for n in range(2, 5):  # replies with text that is Python, and with heading-like lines
        question["outputs"].append(
            fmt.reply_output(
                f'raise SystemExit("reply {n}")\n# %% not a cell\n%% nor this\n'
                "```python\nx = 1\n```",
                agent="planner",
                out_id=f"q1.{n}",
            )
        )
    nb["cells"].append(fmt.new_message("print('a message is not code')", cell_id="m2"))
    fmt.write(nb, path)
    text = path.read_text(encoding="utf-8")
    assert 'raise SystemExit("reply 4")' in text
    after = _run(path)
    assert after.returncode == 0, after.stderr
    assert after.stdout == "loaded 3\nchecked 6\n"
    assert reads(text, path=str(path)) == reads(writes(nb, path="x.msg.md"), path="x.msg.md")


def test_reading_a_script_does_not_import_jupytext():
    code = (
        "import sys\nfrom jupyter_percent_agent import format as f\n"
        f"f.reads(open({str(SCRIPT / 'analysis.msg.py')!r}).read(), path='a.msg.py')\n"
        "print('jupytext' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "False"


def test_the_documented_example_is_canonical_and_runs(tmp_path):
    doc = (ROOT / "docs" / "format.md").read_text("utf-8")
    section = doc[doc.index("## Script message files") :]
    example = section[section.index("```python\n") + 10 : section.index("\n```\n")] + "\n"
    nb = reads(example, path="x.msg.py")
    assert writes(nb, path="x.msg.py") == example
    assert [fmt.cell_kind(c) for c in messages(nb)] == ["message", "code"]
    path = tmp_path / "example.msg.py"
    path.write_text(example, encoding="utf-8")
    run = _run(path)
    assert run.returncode == 0 and run.stdout == "1\n", run.stderr
