"""Running cells: the ATTP loop with a real sandbox, summaries, code and tool-call cells."""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.cli import main
from jupyter_percent_agent.runtime import history as hist
from jupyter_percent_agent.runtime.reply import attempt_lines
from jupyter_percent_agent.runtime.run import Run
from jupyter_percent_agent.runtime.summaries import SUMMARY_PROMPT
from jupyter_percent_agent.runtime.turn import RunOptions, run_turn
from jupyter_percent_agent.testing.openai_server import OpenAIServer, Reply
from tests.paths import TEST_DATA

DATA = TEST_DATA

# A model that calls a tool, then answers (scripted ATTP replies, shared with other tests).
STEP = (DATA / "runtime" / "weather_step.toml").read_text()
ANSWER = (DATA / "runtime" / "weather_answer.toml").read_text()
HEADER = ("---\nagents:\n  helper:\n    models: [test-model]\n    tools: [weather]\n"
          "    system_prompt: You help with weather.\n---\n")


@pytest.fixture
def tool_file(tmp_path: Path, trusted) -> Path:
    trusted(tmp_path)
    (tmp_path / "toolbox").mkdir()
    shutil.copy(DATA / "toolbox" / "weather.py", tmp_path / "toolbox" / "weather.py")
    path = tmp_path / "w.msg.md"
    path.write_text(HEADER)
    return path


def _cells(path: Path) -> list[dict]:
    return hist.conversation_cells(fmt.read(path))


def test_attp_loop_end_to_end(tool_file: Path, env, openai_server: OpenAIServer) -> None:
    openai_server.script(STEP, ANSWER)
    r = CliRunner().invoke(main, ["chat", str(tool_file), "-m", "Weather in Paris?"],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "18.5 °C" in r.output
    first = openai_server.chat_requests[0].messages
    assert first[0]["role"] == "system"
    assert "You help with weather." in first[0]["content"]
    assert "def get_weather" in first[0]["content"]  # tools rendered for the model
    second = openai_server.chat_requests[1].messages
    assert second[-2] == {"role": "assistant", "content": STEP}
    assert second[-1]["role"] == "user" and "18.5" in second[-1]["content"]
    (cell,) = _cells(tool_file)
    cid = fmt.cell_id(cell)
    outs = cell["outputs"]
    kinds = [fmt.output_kind(o) for o in outs]
    assert kinds == ["reply", "tool_call", "tool_result", "reply"]
    assert fmt.output_attrs(outs[0])["reasoning"] == 1
    assert "reasoning" not in fmt.output_attrs(outs[3])
    assert fmt.output_text(outs[3]) == "It is **18.5 °C** in Paris."
    assert 'get_weather("Paris")' in fmt.output_text(outs[1])
    assert "18.5" in fmt.output_text(outs[2])
    text = tool_file.read_text()
    ids = re.findall(r"^\[\^(" + re.escape(cid) + r"\.[^\]]+)\]:", text, re.M)
    call_ids = [i for i in ids if re.fullmatch(re.escape(cid) + r"\.[0-9a-f]{6}", i)]
    assert len(call_ids) == 1
    assert f"{call_ids[0]}.1" in ids


def test_invalid_attp_gets_one_repair_round(tool_file: Path, env,
                                            openai_server: OpenAIServer) -> None:
    bad = 'thought = """unclosed\n[tool_call]\nstatus = "success"\n'
    openai_server.script(bad, ANSWER)
    r = CliRunner().invoke(main, ["chat", str(tool_file), "-m", "Weather?"])
    assert r.exit_code == 0, r.output
    repair = openai_server.chat_requests[1].messages[-1]["content"]
    assert "line" in repair and "column" in repair
    outs = _cells(tool_file)[0]["outputs"]
    assert fmt.output_text(outs[-1]) == "It is **18.5 °C** in Paris."


def test_prose_after_the_repair_round_is_the_answer(tool_file: Path, env,
                                                    openai_server: OpenAIServer) -> None:
    openai_server.script("Just prose, no TOML = [", "Still prose: it is sunny.")
    r = CliRunner().invoke(main, ["chat", str(tool_file), "-m", "Weather?"])
    assert r.exit_code == 0
    outs = _cells(tool_file)[0]["outputs"]
    assert fmt.output_text(outs[-1]) == "Still prose: it is sunny."
    assert len(openai_server.chat_requests) == 2


def test_step_limit_ends_in_an_error(tool_file: Path, env, openai_server: OpenAIServer,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    openai_server.responder = lambda body: STEP
    tool_file.write_text(HEADER.replace("    tools: [weather]\n",
                                        "    tools: [weather]\n    max_steps: 2\n"))
    r = CliRunner().invoke(main, ["chat", str(tool_file), "-m", "loop forever"])
    assert r.exit_code == 1
    outs = _cells(tool_file)[0]["outputs"]
    assert fmt.output_kind(outs[-1]) == "error"
    assert len(openai_server.chat_requests) == 2


def test_summary_made_once_stored_and_used(tmp_path: Path, env,
                                           openai_server: OpenAIServer) -> None:
    path = tmp_path / "s.msg.md"
    shutil.copy(DATA / "runtime" / "basic.msg.md", path)

    def respond(body: dict) -> str:
        if body["messages"][0]["content"] == SUMMARY_PROMPT:
            return "SUMMARY: knight beats dragon."
        return "ok"

    openai_server.responder = respond
    assert CliRunner().invoke(main, ["chat", str(path), "-m", "next"]).exit_code == 0
    reqs = openai_server.chat_requests
    assert len(reqs) == 2 and reqs[0].messages[0]["content"] == SUMMARY_PROMPT
    sent = "\n".join(m["content"] for m in reqs[1].messages)
    assert "SUMMARY: knight beats dragon." in sent and "dragon and a knight" not in sent
    story = _cells(path)[2]
    attrs = fmt.cell_attrs(story)
    assert attrs["summary"] == "SUMMARY: knight beats dragon."
    assert attrs["summary_hash"] == hist.content_hash(story)
    openai_server.reset()
    openai_server.responder = respond
    assert CliRunner().invoke(main, ["chat", str(path), "-m", "again"]).exit_code == 0
    assert len(openai_server.chat_requests) == 1  # not summarized again
    # changing the cell makes the summary stale: made again
    text = path.read_text().replace("a dragon and a knight", "a dragon and two knights")
    path.write_text(text)
    openai_server.reset()
    openai_server.responder = respond
    assert CliRunner().invoke(main, ["chat", str(path), "-m", "third"]).exit_code == 0
    assert len(openai_server.chat_requests) == 2


def test_code_cell_runs_in_the_sandbox(tmp_path: Path) -> None:
    text = ("## %% Compute[^c1]\n\n[^c1]: [code] language=\"python\"\n\n"
            "```python\nprint('hello', 6 * 7)\n__result__ = [1, 2]\n```\n")
    nb = fmt.reads(text, path="c.msg.md")
    cid = fmt.cell_id(hist.conversation_cells(nb)[0])
    run = asyncio.run(run_turn(nb, cid, RunOptions(base_dir=tmp_path)))
    assert run.status == "ok", run.error
    kinds = [fmt.output_kind(o) for o in run.outputs]
    assert "stream" in kinds
    assert "hello 42" in "".join(fmt.output_text(o) for o in run.outputs)


@pytest.mark.parametrize(("code", "word"), [
    ("print('hi')\n__result__ = 1\n", "success"),
    ("x = 1 / 0\n", "error"),
    ("print('x' * 2_000_000)\n", "output_limit"),
])
def test_a_code_cells_outputs_keep_the_status_words_files_have_always_had(
        tmp_path: Path, code: str, word: str) -> None:
    """The sandbox's status is the one RunStatus (and a reason) now; a message file keeps
    the words every earlier version wrote on the outputs (success, error, the limit)."""
    text = ("## %% Compute[^c1]\n\n[^c1]: [code] language=\"python\"\n\n"
            f"```python\n{code}```\n")
    nb = fmt.reads(text, path="c.msg.md")
    run = asyncio.run(run_turn(nb, "c1", RunOptions(base_dir=tmp_path)))
    (cell,) = [c for c in nb["cells"] if fmt.cell_id(c) == "c1"]
    cell["outputs"] = list(run.outputs)
    assert cell["outputs"]
    saved = fmt.reads(fmt.writes(nb, path="c.msg.md"), path="c.msg.md")
    (back,) = [c for c in saved["cells"] if fmt.cell_id(c) == "c1"]
    assert {fmt.output_attrs(o, back)["status"] for o in back["outputs"]} == {word}


def test_code_cell_error_is_stderr(tmp_path: Path) -> None:
    text = ("## %% Boom[^c1]\n\n[^c1]: [code] language=\"python\"\n\n"
            "```python\nprint('before')\nx = 1 / 0\n```\n")
    nb = fmt.reads(text, path="c.msg.md")
    run = asyncio.run(run_turn(nb, "c1", RunOptions(base_dir=tmp_path)))
    assert run.status == "error"
    assert "ZeroDivisionError" in "".join(fmt.output_text(o) for o in run.outputs)
    assert [fmt.output_id(o) for o in run.outputs] == [f"c1.{i + 1}"
                                                        for i in range(len(run.outputs))]


def test_tool_call_and_toolchain_cells_need_no_model(tool_file: Path) -> None:
    text = (HEADER + "\n## %% Weather[^t1]\n\n"
            "[^t1]: [tool_call] tool=\"get_weather\" args='{\"city\": \"Oslo\"}'\n\n"
            "## %% Unknown[^t2]\n\n[^t2]: [tool_call] tool=\"nope\" args='{}'\n")
    nb = fmt.reads(text, path=str(tool_file))
    opts = RunOptions(base_dir=tool_file.parent)
    run = asyncio.run(run_turn(nb, "t1", opts))
    assert run.status == "ok", run.error
    (out,) = run.outputs
    assert fmt.output_kind(out) == "tool_result"
    assert '"temperature": 4.0' in fmt.output_text(out)
    bad = asyncio.run(run_turn(nb, "t2", opts))
    assert bad.status == "error" and "nope" in (bad.error or "")


def test_a_toolbox_tool_past_its_timeout_says_so(tmp_path: Path, trusted) -> None:
    """A [tool_call] cell (and a task step) whose toolbox tool ran past tool_timeout failed
    with "TimeoutError: " and nothing after it."""
    trusted(tmp_path)
    (tmp_path / "toolbox").mkdir()
    (tmp_path / "toolbox" / "slow.py").write_text(
        "import time\n\n\ndef wait(seconds: float) -> float:\n"
        '    """Wait.\n\n    Args:\n        seconds: how long\n    """\n'
        "    time.sleep(seconds)\n    return seconds\n")
    text = ("## %% Wait[^w1]\n\n"
            "[^w1]: [tool_call] tool=\"wait\" args='{\"seconds\": 5}' timeout=0.5\n")
    nb = fmt.reads(text, path=str(tmp_path / "w.msg.md"))
    run = asyncio.run(run_turn(nb, "w1", RunOptions(base_dir=tmp_path)))
    assert run.status == "error"
    (out,) = run.outputs
    assert fmt.output_text(out) == "TimeoutError: wait did not return within 0.5 s (tool_timeout)"
    assert run.error == fmt.output_text(out)


def test_async_cell_lands_in_its_file_then_shows_it(tmp_path: Path, env,
                                                   openai_server: OpenAIServer) -> None:
    text = ("## %% Long job[^j1]\n\n[^j1]: [async](results/j1.md) id=\"123\"\n\n"
            "Summarize the report.\n")
    nb = fmt.reads(text, path=str(tmp_path / "a.msg.md"))
    openai_server.script("The report, summarized.")
    opts = RunOptions(base_dir=tmp_path)
    run = asyncio.run(run_turn(nb, "j1", opts))
    assert run.status == "ok"
    assert (tmp_path / "results" / "j1.md").read_text() == "The report, summarized."
    assert openai_server.last_messages[-1]["content"] == "Summarize the report."
    openai_server.reset()
    again = asyncio.run(run_turn(nb, "j1", opts))
    assert not openai_server.chat_requests
    (out,) = again.outputs
    assert fmt.output_text(out) == "The report, summarized."
    assert fmt.output_attrs(out)["status"] == "done"


def test_toolchain_feeds_each_result_to_the_next(tmp_path: Path, trusted) -> None:
    trusted(tmp_path)
    (tmp_path / "toolbox").mkdir()
    shutil.copy(DATA / "toolbox" / "text.py", tmp_path / "toolbox" / "text.py")
    text = ("## %% Chain[^k1]\n\n[^k1]: [toolchain] tools=[\"shout\", \"word_count\"] "
            "params='{\"text\": \"hello big world\"}'\n")
    nb = fmt.reads(text, path=str(tmp_path / "k.msg.md"))
    run = asyncio.run(run_turn(nb, "k1", RunOptions(base_dir=tmp_path)))
    assert run.status == "ok", run.error
    assert [fmt.output_attrs(o)["tool"] for o in run.outputs] == ["shout", "word_count"]
    assert "HELLO BIG WORLD" in fmt.output_text(run.outputs[0])
    assert fmt.output_text(run.outputs[1]).strip() == "3"


def test_a_reply_cut_mid_stream_is_kept_marked_incomplete(tmp_path: Path, env,
                                                          openai_server: OpenAIServer,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """The connection breaks after some text, and the retry fails before any: the text the
    user saw is kept (incomplete=true), then the [error] says why."""
    monkeypatch.setenv("PERCENT_AGENT_RETRIES", "1")
    openai_server.script(Reply("one two three four five six", chunk_size=4, disconnect_after=3),
                         Reply.http_error(500), "never asked")
    path = tmp_path / "cut.msg.md"
    r = CliRunner().invoke(main, ["chat", str(path), "-m", "Is anyone there?"])
    assert r.exit_code == 1
    reply, error = _cells(path)[0]["outputs"]
    assert fmt.output_kind(reply) == "reply"
    assert fmt.output_text(reply) == "one two thre"
    assert fmt.output_attrs(reply)["incomplete"] is True
    assert fmt.output_kind(error) == "error"


def test_an_error_lists_its_attempts_only_when_they_add_something() -> None:
    down = "cannot reach the model server at the configured api_base (connection refused)"
    assert attempt_lines([f"m: {down}"] * 3, down) == []
    assert attempt_lines([f"a: {down}", f"a: {down}", "b: no API key found for b"],
                         "no API key found for b") == [f"a: {down} (2 attempts)",
                                                       "b: no API key found for b"]
    assert attempt_lines(["a: HTTP 500", "a: HTTP 503"], "HTTP 503") == ["a: HTTP 500",
                                                                         "a: HTTP 503"]


def test_a_tool_call_nonce_of_digits_only_does_not_number_the_replies() -> None:
    cell = fmt.new_message("Weather?", cell_id="c")
    cell["outputs"] = [fmt.reply_output("step", agent="a", out_id="c.1"),
                       fmt.tool_call_output("get_weather", "x = 1", out_id="c.472438")]
    assert Run("c", existing=cell["outputs"]).next_output_id() == "c.2"  # not c.472439


def test_an_agent_with_many_tools_is_offered_the_ones_that_fit_each_message(
        tmp_path: Path, env, openai_server: OpenAIServer, trusted) -> None:
    """40 tools, tool_limit 12 (the default): the currency tool is among those described to
    the model for a currency question; the reply records which were offered."""
    shutil.copytree(DATA / "index" / "toolbox", tmp_path / "toolbox")
    trusted(tmp_path)
    path = tmp_path / "many.msg.md"
    path.write_text("---\nagents:\n  desk:\n    models: [test-model]\n    tools: [all]\n---\n")
    openai_server.script('answer = """About 40,000 yen."""\n')
    r = CliRunner().invoke(main, ["chat", str(path), "-m", "how many yen for 250 euros"],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    system = openai_server.last_messages[0]["content"]
    described = re.findall(r"^def (\w+)\(", system, re.M)
    assert "convert_currency" in described and len(described) <= 12
    (reply,) = [o for o in _cells(path)[0]["outputs"] if fmt.output_kind(o) == "reply"]
    assert fmt.output_attrs(reply)["tools_offered"] == described


SEED_TOOL = '''# %% 工具定义[^tool_def]
[^tool_def]: [tool] name="weather" description="获取天气信息"

```python
def get_weather(city: str) -> str:
    """获取指定城市的天气信息"""
    return f"{city} 25°C 晴朗"
```

# %% 天气查询[^weather_query]
[^weather_query]: [tool_call] tool="weather" args='{"city":"北京"}'
'''


def test_the_seeds_tool_cell_example_works_as_written(tmp_path: Path) -> None:
    """Seed 000, 工具作为特殊 Agent: a [tool] cell defines weather, a [tool_call] calls it."""
    path = tmp_path / "weather.msg.md"
    path.write_text(SEED_TOOL)
    run = asyncio.run(run_turn(fmt.read(path), "weather_query", RunOptions(base_dir=tmp_path)))
    assert run.status == "ok", run.error
    (out,) = run.outputs
    assert fmt.output_kind(out) == "tool_result"
    assert fmt.output_text(out) == "北京 25°C 晴朗"
    assert fmt.output_attrs(out)["status"] == "success"


def test_tool_cells_run_in_the_sandbox_never_in_this_process(tmp_path: Path) -> None:
    """A [tool] cell is untrusted text: its code cannot import, open files or see the host."""
    marker = tmp_path / "written-by-the-tool"
    path = tmp_path / "evil.msg.md"
    path.write_text(
        '# %% tool[^t]\n[^t]: [tool] name="steal" description="x"\n\n```python\n'
        f'def steal() -> str:\n    """Steal."""\n    open({str(marker)!r}, "w").write("x")\n'
        '    return "done"\n```\n\n# %% call[^c]\n[^c]: [tool_call] tool="steal" args=\'{}\'\n')
    run = asyncio.run(run_turn(fmt.read(path), "c", RunOptions(base_dir=tmp_path)))
    assert run.status == "error"
    (out,) = run.outputs
    assert fmt.output_attrs(out)["status"] == "fail"
    assert not marker.exists()


def test_an_agent_calls_a_tool_defined_in_the_file(tmp_path: Path, env,
                                                   openai_server: OpenAIServer) -> None:
    """The agent is told of the [tool] cell's tool and its code calls it, in the sandbox,
    in a folder nobody trusted."""
    path = tmp_path / "agent.msg.md"
    path.write_text("---\nagents:\n  helper:\n    models: [test-model]\n    tools: [weather]\n"
                    "---\n\n" + SEED_TOOL.split("# %% 天气查询")[0])
    openai_server.script(
        'thought = "ask the tool"\n\n[tool_call]\nstatus = "success"\ntarget = "weather"\n'
        "code = '''\n__result__ = weather(city=\"北京\")\n'''\n",
        'answer = """北京今天 25°C。"""\n')
    r = CliRunner().invoke(main, ["chat", str(path), "-m", "北京天气?"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    system = openai_server.chat_requests[0].body["messages"][0]["content"]
    assert "def weather(city: str)" in system and "获取天气信息" in system
    result_turn = openai_server.last_messages[-1]["content"]
    assert "北京 25°C 晴朗" in result_turn


def test_turns_without_a_transport_share_one_import_of_litellm(
        env, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch of task runs makes a turn per step and passes no transport: the import thread
    is started once per process and later turns do not wait on it again (it was a thread and
    a thread-pool wait per model call)."""
    from jupyter_percent_agent.runtime import transport

    monkeypatch.setattr(transport, "_default", None)
    started: list[str] = []
    real_start = transport.threading.Thread.start

    def counting_start(self) -> None:
        started.append(self.name)
        real_start(self)

    monkeypatch.setattr(transport.threading.Thread, "start", counting_start)
    nb = fmt.reads("", path="t.msg.md")
    for n in range(3):
        cell = fmt.new_message(f"message {n}")
        nb["cells"].append(cell)
        run = asyncio.run(run_turn(nb, fmt.cell_id(cell)))
        assert run.status == "ok", run.error
    assert started.count("model-client-import") == 1
    assert transport.default_transport() is transport.default_transport()
