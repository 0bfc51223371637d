"""`tce tools list` and `tce tools call`, through click's runner and as a real subprocess."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jupyter_percent_agent.testing.environment import tce
from tests.helpers.toolboxes import BROKEN, TOOLBOX


def test_list_prints_every_tool_with_its_description() -> None:
    code, out, _ = tce("tools", "list", "--toolbox", TOOLBOX, "--no-entry-points")
    assert code == 0
    assert out.count("\ndef ") + out.startswith("def ") == 8
    assert "# get_weather  (module weather: " in out
    assert "def get_weather(city: str, unit: str = 'celsius') -> dict:\n" in out
    assert '        >>> get_weather("Paris")\n' in out


def test_list_selected_modules_and_names() -> None:
    code, out, _ = tce(
        "tools", "list", "--toolbox", TOOLBOX, "-m", "weather", "-m", "camera", "--names"
    )
    assert code == 0
    assert out.splitlines() == ["get_weather", "forecast", "get_camera_live_url"]


def test_list_refuses_a_badly_documented_tool() -> None:
    code, out, err = tce("tools", "list", "--toolbox", BROKEN, "-m", "missing_arg")
    assert code == 4  # a tool that does not load: the tools' exit code, as in tce chat
    assert out == ""
    assert err == (
        f"tce: {BROKEN}/missing_arg.py, module 'missing_arg', tool 'greet': "
        "parameter 'greeting' not documented in Args:\n"
    )


def test_list_unknown_module_is_a_usage_error() -> None:
    code, _, err = tce("tools", "list", "--toolbox", TOOLBOX, "-m", "drone")
    assert code == 2
    assert err.startswith("tce: no tool module or MCP server named 'drone' (tool modules: ")
    assert err.count("\n") == 1


def test_an_unknown_m_names_the_users_mcp_servers_too(user_config_dir: Path) -> None:
    """-m takes a tool module or one of the user's MCP servers: a name that is neither said
    "(known: none)" when the user had servers configured."""
    (user_config_dir / "mcp.json").write_text(
        json.dumps({"mcpServers": {"clock": {"command": "mcp-server-time"}}}))
    code, out, err = tce("tools", "list", "--toolbox", TOOLBOX, "--no-entry-points",
                         "-m", "nosuch")
    assert code == 2 and out == ""
    assert err.startswith("tce: no tool module or MCP server named 'nosuch' ")
    assert "tool modules: " in err and "weather" in err
    assert "your MCP servers: clock" in err
    assert err.count("\n") == 1


def test_call_prints_the_normalized_result_as_json() -> None:
    code, out, err = tce(
        "tools", "call", "forecast", "--args", '{"city": "Oslo", "days": 2}', "--toolbox", TOOLBOX
    )
    assert code == 0, err
    assert json.loads(out) == {
        "data": [4, 5],
        "instruction": "Present the forecast as a Markdown table with one row per day.",
    }


def test_call_async_tool() -> None:
    code, out, _ = tce(
        "tools", "call", "shout", "--args", '{"text": "héllo"}', "--toolbox", TOOLBOX
    )
    assert code == 0
    assert json.loads(out) == {"data": "HÉLLO", "instruction": None}


def test_call_streaming_tool_prints_chunks_on_stderr_result_on_stdout() -> None:
    code, out, err = tce("tools", "call", "spell", "--args", '{"word": "ok"}', "--toolbox", TOOLBOX)
    assert code == 0
    assert err == "o\nk\n"
    assert json.loads(out)["data"] == ["o", "k"]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["divide", "--args", '{"a": 1'], 2, "tce: --args is not valid JSON: Expecting ','"),
        (["divide", "--args", "[1, 2]"], 2, "tce: --args must be a JSON object, not list"),
        (["nope"], 2, "tce: unknown tool 'nope' (known: get_camera_live_url, word_count"),
        (["divide", "--args", '{"a": 1}'], 2, "tce: divide: missing a required argument: 'b'"),
        (
            ["divide", "--args", '{"a": 1, "b": 0}'],
            4,
            "tce: tool 'divide' raised ZeroDivisionError: division by zero",
        ),
        (
            ["get_weather", "--args", '{"city": "Atlantis"}'],
            4,
            "tce: tool 'get_weather' raised ValueError: unknown city: Atlantis",
        ),
    ],
)
def test_call_errors_are_one_line_and_an_exit_code(
    args: list[str], code: int, message: str
) -> None:
    exit_code, out, err = tce("tools", "call", *args, "--toolbox", TOOLBOX)
    assert exit_code == code
    assert out == ""
    assert err.startswith(message)
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_call_non_json_result_is_a_tool_error() -> None:
    code, _, err = tce(
        "tools",
        "call",
        "tags",
        "--args",
        '{"text": "a b"}',
        "--toolbox",
        BROKEN,
        "-m",
        "bad_result",
    )
    assert code == 4  # a tool failed: the same exit code as for tce chat
    assert err == "tce: tags returned data is a set, not a JSON value\n"


def test_default_toolbox_is_the_one_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trusted
) -> None:
    trusted(tmp_path)  # a folder's own toolbox is used by default once it is trusted
    (tmp_path / "toolbox").mkdir()
    (tmp_path / "toolbox" / "local.py").write_text(
        'def here() -> str:\n    """Say where."""\n    return "local"\n'
    )
    monkeypatch.chdir(tmp_path)
    code, out, _ = tce("tools", "call", "here", "--no-entry-points")
    assert code == 0 and json.loads(out)["data"] == "local"


# ---- the installed command, in a real process


def test_tools_errors_start_with_tce_like_every_other_command(tmp_path: Path) -> None:
    _, _, list_err = tce("list", str(tmp_path / "no-such-file"))
    _, _, tools_err = tce("tools", "call", "nope", "--toolbox", TOOLBOX)
    assert list_err.startswith("tce: ")
    assert tools_err.startswith("tce: unknown tool 'nope'")
    assert "Error:" not in tools_err


def test_a_cloned_folders_toolbox_is_not_imported_by_default(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, user_config_dir: Path,
        trusted) -> None:
    """`tce tools list` in a folder the user has not trusted does not import ./toolbox (its
    top level would run as the user, keys and all); it says how to allow it. Trusted, or
    named with --toolbox, it loads."""
    (tmp_path / "toolbox").mkdir()
    marker = tmp_path / "imported.marker"
    (tmp_path / "toolbox" / "notes.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).touch()\n\n"
        "def ping() -> str:\n    \"\"\"Answer pong.\"\"\"\n    return 'pong'\n")
    monkeypatch.chdir(tmp_path)
    for args in (["list"], ["call", "ping"]):
        code, out, err = tce("tools", *args, "--no-entry-points")
        assert code == 6, err
        assert f"tce trust {tmp_path}" in err and "--toolbox" in err
        assert not marker.exists()
    code, out, _ = tce("tools", "list", "--toolbox", "toolbox", "--no-entry-points", "--names")
    assert code == 0 and out.split() == ["ping"] and marker.exists()
    marker.unlink()
    trusted(tmp_path)
    code, out, _ = tce("tools", "call", "ping", "--no-entry-points")
    assert code == 0 and json.loads(out)["data"] == "pong"
