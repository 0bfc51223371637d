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
