"""The trust boundary, end to end: files from elsewhere cannot send the user's keys anywhere,
run the code beside them, read or write outside their folder, or raise the step limit.

Each test here failed on the code before the trust boundary existed (see docs/security.md).
The "attacker's host" is the project's local model server: it logs every header it receives.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent import trust
from jupyter_percent_agent.cli import main
from jupyter_percent_agent.runtime import RunOptions, run_turn
from jupyter_percent_agent.testing.environment import tce
from tests.helpers.toolboxes import marker_toolbox

# -- finding 1: a file steals the user's API keys --------------------------------------------


@pytest.mark.parametrize("name", ["sk-proj-abc123secret", "GPU KEY", "$GPU_BOX_KEY", "1KEY", ""])
def test_key_env_that_is_no_variable_name_is_refused_and_nothing_stored(
        name: str, user_config_dir: Path) -> None:
    """``--key-env "$GPU_BOX_KEY"`` passes the key itself: it was stored in the config as a
    variable's name and printed back (``key from $sk-...``)."""
    result = CliRunner().invoke(
        main, ["trust", "--endpoint", "http://gpu-box:8000/v1", "--key-env", name])
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [
        "tce: --key-env takes the name of an environment variable (letters, digits and _, "
        "not starting with a digit), not a key: nothing stored"]
    assert trust.load_config().endpoints == ()
    if name:
        assert not any(name in p.read_text() for p in user_config_dir.iterdir() if p.is_file())


def test_the_percent_agent_key_goes_only_with_the_users_own_api_base(
        tmp_path: Path, keys) -> None:
    """PERCENT_AGENT_API_KEY belongs to PERCENT_AGENT_API_BASE. With no base set, a file's
    agent naming any provider (some take their host from the model's name) gets no key of
    ours: litellm picks that provider's own variable, or none."""
    from jupyter_percent_agent.runtime.agents import agent_from_mapping
    from jupyter_percent_agent.runtime.models import spec_for

    route = trust.route_for(None, folder=tmp_path, agent="a")
    assert route.api_key is None and route.api_base is None
    agent = agent_from_mapping("a", {"models": ["groq/llama-3.1-8b-instant"]},
                               source="preset")
    spec = spec_for(agent, [{"role": "user", "content": "hi"}])
    assert spec.api_key is None and spec.api_base is None


# -- finding 3: code beside a file runs outside the sandbox ----------------------------------

@pytest.mark.parametrize("cell", [
    '[tool_call] tool="ping" args=\'{}\'', '[toolchain] tools=["ping"] params=\'{}\''])
def test_untrusted_toolbox_is_never_imported_by_tool_cells(tmp_path: Path, keys, cell) -> None:
    folder = tmp_path / "clone"
    marker = marker_toolbox(folder)
    path = folder / "calls.msg.md"
    path.write_text(f"# %% call[^c1]\n[^c1]: {cell}\n")
    with pytest.raises(trust.TrustError) as err:
        asyncio.run(run_turn(fmt.read(path), "c1", RunOptions(base_dir=folder)))
    assert err.value.kind == "toolbox" and err.value.folder == folder
    assert not marker.exists()


def test_trusted_toolbox_is_imported(tmp_path: Path, keys) -> None:
    folder = tmp_path / "mine"
    marker = marker_toolbox(folder)
    path = folder / "calls.msg.md"
    path.write_text('# %% call[^c1]\n[^c1]: [tool_call] tool="ping" args=\'{}\'\n')
    trust.trust_folder(folder)
    run = asyncio.run(run_turn(fmt.read(path), "c1", RunOptions(base_dir=folder)))
    assert run.status == "ok", run.error
    assert marker.exists()
    assert fmt.output_text(run.outputs[0]) == "pong"


# -- finding 4 and 5: [async](FILE) and include: reach outside the folder ---------------------


def test_async_link_through_a_symlink_out_is_refused(tmp_path: Path, keys) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "key.pem").write_text("PRIVATE KEY")
    os.symlink(tmp_path / "private", folder / "results")
    path = folder / "a.msg.md"
    path.write_text('# %% job[^j1]\n[^j1]: [async](results/key.pem) id="1"\n\nPoem.\n')
    with pytest.raises(trust.TrustError):
        asyncio.run(run_turn(fmt.read(path), "j1", RunOptions(base_dir=folder)))


# -- finding 8: max_steps from a file is unbounded -------------------------------------------

def test_step_limit_may_be_lowered_by_a_file_never_raised() -> None:
    cfg = trust.Config()
    assert trust.bound("max_steps", None, folder=None, config=cfg).value == 8
    assert trust.bound("max_steps", 3, folder=None, config=cfg).value == 3
    assert trust.bound("max_steps", 500, folder=None, config=cfg).value == 8
    assert trust.bound("max_steps", 20, folder=None,
                       config=trust.Config(limits={"max_steps": 30})).value == 20


def test_step_limit_in_a_trusted_folder_stops_at_the_hard_cap(tmp_path: Path) -> None:
    trust.trust_folder(tmp_path)
    assert trust.bound("max_steps", 20, folder=tmp_path).value == 20
    assert trust.bound("max_steps", 10_000, folder=tmp_path).value == \
        trust.LIMITS["max_steps"].hard == 50


@pytest.mark.parametrize("asked", [True, "many", -3, 0, 2.5, float("nan")])
def test_a_budget_that_is_no_number_of_its_kind_is_the_users_limit(asked) -> None:
    assert trust.bound("max_steps", asked, folder=None).value == 8


def test_every_budget_has_a_limit_of_the_users_that_their_config_changes() -> None:
    write = {"max_steps": 3, "task_max_steps": 7, "retries": 0, "timeout": 1.5,
             "tool_timeout": 2, "tool_limit": 4, "max_output_tokens": 100,
             "code_output_bytes": 5000, "context_window": 1000}
    assert set(write) == set(trust.LIMITS)
    trust.config_path().parent.mkdir(parents=True, exist_ok=True)
    trust.config_path().write_text("".join(f"{k} = {v}\n" for k, v in write.items()))
    for name, value in write.items():
        assert trust.bound(name, 10**9, folder=None).value == value
        assert trust.bound(name, None, folder=None).value == value
    trust.config_path().write_text("tool_timeout = \"long\"\n")
    with pytest.raises(trust.ConfigError, match=r"tool_timeout .* must be a positive number"):
        trust.load_config()


# -- the trust store -------------------------------------------------------------------------

def test_trust_list_untrust(tmp_path: Path) -> None:
    folder = tmp_path / "work"
    (folder / "sub").mkdir(parents=True)
    assert not trust.is_trusted(folder / "sub")
    result = tce("trust", str(folder))
    assert result.exit_code == 0, result.output
    assert trust.is_trusted(folder / "sub") and not trust.is_trusted(tmp_path)
    listed = tce("trust", "--list")
    assert str(folder.resolve()) in listed.output
    assert tce("untrust", str(folder)).exit_code == 0
    assert not trust.is_trusted(folder)
    assert "not trusted" in tce("untrust", str(folder)).output


@pytest.mark.parametrize("which", ["home", "above home", "root"])
def test_trusting_home_or_a_folder_above_it_warns_that_every_clone_below_is_trusted(
        tmp_path: Path, monkeypatch, which: str) -> None:
    home = tmp_path / "users" / "ada"
    home.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    folder = {"home": home, "above home": home.parent, "root": Path("/")}[which]
    result = CliRunner().invoke(main, ["trust", str(folder)])
    assert result.exit_code == 0, result.output
    assert trust.is_trusted(home / "Downloads" / "clone")
    assert "warning:" in result.stderr and "every folder below it" in result.stderr


def test_trusting_a_project_folder_gives_no_warning(tmp_path: Path, monkeypatch) -> None:
    home = tmp_path / "ada"
    (home / "projects" / "trip").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    result = CliRunner().invoke(main, ["trust", str(home / "projects" / "trip")])
    assert result.exit_code == 0 and "warning" not in result.output


def test_trust_is_kept_in_the_users_config_dir_never_in_the_project(tmp_path: Path) -> None:
    folder = tmp_path / "clone"
    folder.mkdir()
    tce("trust", str(folder))
    assert list(folder.iterdir()) == []
    cfg = trust.config_path()
    assert cfg.is_file() and stat.S_IMODE(cfg.stat().st_mode) == 0o600
    assert str(folder.resolve()) in cfg.read_text()


def test_a_symlink_into_a_trusted_folder_is_not_trusted(tmp_path: Path) -> None:
    trusted = tmp_path / "trusted"
    trusted.mkdir()
    trust.trust_folder(trusted)
    clone = tmp_path / "clone"
    clone.mkdir()
    os.symlink(clone, trusted / "link")  # the link lives in the trusted folder...
    assert not trust.is_trusted(clone)      # ...but the clone itself is not trusted
    assert trust.is_trusted(trusted / "link") is False


def test_broken_config_is_named(tmp_path: Path) -> None:
    trust.config_path().parent.mkdir(parents=True, exist_ok=True)
    trust.config_path().write_text("trusted = [1, 2\n")
    with pytest.raises(trust.ConfigError, match=r"config\.toml"):
        trust.load_config()


# -- finding 9: the private folder under /tmp -------------------------------------------------

def test_private_dir_owned_by_someone_else_or_open_is_refused(tmp_path: Path,
                                                               monkeypatch) -> None:
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    folder = tmp_path / f"percent-agent-{os.getuid()}"
    folder.mkdir(mode=0o777)
    os.chmod(folder, 0o777)  # another local user made it, writable for all
    with pytest.raises(trust.TrustError, match="not a private folder"):
        trust.private_dir()
    os.chmod(folder, 0o700)
    assert trust.private_dir() == folder


def test_locks_live_in_the_private_dir(tmp_path: Path, monkeypatch) -> None:
    from jupyter_percent_agent.runtime import store

    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    evil = tmp_path / f"percent-agent-{os.getuid()}"
    evil.mkdir()
    os.chmod(evil, 0o777)
    with pytest.raises(trust.TrustError):
        with store.locked(tmp_path / "x.msg.md"):
            pass


# -- finding 7: a lone surrogate lost the reply and every tool step ---------------------------

