"""A built wheel carries the jupytext startup hook and the server-extension config, and works.

The editable install is checked by ``test_jupytext_cli`` (the files in this venv's
site-packages); this builds a real wheel from the checkout and installs it into a folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.paths import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        # The front end has its own tests; this one is about the Python side.
        env={**os.environ, "SKIP_JUPYTER_BUILDER": "1"},
    )
    assert proc.returncode == 0, proc.stderr
    (found,) = out.glob("jupyter_percent_agent-*.whl")
    return found


@pytest.mark.timeout(1200)  # the wheel's build may take 900 s
@pytest.mark.slow
def test_wheel_puts_the_hook_at_the_root_and_the_config_in_etc(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {
        "_jupyter_percent_agent_hook.py",
        "jupyter_percent_agent_hook.pth",
        "jupyter_percent_agent_hook.start",
    } <= names
    data = [
        n
        for n in names
        if n.endswith("etc/jupyter/jupyter_server_config.d/jupyter_percent_agent.json")
    ]
    assert data and data[0].split("/")[0].endswith(".data")


@pytest.mark.timeout(1200)  # the wheel's build may take 900 s
@pytest.mark.slow
def test_installed_wheel_registers_the_format(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        timeout=300,
    )
    # -S: this venv's own .pth files (the editable install) do not run; only the wheel's does.
    code = (
        "import sys\n"
        f"sys.path.append({sysconfig.get_paths()['purelib']!r})\n"
        f"import site; site.addsitedir({str(target)!r})\n"
        "import jupytext.formats as f, jupyter_percent_agent as p\n"
        "print(p.__file__.startswith(" + repr(str(target)) + "), 'msg' in f._VALID_FORMAT_NAMES)\n"
    )
    out = subprocess.run(
        [sys.executable, "-S", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,  # not the checkout, which would shadow the installed package
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True"]


@pytest.mark.timeout(1200)  # the wheel's build may take 900 s
@pytest.mark.slow
def test_the_wheel_is_pure_python_with_the_format_core_as_sources(wheel: Path) -> None:
    """One core for everyone: the format core ships as its Python sources (docs/format.md,
    Speed, says why no compiled core is built), so the wheel fits every platform."""
    assert wheel.name.endswith("-py3-none-any.whl")
    names = zipfile.ZipFile(wheel).namelist()
    core = [n for n in names if n.startswith("jupyter_percent_agent/format/")]
    for module in ("reader", "rules", "notebook", "writer", "attrs"):
        assert f"jupyter_percent_agent/format/{module}.py" in core
    assert "jupyter_percent_agent/format/safe_yaml.py" in core
    assert not [n for n in names if n.endswith((".so", ".pyd", ".c"))]
