"""``tce chat`` end to end: litellm's real client against the local server, through click's
CliRunner and through real ``tce`` subprocesses."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.cli import main
from jupyter_percent_agent.runtime import history as hist
from jupyter_percent_agent.testing.environment import tce, tce_command
from jupyter_percent_agent.testing.openai_server import OpenAIServer, Reply
from tests.helpers.conversations import cells, replies
from tests.paths import TEST_DATA

DATA = TEST_DATA / "runtime"


def test_chat_creates_file_streams_and_saves(tmp_path: Path, env, openai_server) -> None:
    openai_server.script(Reply("Paris is the capital.", chunk_size=3))
    result = tce("chat", str(tmp_path / "geo"), "-m", "Capital of France?")
    assert result.exit_code == 0, result.output
    assert "Paris is the capital." in result.output
    path = tmp_path / "geo.msg.md"
    cs = cells(path)
    assert len(cs) == 1
    assert fmt.message_text(cs[0]) == "Capital of France?"
    (reply,) = replies(cs[0])
    assert fmt.output_text(reply) == "Paris is the capital."
    attrs = fmt.output_attrs(reply)
    assert attrs["agent"] == "default" and attrs["model"] == "test-model"
    for key in ("time", "duration", "tokens_in", "tokens_out"):
        assert key in attrs
    text = path.read_text()
    assert "127.0.0.1" not in text and "api_base" not in text and "no-key" not in text
    assert openai_server.last_messages == [{"role": "user", "content": "Capital of France?"}]


def test_second_message_sends_the_history(tmp_path: Path, env, openai_server) -> None:
    path = tmp_path / "c.msg.md"
    openai_server.script("first answer", "second answer")
    assert tce("chat", str(path), "-m", "one").exit_code == 0
    assert tce("chat", str(tmp_path / "c"), "-m", "two").exit_code == 0
    assert openai_server.last_messages == [
        {"role": "user", "content": "one"}, {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": "two"}]
    assert len(cells(path)) == 2


def test_presets_system_prompt_and_named_agent(tmp_path: Path, env, openai_server) -> None:
    path = tmp_path / "b.msg.md"
    shutil.copy(DATA / "basic.msg.md", path)
    assert tce("chat", str(path), "critic", "-m", "Be harsh").exit_code == 0
    body = openai_server.chat_requests[-1].body
    assert body["model"] == "critic-model"
    msgs = body["messages"]
    assert msgs[0] == {"role": "system", "content": "You criticise."}
    assert msgs[-1] == {"role": "user", "content": "Be harsh"}
    sent = "\n".join(m["content"] for m in msgs)
    assert "do not send this secret" not in sent  # history="none"
    assert fmt.output_attrs(replies(cells(path)[-1])[0])["agent"] == "critic"


def test_stdin_message_and_json(tmp_path: Path, env, openai_server) -> None:
    openai_server.script("json reply")
    result = tce("chat", str(tmp_path / "j"), "--json", "-m", "-", input="from stdin\n")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["reply"] == "json reply" and data["status"] == "ok"
    assert list(data) == ["file", "cell", "agent", "status", "reply", "error", "usage",
                          "dropped", "outputs"]  # what scripts read, from Run.to_json()
    assert data["outputs"][0]["kind"] == "reply"
    assert openai_server.last_messages[-1]["content"] == "from stdin\n"


def test_folder_makes_a_new_file(tmp_path: Path, env) -> None:
    folder = tmp_path / "notes"
    assert tce("chat", str(folder) + "/", "-m", "Plan the trip to Rome").exit_code == 0
    assert tce("chat", str(folder) + "/", "-m", "Plan the trip to Rome").exit_code == 0
    files = sorted(p.name for p in folder.iterdir())
    assert len(files) == 2
    assert all(f.endswith(".msg.md") and "plan-the-trip-to-rome" in f for f in files)


def test_a_trailing_slash_on_a_file_is_one_line_not_a_traceback(tmp_path: Path, env,
                                                                  openai_server) -> None:
    """``tce chat notes/trip.msg.md/`` (a shell's completion left the slash) crashed with a
    FileExistsError traceback."""
    path = tmp_path / "trip.msg.md"
    shutil.copy(DATA / "basic.msg.md", path)
    before = path.read_bytes()
    r = CliRunner().invoke(main, ["chat", f"{path}/", "-m", "hi"])
    assert r.exit_code == 2, r.output
    assert r.output.strip().splitlines() == [
        f"tce: {path}: not a folder (a trailing / names a folder to make a new file in)"]
    assert path.read_bytes() == before and openai_server.chat_requests == []


def test_plain_markdown_needs_force(tmp_path: Path, env, openai_server) -> None:
    doc = tmp_path / "doc.md"
    original = "# My document\n\nSome text that must stay.\n"
    doc.write_text(original)
    result = tce("chat", str(doc), "-m", "Is this clear?")
    assert result.exit_code == 2
    assert doc.read_text() == original
    openai_server.script("Yes.")
    assert tce("chat", str(doc), "--force", "-m", "Is this clear?").exit_code == 0
    text = doc.read_text()
    assert "# My document\n\nSome text that must stay.\n" in text
    assert "Discussion" in text and "Yes." in text
    sent = openai_server.last_messages
    assert "Some text that must stay." in sent[0]["content"]  # the document is the context
    assert sent[-1] == {"role": "user", "content": "Is this clear?"}
    assert tce("chat", str(doc), "-m", "Again?").exit_code == 0  # no --force needed now
    assert len(cells(doc)) == 2


@pytest.mark.parametrize("front", ["", "---\r\ntitle: Spring\r\n---\r\n"])
def test_force_on_a_crlf_markdown_file_keeps_it_crlf_and_its_front_matter(
        tmp_path: Path, env, openai_server, front: str) -> None:
    """The CRLF front matter was not seen: a second, LF, front matter went on top of it (the
    user's title became body text), and the section was added with LF line ends."""
    doc = tmp_path / "doc.md"
    body = "# My document\r\n\r\nSome text that must stay.\r\n"
    doc.write_bytes((front + body).encode())
    openai_server.script("Yes.")
    assert tce("chat", str(doc), "--force", "-m", "Is this clear?").exit_code == 0
    data = doc.read_bytes().decode()
    assert data.count("\n") == data.count("\r\n")  # every line ends as the file's did
    assert data.startswith("---\r\n") and data.count("---\r\n") == 2
    assert body in data and "message_section: Discussion\r\n" in data
    assert ("title: Spring\r\n" in data) == bool(front)
    assert fmt.front_matter(fmt.read(doc)).get("title") == ("Spring" if front else None)
    assert "Yes." in data and len(cells(doc)) == 1


def test_a_message_file_named_in_capitals_is_a_message_file(tmp_path: Path, env,
                                                             openai_server) -> None:
    """NOTES.MSG.MD is a message file wherever the name is judged (format.is_message_path),
    not a plain Markdown file that needs --force."""
    path = tmp_path / "NOTES.MSG.MD"
    path.write_text("")
    openai_server.script("Yes.")
    assert tce("chat", str(path), "-m", "Is this a chat?").exit_code == 0
    assert "Discussion" not in path.read_text() and len(cells(path)) == 1


SCRIPT_SAMPLE = TEST_DATA / "format" / "script" / "analysis.msg.py"


def test_chat_on_a_script_saves_replies_as_comments_and_it_still_runs(
        tmp_path: Path, env, openai_server) -> None:
    path = tmp_path / "analysis.msg.py"
    shutil.copy(SCRIPT_SAMPLE, path)
    reply = 'Yes.\n# %% not a cell\nraise SystemExit("a reply is not code")'
    openai_server.script(reply, reply)  # the summary the file's history asks for, the reply
    result = tce("chat", str(path), "-m", "Is the check right?\nprint('nor is a message')")
    assert result.exit_code == 0, result.output
    text = path.read_text()
    assert '\n# raise SystemExit("a reply is not code")\n' in text
    assert "\n# \\# %% not a cell\n" in text and "\n# print('nor is a message')\n" in text
    cs = cells(path)
    assert fmt.message_text(cs[-1]) == "Is the check right?\nprint('nor is a message')"
    assert fmt.output_text(replies(cs[-1])[0]).startswith("Yes.\n# %% not a cell")
    listed = tce("list", str(path))
    assert listed.exit_code == 0 and "Is the check right?" in listed.output
    run = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                         cwd=tmp_path, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "loaded 3\nchecked 6\n"


def test_a_script_that_is_not_a_message_file_is_never_written(tmp_path: Path, env) -> None:
    script = tmp_path / "analysis.py"
    original = "print('an ordinary script')\n"
    script.write_text(original)
    for args in ((), ("--force",)):
        result = tce("chat", str(script), *args, "-m", "hello")
        assert result.exit_code == 3
        assert "analysis.py" in result.output and "not a message file" in result.output
        assert "tce chat " in result.output and "analysis.msg.py" in result.output
        assert len(result.output.strip().splitlines()) == 1
        assert script.read_text() == original


def test_exclude_include_and_save(tmp_path: Path, env, openai_server) -> None:
    other = tmp_path / "other.msg.md"
    shutil.copy(DATA / "basic.msg.md", other)
    path = tmp_path / "main.msg.md"
    for m in ("m1", "m2", "m3"):
        openai_server.script(f"r-{m}")
        assert tce("chat", str(path), "-m", m).exit_code == 0
    r = tce("chat", str(path), "-e", "[1..2]", "-i", f"{other}/[1]", "-m", "m4")
    assert r.exit_code == 0, r.output
    sent = [m["content"] for m in openai_server.last_messages]
    assert "m1" not in sent and "m2" not in sent and "m3" in sent
    assert sent[0] == "What is 2+2?" and sent[1] == "It is 4."
    # without --save nothing was remembered
    tce("chat", str(path), "-m", "m5")
    assert "m1" in [m["content"] for m in openai_server.last_messages]
    r = tce("chat", str(path), "-e", "[1]", "-i", f"{other}/[1]", "--save", "-m", "m6")
    assert r.exit_code == 0
    tce("chat", str(path), "-m", "m7")
    sent = [m["content"] for m in openai_server.last_messages]
    assert "m1" not in sent and "What is 2+2?" in sent
    nb = fmt.read(path)
    # saved relative to the file: a file may only include files of its own folder
    assert fmt.front_matter(nb)["include"] == ["other.msg.md/[1]"]
    assert fmt.cell_attrs(hist.conversation_cells(nb)[0])["history"] == "exclude"


def test_context_window_trimming_is_recorded(tmp_path: Path, env, openai_server) -> None:
    path = tmp_path / "t.msg.md"
    path.write_text("---\nagents:\n  small:\n    models: [test-model]\n"
                    "    context_window: 300\n    max_output_tokens: 100\n"
                    "    system_prompt: KEEP THIS SYSTEM PROMPT\n---\n")
    for i in range(4):
        openai_server.script("word " * 60)
        assert tce("chat", str(path), "-m", f"question {i} " + "filler " * 40).exit_code == 0
    sent = openai_server.last_messages
    assert sent[0]["content"] == "KEEP THIS SYSTEM PROMPT"
    assert sent[-1]["content"].startswith("question 3")
    assert not any(m["content"].startswith("question 0") for m in sent)
    last = replies(cells(path)[-1])[0]
    dropped = fmt.output_attrs(last)["dropped"]
    assert dropped and fmt.cell_id(cells(path)[0]) in dropped


def test_model_fallback_recorded(tmp_path: Path, env, openai_server) -> None:
    openai_server.responder = lambda b: (Reply.http_error(500) if b["model"] == "bad"
                                         else "fallback ok")
    r = tce("chat", str(tmp_path / "f"), "--model", "bad,good", "-m", "hi")
    assert r.exit_code == 0
    reply = replies(cells(tmp_path / "f.msg.md")[0])[0]
    assert fmt.output_attrs(reply)["model"] == "good"


def test_every_model_failing_is_exit_1_and_an_error_output(tmp_path: Path, env,
                                                          openai_server) -> None:
    openai_server.responder = lambda b: Reply.http_error(429, "quota exhausted")
    r = CliRunner().invoke(main, ["chat", str(tmp_path / "e"), "-m", "hi"])
    assert r.exit_code == 1
    assert "quota exhausted" in r.output
    (cell,) = cells(tmp_path / "e.msg.md")
    kinds = [fmt.output_kind(o) for o in cell["outputs"]]
    assert kinds == ["error"]
    assert fmt.message_text(cell) == "hi"


def test_malformed_file_is_left_untouched(tmp_path: Path, env) -> None:
    bad = tmp_path / "bad.msg.md"
    text = ("---\nagents: [unclosed\n---\n\n## %% hi[^a]\n\n"
            "[^a]: [markdown] x=\"unterminated\n\nhi\n")
    bad.write_text(text)
    r = CliRunner().invoke(main, ["chat", str(bad), "-m", "hello"])
    assert r.exit_code in (3, 5), r.output
    assert bad.read_text() == text


def test_read_only_file_is_refused_in_one_line_and_left_as_it_was(
        tmp_path: Path, env, openai_server) -> None:
    """``chmod a-w`` protects a conversation: tce chat must not rename a new copy over it
    (the atomic write would, in a folder the user may write), nor call the model."""
    path = tmp_path / "ro.msg.md"
    shutil.copy(DATA / "basic.msg.md", path)
    before = path.read_bytes()
    path.chmod(0o444)
    r = CliRunner().invoke(main, ["chat", str(path), "-m", "hello"])
    assert r.exit_code == 2, r.output
    assert r.output.strip().splitlines() == [f"tce: {path}: the file is read-only: "
                                             "nothing written (chmod u+w to allow it)"]
    assert path.read_bytes() == before
    assert (path.stat().st_mode & 0o777) == 0o444
    assert openai_server.chat_requests == []


@pytest.mark.parametrize(("name", "value"), [
    ("PERCENT_AGENT_RETRIES", "abc"), ("PERCENT_AGENT_RETRIES", "-1"),
    ("PERCENT_AGENT_BACKOFF", "x"), ("PERCENT_AGENT_TIMEOUT", "abc"),
    ("PERCENT_AGENT_TIMEOUT", "0")])
def test_a_bad_number_in_the_environment_is_one_line_before_anything_is_written(
        tmp_path: Path, env, openai_server, monkeypatch, name: str, value: str) -> None:
    """A traceback (retries, backoff), "no model to call" (retries -1) or a silent default
    (timeout), with the message saved and no reply: now one line naming the variable."""
    monkeypatch.setenv(name, value)
    r = CliRunner().invoke(main, ["chat", str(tmp_path / "n"), "-m", "hello"])
    assert r.exit_code == 2, r.output
    (line,) = r.output.strip().splitlines()
    assert line.startswith(f"tce: {name}={value!r}: ") and "Traceback" not in r.output
    assert not (tmp_path / "n.msg.md").exists() and openai_server.chat_requests == []


def test_a_misspelt_history_value_is_one_line_not_a_cell_sent_to_the_model(
        tmp_path: Path, env, openai_server) -> None:
    """``history="exlcude"`` meant to keep a cell out: it was read as include and sent."""
    path = tmp_path / "h.msg.md"
    text = "## %% Secret[^a]\n[^a]: [markdown] history=\"exlcude\"\n\nmy salary is 1\n"
    path.write_text(text)
    r = CliRunner().invoke(main, ["chat", str(path), "-m", "hello"])
    assert r.exit_code == 3, r.output
    assert r.output.strip().splitlines() == [
        f"tce: {path}: cell a: history='exlcude' is not one of include, exclude, summary, "
        "auto, none (or true/false, yes/no, 1/0, pinned)"]
    assert path.read_text() == text and openai_server.chat_requests == []
    listed = CliRunner().invoke(main, ["list", str(path)])
    assert listed.exit_code == 3 and "history='exlcude'" in listed.output


@pytest.mark.parametrize(("args", "model_env", "what"), [
    (["--model", " , "], None, "--model ' , ' names no model"),
    ([], ",", "PERCENT_AGENT_MODEL=',' names no model")])
def test_a_model_list_that_names_no_model_is_one_line(
        tmp_path: Path, env, openai_server, monkeypatch, args, model_env, what) -> None:
    """An IndexError traceback, the message saved with no reply."""
    if model_env is not None:
        monkeypatch.setenv("PERCENT_AGENT_MODEL", model_env)
    r = CliRunner().invoke(main, ["chat", str(tmp_path / "m"), *args, "-m", "hello"])
    assert r.exit_code == 2, r.output
    assert r.output.strip().splitlines() == [f"tce: {what}"]
    assert not (tmp_path / "m.msg.md").exists() and openai_server.chat_requests == []


@pytest.mark.parametrize("models", ['""', '[" "]', "[]", '[gpt-4o, ""]'])
def test_a_preset_with_a_blank_model_name_is_a_bad_agent(tmp_path: Path, env, openai_server,
                                                        models: str) -> None:
    """``models: ""`` called a model named "" (``[]`` was refused, a blank name was not)."""
    path = tmp_path / "p.msg.md"
    text = f"---\nagents:\n  p: {{models: {models}}}\n---\n"
    path.write_text(text)
    r = CliRunner().invoke(main, ["chat", str(path), "-m", "hello"])
    assert r.exit_code == 5, r.output
    assert r.output.strip().splitlines() == [
        "tce: agent 'p': models must be a model name or a list of them"]
    assert path.read_text() == text and openai_server.chat_requests == []


def test_a_nul_byte_in_a_message_or_reply_does_not_lock_the_file_out_of_tce(
        tmp_path: Path, env, openai_server) -> None:
    """A NUL piped in (or in a reply) was written raw; from then on every tce command
    refused the file as "not a text file ... check the name"."""
    path = tmp_path / "nul.msg.md"
    openai_server.script(Reply("reply \x00 with a NUL"))
    assert tce("chat", str(path), "-m", "-", input="log line a\x00b\n").exit_code == 0
    listed = tce("list", str(path))
    assert listed.exit_code == 0, listed.output
    assert tce("chat", str(path), "-m", "still here?").exit_code == 0
    first, _ = cells(path)
    assert fmt.message_text(first) == "log line a\x00b\n"  # kept exactly
    assert fmt.output_text(replies(first)[0]) == "reply \x00 with a NUL"
    utf16 = tmp_path / "notepad.msg.md"  # UTF-16 without a BOM: still no text file
    utf16.write_bytes("## %% Hi[^a]\n[^a]: [markdown]\n\nhello\n".encode("utf-16-le"))
    refused = tce("chat", str(utf16), "-m", "hi")
    assert refused.exit_code == 3 and "not a text file" in refused.output


@pytest.mark.parametrize("value", ["[{a: 1}]", "5", "[notes, 7]"])
def test_a_front_matter_include_that_is_no_selection_is_one_line(
        tmp_path: Path, env, openai_server, value: str) -> None:
    """``include: [{a: 1}]`` was an AttributeError traceback (``include: 5`` a TypeError)."""
    path = tmp_path / "fi.msg.md"
    text = f"---\ninclude: {value}\n---\n"
    path.write_text(text)
    r = CliRunner().invoke(main, ["chat", str(path), "-m", "hi"])
    assert r.exit_code == 3, r.output
    (line,) = r.output.strip().splitlines()
    assert line.startswith(f"tce: {path}: the front matter's include: ") and "selection" in line
    assert path.read_text() == text and openai_server.chat_requests == []


def test_bad_front_matter_yaml_is_exit_3_naming_the_line(tmp_path: Path, env) -> None:
    bad = tmp_path / "fm.msg.md"
    text = "---\nagents: [unclosed\n---\n\n## %% hi[^a]\n\n[^a]: [markdown]\n\nhi\n"
    bad.write_text(text)
    r = CliRunner().invoke(main, ["chat", str(bad), "-m", "hello"])
    assert r.exit_code == 3
    assert re.search(r"fm\.msg\.md:\d+: the front matter is not valid YAML", r.output)
    assert bad.read_text() == text


def test_bad_agent_cell_is_exit_5_on_one_line(tmp_path: Path, env) -> None:
    bad = tmp_path / "ag.msg.md"
    bad.write_text("## %% a[^a]\n\n[^a]: [markdown] definition=\"agent\" name=\"x\"\n\n"
                   "```yaml\nmodels: [a\n```\nprompt\n")
    r = CliRunner().invoke(main, ["chat", str(bad), "-m", "hello"])
    assert r.exit_code == 5
    assert len(r.output.strip().splitlines()) == 1
    assert "agent 'x'" in r.output and "line 1" in r.output


def test_unknown_agent_is_exit_5(tmp_path: Path, env) -> None:
    path = tmp_path / "b.msg.md"
    shutil.copy(DATA / "basic.msg.md", path)
    before = path.read_text()
    r = CliRunner().invoke(main, ["chat", str(path), "nobody", "-m", "hi"])
    assert r.exit_code == 5
    assert "critic, planner" in r.output
    assert path.read_text() == before


def test_unknown_agent_on_a_file_without_agents_lists_default(tmp_path: Path, env) -> None:
    path = tmp_path / "e.msg.md"
    path.write_text("## %% hi[^a]\n\n[^a]: [markdown]\n\nhi\n")
    before = path.read_text()
    r = CliRunner().invoke(main, ["chat", str(path), "nosuch", "-m", "hi"])
    assert r.exit_code == 5
    assert r.output.strip() == "tce: unknown agent 'nosuch'; known agents: default"
    assert path.read_text() == before


def test_bad_selection_is_exit_2(tmp_path: Path, env) -> None:
    r = CliRunner().invoke(main, ["chat", str(tmp_path / "x"), "-e", "[a..b]", "-m", "hi"])
    assert r.exit_code == 2
    assert not (tmp_path / "x.msg.md").exists()


# -- real subprocesses ---------------------------------------------------------------------



def _sub_env(env: dict[str, str]) -> dict[str, str]:
    return {**os.environ, **env}


def test_subprocess_chat(tmp_path: Path, env, openai_server) -> None:
    openai_server.script("from a subprocess")
    p = subprocess.run(tce_command("chat", str(tmp_path / "s"), "-m", "hi"), env=_sub_env(env),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "from a subprocess"


def test_unreachable_server_one_line_no_traceback(tmp_path: Path, env) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    e = {**_sub_env(env), "PERCENT_AGENT_API_BASE": f"http://127.0.0.1:{port}/v1",
         "PERCENT_AGENT_RETRIES": "0"}
    p = subprocess.run(tce_command("chat", str(tmp_path / "u"), "-m", "hi"), env=e,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    assert lines[0] == (f"tce: cannot reach the model server at http://127.0.0.1:{port}/v1 "
                        "(connection refused)")
    assert "Traceback" not in p.stderr


def test_stopped_model_server_names_its_url_and_records_no_url(tmp_path: Path, env,
                                                               monkeypatch) -> None:
    server = OpenAIServer().start()
    url = server.url
    server.stop()
    monkeypatch.setenv("PERCENT_AGENT_API_BASE", url)
    monkeypatch.setenv("PERCENT_AGENT_RETRIES", "1")
    r = CliRunner().invoke(main, ["chat", str(tmp_path / "e"), "-m", "unreachable"])
    assert r.exit_code == 1
    assert r.stderr.splitlines()[-1] == (f"tce: cannot reach the model server at {url} "
                                         "(connection refused)")
    assert "InternalServerError" not in r.stderr
    (cell,) = cells(tmp_path / "e.msg.md")
    (err,) = cell["outputs"]
    assert err["ename"] == "APIConnectionError"
    assert err["evalue"] == ("cannot reach the model server at the configured api_base "
                             "(connection refused)")
    text = (tmp_path / "e.msg.md").read_text()
    assert url not in text and str(server.port) not in text  # api_base is never written
    r = CliRunner().invoke(main, ["chat", str(tmp_path / "e"), "--json", "-m", "again"])
    assert json.loads(r.stdout)["error"] == (f"cannot reach the model server at {url} "
                                             "(connection refused)")


def test_missing_key_says_which_variable_to_set(tmp_path: Path, env) -> None:
    e = {k: v for k, v in _sub_env(env).items()
         if k not in ("PERCENT_AGENT_API_BASE", "OPENAI_API_KEY", "OPENAI_API_BASE",
                      "OPENAI_BASE_URL")}
    e["PERCENT_AGENT_MODEL"] = "gpt-4o-mini"
    p = subprocess.run(tce_command("chat", str(tmp_path / "k"), "-m", "hi"), env=e,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert lines == ["tce: no API key found for gpt-4o-mini (openai): run tce keys set openai "
                     "or set OPENAI_API_KEY"], p.stderr
    (err,) = cells(tmp_path / "k.msg.md")[0]["outputs"]
    assert err["ename"] == "AuthenticationError"
    assert err["evalue"].startswith("no API key found for gpt-4o-mini")


def test_two_concurrent_chats_lose_nothing(tmp_path: Path, env, openai_server) -> None:
    path = tmp_path / "shared.msg.md"
    openai_server.responder = lambda b: Reply("reply to " + b["messages"][-1]["content"],
                                              chunk_size=2, chunk_delay=0.02)
    procs = [subprocess.Popen(tce_command("chat", str(path), "-m", f"message {i}"),
                              env=_sub_env(env), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    cs = cells(path)
    assert sorted(fmt.message_text(c) for c in cs) == ["message 0", "message 1"]
    for c in cs:
        (reply,) = replies(c)
        assert fmt.output_text(reply) == "reply to " + fmt.message_text(c)


def test_ctrl_c_keeps_a_valid_file_and_the_partial_reply(tmp_path: Path, env,
                                                         openai_server) -> None:
    path = tmp_path / "int.msg.md"
    openai_server.script(Reply("partial " * 200, chunk_size=8, chunk_delay=0.05))
    p = subprocess.Popen(tce_command("chat", str(path), "-m", "long please"), env=_sub_env(env),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=0)
    first = p.stdout.read(8)  # the reply has started streaming
    assert first.startswith("partial")
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    (cell,) = cells(path)
    assert fmt.message_text(cell) == "long please"
    (reply,) = replies(cell)
    assert fmt.output_attrs(reply)["interrupted"] is True
    assert fmt.output_text(reply).startswith("partial")
    assert len(fmt.output_text(reply)) < len("partial " * 200)


def test_ctrl_c_before_any_reply_says_no_reply_was_kept(tmp_path: Path, env,
                                                      openai_server) -> None:
    """It said "a partial reply is kept with interrupted=true" when none had come."""
    path = tmp_path / "wait.msg.md"
    openai_server.script(Reply.slow(30, "too late"))
    p = subprocess.Popen(tce_command("chat", str(path), "-m", "anyone there?"), env=_sub_env(env),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not openai_server.chat_requests and time.monotonic() < deadline:
        time.sleep(0.05)  # the message is saved before the model is called
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    last = err.strip().splitlines()[-1]
    assert last == "[interrupted: the message is saved; no reply had arrived]"
    (cell,) = cells(path)
    assert fmt.message_text(cell) == "anyone there?" and not cell.get("outputs")


def test_warm_helper_serves_the_second_run(tmp_path: Path, env, openai_server) -> None:
    e = {**_sub_env(env), "PERCENT_AGENT_WARM": "1", "PERCENT_AGENT_WARM_IDLE": "20",
         "PERCENT_AGENT_TEST_KEY": str(tmp_path),  # a private helper for this test
         "PERCENT_AGENT_DIRECT": "0"}  # calls that need litellm: what the helper is for
    # a user's environment: nothing litellm-specific set beforehand (tce sets what it needs
    # only when it imports litellm, and must still find the helper before that)
    e.pop("LITELLM_LOCAL_MODEL_COST_MAP", None)
    from jupyter_percent_agent.runtime import helper as warm

    sock = warm.socket_path({k: v for k, v in e.items()})
    code = "import sys; from jupyter_percent_agent.cli import main; main()"
    p = subprocess.run([sys.executable, "-c", code, "chat", str(tmp_path / "w"), "-m", "one"],
                       env=e, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    for _ in range(300):
        if sock.exists():
            break
        time.sleep(0.1)
    assert sock.exists()
    probe = ("import sys, runpy\nsys.argv = ['tce', 'chat', sys.argv[1], '-m', 'two']\n"
             "from jupyter_percent_agent.cli import main\n"
             "try:\n    main()\nexcept SystemExit as e:\n"
             "    print('LITELLM' if 'litellm' in sys.modules else 'NO-LITELLM', file=sys.stderr)\n"
             "    raise\n")
    p = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "w")], env=e,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "NO-LITELLM" in p.stderr
    assert len(replies(cells(tmp_path / "w.msg.md")[1])) == 1
    assert openai_server.last_messages[-1]["content"] == "two"


def test_a_call_straight_to_a_local_server_needs_no_helper_and_no_litellm(
        tmp_path: Path, env, openai_server) -> None:
    """An OpenAI-compatible server takes the direct path: nothing to keep warm, so the first
    chat of the day neither imports litellm nor leaves a helper process behind."""
    from jupyter_percent_agent.runtime import helper as warm

    e = {**_sub_env(env), "PERCENT_AGENT_WARM": "1", "PERCENT_AGENT_WARM_IDLE": "20",
         "PERCENT_AGENT_TEST_KEY": str(tmp_path) + "-direct"}
    sock = warm.socket_path(e)
    probe = ("import sys\nsys.argv = ['tce', 'chat', sys.argv[1], '-m', 'straight']\n"
             "from jupyter_percent_agent.cli import main\n"
             "try:\n    main()\nexcept SystemExit as e:\n"
             "    print('LITELLM' if 'litellm' in sys.modules else 'NO-LITELLM', file=sys.stderr)\n"
             "    raise\n")
    openai_server.script("straight back")
    p = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "d")], env=e,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "straight back" and "NO-LITELLM" in p.stderr
    assert not sock.exists() and not sock.with_suffix(".starting").exists()


def test_ctrl_c_through_the_warm_helper(tmp_path: Path, env, openai_server) -> None:
    from jupyter_percent_agent.runtime import helper as warm

    e = {**_sub_env(env), "PERCENT_AGENT_WARM": "1", "PERCENT_AGENT_WARM_IDLE": "20",
         "PERCENT_AGENT_TEST_KEY": str(tmp_path) + "-int", "PERCENT_AGENT_DIRECT": "0"}
    sock = warm.socket_path(e)
    path = tmp_path / "wi.msg.md"
    p = subprocess.run(tce_command("chat", str(path), "-m", "start the helper"), env=e,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    for _ in range(300):
        if sock.exists():
            break
        time.sleep(0.1)
    assert sock.exists()
    openai_server.script(Reply("partial " * 200, chunk_size=8, chunk_delay=0.05))
    p = subprocess.Popen(tce_command("chat", str(path), "-m", "long please"), env=e,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=0)
    assert p.stdout.read(8).startswith("partial")
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    (reply,) = replies(cells(path)[1])
    assert fmt.output_attrs(reply)["interrupted"] is True
    assert sock.exists()  # the helper lives on (its own session)
    openai_server.script("after the interrupt")
    p = subprocess.run(tce_command("chat", str(path), "-m", "still there?"), env=e,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "after the interrupt"


def test_openai_server_docstring_tells_tce_chat_the_variables_it_reads(
        tmp_path: Path, openai_server, monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_percent_agent.testing import openai_server as server_module

    doc = server_module.__doc__
    assert "PERCENT_AGENT_API_BASE" in doc and "PERCENT_AGENT_MODEL" in doc
    assert "OPENAI_API_BASE" not in doc
    (line,) = [ln.strip() for ln in doc.splitlines() if "tce chat" in ln and "=" in ln]
    assignments = dict(w.split("=", 1) for w in line.split() if re.fullmatch(r"[A-Z_]+=\S+", w))
    assert set(assignments) == {"PERCENT_AGENT_API_BASE", "PERCENT_AGENT_MODEL"}
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    for key in ("PERCENT_AGENT_WARM", "PERCENT_AGENT_BACKOFF"):
        monkeypatch.setenv(key, "0")
    for key, value in assignments.items():  # the documented variables, this server's port
        monkeypatch.setenv(key, openai_server.url if key == "PERCENT_AGENT_API_BASE" else value)
    openai_server.script("hello from the demo server")
    r = tce("chat", str(tmp_path / "demo"), "-m", "hi")
    assert r.exit_code == 0, r.output
    assert "hello from the demo server" in r.output


def test_after_a_failed_message_the_next_sends_no_two_user_turns_in_a_row(
        tmp_path: Path, env, openai_server, monkeypatch) -> None:
    monkeypatch.setenv("PERCENT_AGENT_RETRIES", "0")
    path = tmp_path / "f.msg.md"
    openai_server.script(Reply.http_error(500, "down for a moment"))
    assert tce("chat", str(path), "-m", "First question").exit_code == 1
    openai_server.script("An answer to both.")
    assert tce("chat", str(path), "-m", "Second question").exit_code == 0
    assert openai_server.last_messages == [
        {"role": "user", "content": "First question\n\nSecond question"}]
    # the file keeps both messages as they were written
    assert [fmt.message_text(c) for c in cells(path)] == ["First question", "Second question"]
