"""``tce list`` and ``tce set-default``."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.testing.environment import tce
from tests.paths import TEST_DATA

DATA = TEST_DATA / "runtime"


def test_list_cells(tmp_path: Path) -> None:
    path = tmp_path / "basic.msg.md"
    shutil.copy(DATA / "basic.msg.md", path)
    r = tce("list", str(tmp_path / "basic"))
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].split() == ["INDEX", "TYPE", "TITLE", "AGENT", "HISTORY"]
    assert len(lines) == 5
    assert lines[1].split()[0] == "1" and "planner" in lines[1] and "include" in lines[1]
    assert "exclude" in lines[2] and "summary" in lines[3]
    rows = [json.loads(x) for x in tce("list", str(path), "--json").output.splitlines()]
    assert [r["index"] for r in rows] == [1, 2, 3, 4]
    assert rows[0]["type"] == "message" and rows[0]["agent"] == "planner"
    assert rows[1]["history"] == "exclude"


def test_list_names_the_agent_of_a_message_whose_only_output_is_its_error(
        tmp_path: Path) -> None:
    path = tmp_path / "failed.msg.md"
    path.write_text('# %% Hi[^m1]\n[^m1]: [markdown]\n\nhello\n\n## %%%[^m1.1]\n'
                    '[^m1.1]: [error] ename="ModelError" evalue="boom" traceback_lines=[] '
                    'agent="planner" models=["a"]\n')
    rows = [json.loads(x) for x in tce("list", str(path), "--json").output.splitlines()]
    assert rows[0]["agent"] == "planner" and rows[0]["outputs"] == 1


def test_set_default(tmp_path: Path) -> None:
    path = tmp_path / "basic.msg.md"
    shutil.copy(DATA / "basic.msg.md", path)
    r = tce("set-default", str(path), "critic")
    assert r.exit_code == 0, r.output
    assert fmt.front_matter(fmt.read(path))["default_agent"] == "critic"
    assert "Once upon a time" in path.read_text()
    r = tce("set-default", str(path), "ghost")
    assert r.exit_code == 5
    assert "critic, planner" in r.output
    rows = [json.loads(x) for x in tce("list", str(path) + "/agent", "--json").output.split("\n")
            if x]
    assert [x["name"] for x in rows if x["default"]] == ["critic"]


def test_list_missing_and_malformed(tmp_path: Path) -> None:
    assert tce("list", str(tmp_path / "nope")).exit_code == 2
    bad = tmp_path / "bad.msg.md"
    bad.write_text("---\nagents: [unclosed\n---\n\n## %% x[^a]\n\n[^a]: [markdown] k=\"open\n")
    r = tce("list", str(bad))
    assert r.exit_code == 3
    assert "bad.msg.md" in r.output


def test_list_rejects_broken_front_matter_yaml_like_chat(tmp_path: Path) -> None:
    bad = tmp_path / "fm.msg.md"
    text = "---\nagents: [unclosed\n---\n\n## %% hi[^a]\n\n[^a]: [markdown]\n\nhi\n"
    bad.write_text(text)
    for item in (str(bad), str(tmp_path / "fm") + "/agent"):
        r = tce("list", item)
        assert r.exit_code == 3, r.output
        assert len(r.output.strip().splitlines()) == 1
        assert re.match(r"tce: .*fm\.msg\.md:2: the front matter is not valid YAML", r.output)
        assert "INDEX" not in r.output
    assert bad.read_text() == text


def test_set_default_unknown_agent_lists_default_too(tmp_path: Path) -> None:
    path = tmp_path / "readme.msg.md"
    shutil.copy(DATA / "basic.msg.md", path)
    r = tce("set-default", str(path), "nosuch")
    assert r.exit_code == 5
    assert r.output.strip() == "tce: unknown agent 'nosuch'; known agents: critic, planner, default"
    assert tce("set-default", str(path), "default").exit_code == 0


def test_list_agents_shows_the_model_the_default_agent_uses(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "e.msg.md"
    path.write_text("## %% hi[^a]\n\n[^a]: [markdown]\n\nhi\n\n"
                    "### %%%[^a.1]\n\n[^a.1]: [default] model=\"env-model\"\n\nhello\n")
    monkeypatch.setenv("PERCENT_AGENT_MODEL", "env-model,backup")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-shown")
    r = tce("list", str(path) + "/agent")
    assert r.exit_code == 0, r.output
    header, first, second = r.output.splitlines()
    assert header.split() == ["NAME", "SOURCE", "DEFAULT", "TOOLS", "MCP_IGNORED", "LIMITS",
                              "MODEL", "PROVIDER", "ENDPOINT", "KEY"]
    assert first.split()[:4] == ["default", "environment", "*", "env-model"]
    assert second.split()[0] == "backup"  # one line per model
    assert "sk-not-shown" not in r.output
    monkeypatch.delenv("PERCENT_AGENT_MODEL")
    out = tce("list", str(path) + "/agent", "--json").output
    (row,) = [json.loads(x) for x in out.splitlines()]
    assert row == {"name": "default", "source": "environment", "models": ["gpt-4o-mini"],
                   "tools": [], "default": True, "limits": [],
                   "routes": [{"model": "gpt-4o-mini", "provider": "openai",
                               "endpoint": "https://api.openai.com/v1",
                               "key": "OPENAI_API_KEY"}], "mcp_ignored": {}}
    # with presets, default is listed but the first preset answers
    shutil.copy(DATA / "agents.msg.md", tmp_path / "agents.msg.md")
    rows = [json.loads(x) for x in
            tce("list", str(tmp_path / "agents") + "/agent", "--json").output.splitlines()]
    assert [(x["name"], x["default"]) for x in rows] == [
        ("reviewer", True), ("bare", False), ("default", False)]
