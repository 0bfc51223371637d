"""The trust API JupyterLab's dialog calls (``/percent-agent/trust``), through a real
jupyter_server (pytest-jupyter) with the extension enabled as a user enables it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_percent_agent import trust


async def test_a_notebook_folder_is_untrusted_until_the_user_trusts_it(
        jp_fetch, jp_root_dir: Path) -> None:
    (jp_root_dir / "clone" / "toolbox").mkdir(parents=True)
    (jp_root_dir / "clone" / "chat.msg.md").write_text("")
    r = await jp_fetch("percent-agent", "trust", params={"path": "clone/chat.msg.md"})
    assert json.loads(r.body) == {"folder": str((jp_root_dir / "clone").resolve()),
                                  "trusted": False}
    r = await jp_fetch("percent-agent", "trust", method="POST",
                       body=json.dumps({"path": "clone/chat.msg.md"}))
    assert json.loads(r.body)["trusted"] is True
    assert trust.is_trusted(jp_root_dir / "clone")
    assert not trust.is_trusted(jp_root_dir)  # the notebook's folder only


async def test_a_clone_inside_a_trusted_folder_asks(jp_fetch, jp_root_dir: Path, git) -> None:
    git(jp_root_dir / "vendor" / "lib", "init", "-q")
    (jp_root_dir / "vendor" / "lib" / "chat.msg.md").write_text("")
    trust.trust_folder(jp_root_dir)
    r = await jp_fetch("percent-agent", "trust", params={"path": "vendor/lib/chat.msg.md"})
    assert json.loads(r.body)["trusted"] is False
    r = await jp_fetch("percent-agent", "trust", method="POST",
                       body=json.dumps({"path": "vendor/lib/chat.msg.md"}))
    assert json.loads(r.body)["trusted"] is True


@pytest.mark.parametrize("path", ["../outside/x.msg.md", "/../x.msg.md", "", "a/../../x"])
async def test_paths_outside_the_root_are_refused(jp_fetch, jp_root_dir: Path,
                                                  path: str) -> None:
    with pytest.raises(HTTPClientError) as err:
        await jp_fetch("percent-agent", "trust", method="POST", body=json.dumps({"path": path}))
    assert err.value.code == 400
    assert trust.trusted_folders() == []


async def test_the_api_needs_the_servers_authentication(jp_fetch, jp_root_dir: Path) -> None:
    with pytest.raises(HTTPClientError) as err:
        await jp_fetch("percent-agent", "trust", method="POST",
                       body=json.dumps({"path": "x.msg.md"}), headers={"Authorization": ""})
    assert err.value.code in (401, 403)
    assert trust.trusted_folders() == []


async def test_a_missing_folder_is_not_found(jp_fetch, jp_root_dir: Path) -> None:
    with pytest.raises(HTTPClientError) as err:
        await jp_fetch("percent-agent", "trust", method="POST",
                       body=json.dumps({"path": "/etc/x.msg.md"}))  # root/etc: absent
    assert err.value.code == 404


async def test_a_config_that_cannot_be_written_is_the_status_of_its_kind_not_500(
        jp_fetch, jp_root_dir: Path, user_config_dir: Path) -> None:
    """The handler turned every failure to record the trust into a 500 by hand; its status
    is the kind table's (a config.toml that is a folder: a malformed file, 400)."""
    from jupyter_percent_agent.errors import TABLE, Kind

    (jp_root_dir / "clone").mkdir()
    (user_config_dir / "config.toml").mkdir()
    with pytest.raises(HTTPClientError) as err:
        await jp_fetch("percent-agent", "trust", method="POST",
                       body=json.dumps({"path": "clone/chat.msg.md"}))
    assert err.value.code == TABLE[Kind.BAD_FILE].http_status
    message = json.loads(err.value.response.body)["message"]
    assert "config.toml" in message and "\n" not in message


async def test_the_folder_a_refusal_names_is_trusted_if_it_is_under_the_root(
        jp_fetch, jp_root_dir: Path) -> None:
    """The dialog trusts the folder the agent kernel's refusal names, not one the notebook's
    path or an error's text suggests."""
    folder = jp_root_dir / "clone"
    folder.mkdir()
    r = await jp_fetch("percent-agent", "trust", params={"folder": str(folder)})
    assert json.loads(r.body) == {"folder": str(folder.resolve()), "trusted": False}
    r = await jp_fetch("percent-agent", "trust", method="POST",
                       body=json.dumps({"folder": str(folder)}))
    assert json.loads(r.body)["trusted"] is True
    assert trust.is_trusted(folder) and not trust.is_trusted(jp_root_dir)


@pytest.mark.parametrize("folder", ["/", "clone", "{root}/..", "{root}/clone/../.."])
async def test_a_folder_outside_the_root_or_relative_is_refused(
        jp_fetch, jp_root_dir: Path, folder: str) -> None:
    (jp_root_dir / "clone").mkdir()
    with pytest.raises(HTTPClientError) as err:
        await jp_fetch("percent-agent", "trust", method="POST",
                       body=json.dumps({"folder": folder.format(root=jp_root_dir)}))
    assert err.value.code == 400
    assert trust.trusted_folders() == []
