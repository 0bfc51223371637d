"""The keys API JupyterLab's "Set up a model" dialog calls (``/percent-agent/keys``), through
a real jupyter_server (pytest-jupyter) with the extension enabled as a user enables it."""

from __future__ import annotations

import json
import logging
import stat

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_percent_agent import trust

SECRET = "sk-from-the-dialog-0123456789"


pytestmark = pytest.mark.usefixtures("no_keys")

async def test_the_dialog_stores_a_key_and_a_default_model_in_the_users_config(
        jp_fetch, user_config_dir, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    r = json.loads((await jp_fetch("percent-agent", "keys")).body)
    assert {"name": "openai", "source": None} in r["providers"]
    assert r["default_model"] == "gpt-4o-mini"
    r = await jp_fetch("percent-agent", "keys", method="POST", body=json.dumps(
        {"provider": "openai", "key": SECRET, "default_model": "gpt-4o"}))
    answer = json.loads(r.body)
    assert SECRET not in r.body.decode()
    assert {"name": "openai", "source": f"config ({user_config_dir / 'keys.json'})"} \
        in answer["providers"]
    assert answer["default_model"] == "gpt-4o"
    assert trust.load_keys() == {"openai": SECRET}
    assert stat.S_IMODE((user_config_dir / "keys.json").stat().st_mode) == 0o600
    assert trust.load_config().default_model == "gpt-4o"
    assert SECRET not in caplog.text


@pytest.mark.parametrize(("body", "says"), [
    ({"provider": "openai", "key": "sk with space"}, "holds spaces"),
    ({"provider": "openai", "key": "sk-a\nsk-b"}, "holds spaces"),
    ({"provider": "no-such", "key": "sk-fine"}, "litellm knows no provider 'no-such'"),
    ({"provider": "openai", "key": 42}, "must be strings"),
    ({"default_model": "two words"}, "not a model name"),
])
async def test_bad_input_is_refused_in_one_line_and_stores_nothing(
        jp_fetch, user_config_dir, body: dict, says: str) -> None:
    with pytest.raises(HTTPClientError) as err:
        await jp_fetch("percent-agent", "keys", method="POST", body=json.dumps(body))
    assert err.value.code == 400
    text = err.value.response.body.decode()
    assert says in json.loads(text)["message"]
    assert "sk" not in json.loads(text)["message"].replace("tce keys", "")
    assert not (user_config_dir / "keys.json").exists()
    assert trust.load_config().default_model is None


async def test_the_keys_api_needs_the_servers_authentication(jp_fetch, user_config_dir) -> None:
    for method, body in (("GET", None), ("POST", json.dumps({"provider": "openai",
                                                              "key": SECRET}))):
        with pytest.raises(HTTPClientError) as err:
            await jp_fetch("percent-agent", "keys", method=method, body=body,
                           headers={"Authorization": ""})
        assert err.value.code in (401, 403)
    assert not (user_config_dir / "keys.json").exists()


async def test_a_config_that_cannot_be_read_is_the_status_of_its_kind_not_500(
        jp_fetch, user_config_dir) -> None:
    """The handler turned an OSError into a 500 by hand; its status is the kind table's
    (a config.toml that is a folder: a malformed file), with one line naming the file."""
    from jupyter_percent_agent.errors import TABLE, Kind

    (user_config_dir / "config.toml").mkdir()
    with pytest.raises(HTTPClientError) as err:
        await jp_fetch("percent-agent", "keys", method="POST",
                       body=json.dumps({"default_model": "gpt-4o"}))
    assert err.value.code == TABLE[Kind.BAD_FILE].http_status
    message = json.loads(err.value.response.body)["message"]
    assert "config.toml" in message and "\n" not in message


async def test_a_keys_file_that_is_not_private_is_the_status_of_its_kind_not_500(
        jp_fetch, user_config_dir) -> None:
    from jupyter_percent_agent.errors import report

    keys = user_config_dir / "keys.json"
    keys.write_text('{"openai": "sk-shared-0123456789"}')
    keys.chmod(0o644)
    with pytest.raises(trust.KeysError) as refused:
        trust.load_keys()
    with pytest.raises(HTTPClientError) as err:
        await jp_fetch("percent-agent", "keys")
    assert err.value.code == report(refused.value).http_status != 500
    assert "chmod 600" in json.loads(err.value.response.body)["message"]


SERVER_KEY = "sk-dialog-server-0123456789"


async def test_the_dialog_stores_the_users_own_server_with_its_key(
        jp_fetch, user_config_dir, openai_server, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    assert json.loads((await jp_fetch("percent-agent", "keys")).body)["server"] is None
    r = await jp_fetch("percent-agent", "keys", method="POST", body=json.dumps(
        {"server": openai_server.url, "server_key": SERVER_KEY, "default_model": "test-model"}))
    answer = json.loads(r.body)
    assert answer["server"] == {"url": openai_server.url, "source": "config", "has_key": True}
    assert answer["default_model"] == "test-model" and answer["warning"] is None
    assert SERVER_KEY not in r.body.decode() and SERVER_KEY not in caplog.text
    (asked,) = openai_server.requests  # its model list, asked with its key
    assert asked.headers["authorization"] == f"Bearer {SERVER_KEY}"
    assert trust.load_keys() == {openai_server.url: SERVER_KEY}
    assert trust.load_config().api_base == openai_server.url
    # saved again with the key field empty: the key stored for that same URL stays
    r = await jp_fetch("percent-agent", "keys", method="POST",
                       body=json.dumps({"server": openai_server.url}))
    assert json.loads(r.body)["server"]["has_key"] is True
    r = await jp_fetch("percent-agent", "keys", method="POST",
                       body=json.dumps({"remove_server": True}))
    assert json.loads(r.body)["server"] is None and trust.load_keys() == {}


@pytest.mark.parametrize(("server", "status", "says"), [
    ("http://me:pw@127.0.0.1:9/v1", 400, "holds a user name or password"),
    ("file:///etc/passwd", 400, "is not an http:// or https:// URL"),
    ("http://127.0.0.1:9/v1", 502, "cannot list the models at http://127.0.0.1:9/v1: "
                                   "cannot connect (Connection refused); nothing stored"),
])
async def test_a_server_the_dialog_cannot_use_is_one_line_and_stores_nothing(
        jp_fetch, user_config_dir, server: str, status: int, says: str) -> None:
    with pytest.raises(HTTPClientError) as err:
        await jp_fetch("percent-agent", "keys", method="POST", body=json.dumps(
            {"server": server, "server_key": SERVER_KEY}))
    message = json.loads(err.value.response.body)["message"]
    assert err.value.code == status and says in message and "\n" not in message
    assert SERVER_KEY not in message and "pw" not in message.replace("passw", "")
    assert list(user_config_dir.iterdir()) == []
