"""The one-click demo is set up the way Binder runs it: the files exist, scripts are
executable, the environment parses, and the example conversation is a canonical message file."""

from __future__ import annotations

import os

import yaml

from jupyter_percent_agent import format as fmt
from tests.paths import ROOT


def test_binder_scripts_are_executable_and_install_the_package() -> None:
    for name in ("postBuild", "start"):
        path = ROOT / "binder" / name
        assert os.access(path, os.X_OK), f"{path} is not executable"
    assert "pip install -e ." in (ROOT / "binder" / "postBuild").read_text()


def test_binder_environment_has_python_node_and_jupyterlab() -> None:
    env = yaml.safe_load((ROOT / "binder" / "environment.yml").read_text())
    deps = " ".join(str(d) for d in env["dependencies"])
    assert "python=3.11" in deps and "nodejs" in deps and "jupyterlab" in deps


def test_example_conversation_is_canonical_and_names_its_agent() -> None:
    path = ROOT / "examples" / "welcome.msg.md"
    text = path.read_text()
    nb = fmt.reads(text, path=str(path))
    assert fmt.writes(nb, path=str(path)) == text
    assert fmt.front_matter(nb)["default_agent"] == "helper"
