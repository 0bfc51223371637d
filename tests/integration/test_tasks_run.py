"""Running task workflows: the seed's blog example end to end through litellm's real client and
the local model server, failures and how they are handled, the transcript, resume after a real
SIGKILL, and the ``[task]`` cell entry point the kernel calls."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.cli import main
from jupyter_percent_agent.runtime.events import Delta, OutputMade
from jupyter_percent_agent.tasks import load_sop, resume_task, run_task
from jupyter_percent_agent.tasks.cell import is_task_cell, run_task_cell
from jupyter_percent_agent.testing.environment import tce_on_terminal
from jupyter_percent_agent.testing.openai_server import OpenAIServer, Reply
from tests.paths import TEST_DATA

DATA = TEST_DATA / "sop"
START = {"标题": "春天", "用户原始输入": "写一篇关于春天的博客"}

OUTLINE = "生成一个清晰的3-5小节大纲"
ANALYZE = "请分析下面这个大纲"
REFINE = "请改进大纲"
PARAGRAPH = "生成一个至少300字的博客段落"
CHECK_PARAGRAPH = "请检查以下段落"


def last_user(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def blog_model(body: dict[str, Any]) -> str:
    """The seed workflow's model: a short outline (the validator fails it, retries do not
    help, the error route refines it), a short paragraph the first time and a long one when
    told why, and an LLM validator that judges the paragraph it is shown."""
    user = last_user(body)
    if OUTLINE in user:
        return '```json\n["引言", "正文"]\n```'
    if ANALYZE in user:
        return "大纲缺少历史和展望。"
    if REFINE in user:
        return '["引言", "历史", "现状", "展望"]'
    if PARAGRAPH in user:
        return "春天来了。" * (80 if "Feedback on the previous attempt" in user else 1)
    if CHECK_PARAGRAPH in user:
        paragraph = user.split("paragraph:\n", 1)[1].split("\n\n---", 1)[0]
        if len(paragraph) < 100:
            return f'status = "fail"\nerror_type = "过短"\nmessage = "段落只有 {len(paragraph)} 字"'
        return '```toml\nstatus = "pass"\n```'
    raise AssertionError(f"unexpected prompt: {user[:200]}")


@pytest.fixture
def blog(tmp_path: Path, trusted) -> Path:
    """A copy of the seed's blog project: sop/, toolbox/ (trusted: its toolbox runs)."""
    shutil.copytree(DATA / "seed_blog", tmp_path / "blog")
    trusted(tmp_path / "blog")
    return tmp_path / "blog"


@pytest.fixture
def model(local_model: OpenAIServer) -> OpenAIServer:
    local_model.responder = blog_model
    return local_model


def prompts(server: OpenAIServer, marker: str) -> list[str]:
    return [last_user(r.body) for r in server.chat_requests if marker in last_user(r.body)]


def steps_of(path: Path) -> list[tuple[str, str, int]]:
    nb = fmt.read(path)
    return [(a["task_id"], a["task_type"], a["attempt"]) for a in
            (fmt.cell_attrs(c) for c in nb["cells"]) if "task_id" in a]


def write_doc(root: Path, task_id: str, text: str) -> None:
    path = root / f"{task_id}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\ntask_id: {task_id}\n" + text.lstrip())


# -- the seed's blog workflow --------------------------------------------------------------

def test_the_seed_blog_workflow_runs_end_to_end(blog: Path, model: OpenAIServer) -> None:
    result = run_task(blog / "sop", "blog/generate_blog", START)
    assert result.status == "ok", result.error
    ctx = result.context
    assert ctx["大纲"] == ["引言", "历史", "现状", "展望"]
    assert len(ctx["段落"][0]) == 400
    assert ctx["配图"].startswith("https://images.example/")
    assert ctx["校验结果"] == {"status": "pass", "error_type": "", "message": ""}
    assert steps_of(result.transcript) == [
        ("blog/generate_blog", "plan", 1),
        ("blog/generate_outline", "execute", 1), ("blog/validate_outline", "validate", 1),
        ("blog/generate_outline", "execute", 2), ("blog/validate_outline", "validate", 2),
        ("blog/generate_outline", "execute", 3), ("blog/validate_outline", "validate", 3),
        ("blog/handle_outline_not_detailed", "plan", 1),
        ("blog/analyze_outline", "execute", 1), ("blog/refine_outline", "execute", 1),
        ("blog/validate_outline", "validate", 4),
        ("blog/write_paragraphs", "plan", 1),
        ("blog/write_paragraph", "execute", 1), ("blog/validate_paragraph", "validate", 1),
        ("blog/write_paragraph", "execute", 2), ("blog/validate_paragraph", "validate", 2),
        ("blog/generate_images", "execute", 1)]
    assert result.steps == 17


def test_retries_carry_the_verdicts_message_and_validators_see_their_inputs(
        blog: Path, model: OpenAIServer) -> None:
    run_task(blog / "sop", "blog/generate_blog", START)
    first, *retries = prompts(model, OUTLINE)
    assert "请为主题【春天】" in first and "Feedback" not in first
    assert len(retries) == 2
    assert all("Feedback on the previous attempt (fix this):\n大纲只有 2 个小节，至少需要 3 个"
               in p for p in retries)
    check = prompts(model, CHECK_PARAGRAPH)[0]
    assert "Inputs:\nparagraph:\n春天来了。" in check  # not in its template: appended
    assert 'status = "pass"' in check  # the verdict's answer form
    # the document's agent answers (its system prompt); without one, the environment's
    outline = next(r for r in model.chat_requests if OUTLINE in last_user(r.body))
    assert outline.messages[0] == {"role": "system", "content": "你是一位认真的中文博客作者。"}
    paragraph = next(r for r in model.chat_requests if PARAGRAPH in last_user(r.body))
    assert [m["role"] for m in paragraph.messages] == ["user"]
    # every step is sent alone: no earlier step leaks into a later prompt
    assert all(len(r.messages) <= 2 for r in model.chat_requests)


def test_the_transcript_is_a_message_file_with_a_cell_per_step_and_the_context_last(
        blog: Path, model: OpenAIServer) -> None:
    import nbformat

    result = run_task(blog / "sop", "blog/generate_blog", START)
    path = result.transcript
    assert path.parent == blog / "runs" and path.name.endswith(".msg.md")
    nb = fmt.read(path)
    nbformat.validate(nbformat.from_dict(nb))  # what JupyterLab opens
    header = fmt.front_matter(nb)["task_run"]
    assert header["task"] == "blog/generate_blog" and header["sop"] == "../sop"
    assert header["context"] == START
    cells = [c for c in nb["cells"] if fmt.document_part(c) is None]
    outline = cells[1]
    assert fmt.cell_title(outline) == "blog/generate_outline"
    attrs = fmt.cell_attrs(outline)
    assert {k: attrs[k] for k in ("task_id", "task_type", "attempt", "history", "agent")} == {
        "task_id": "blog/generate_outline", "task_type": "execute", "attempt": 1,
        "history": "exclude", "agent": "writer"}
    assert fmt.message_text(outline).startswith("请为主题【春天】生成一个清晰的3-5小节大纲")
    assert [fmt.output_kind(o) for o in outline["outputs"]] == ["reply"]
    validator = cells[2]
    assert fmt.cell_kind(validator) == "tool_call"
    assert fmt.cell_attrs(validator)["args"] == {"input": ["引言", "正文"]}
    kinds = [(fmt.output_kind(o), fmt.output_attrs(o).get("status")) for o in validator["outputs"]]
    assert kinds == [("tool_result", "success"), ("reply", "fail")]
    verdict = fmt.output_attrs(validator["outputs"][1])
    assert verdict["error_type"] == "不够详细"
    assert verdict["then"] == "retry blog/generate_outline then validate again"
    state = cells[-1]
    assert fmt.cell_kind(state) == "raw" and fmt.cell_title(state) == "Context"
    assert fmt.cell_attrs(state) == {"task_state": "succeeded", "steps": 17}
    assert json.loads(fmt.message_text(state))["context"] == result.context
    # written canonically: reading and writing gives the same text
    assert fmt.writes(fmt.read(path), path=str(path)) == path.read_text()


def test_tce_run_shows_each_step_and_prints_one_json_object(blog: Path,
                                                           model: OpenAIServer) -> None:
    ctx = blog / "ctx.json"
    ctx.write_text(json.dumps(START, ensure_ascii=False))
    r = CliRunner().invoke(main, ["run", "blog/generate_blog", "--sop", str(blog / "sop"),
                                  "--context", f"@{ctx}"])
    assert r.exit_code == 0, r.output
    assert "[3] blog/validate_outline (validate, attempt 1)" in r.stderr
    assert "    fail (" in r.stderr and "不够详细: 大纲只有 2 个小节" in r.stderr
    assert "-> route to blog/handle_outline_not_detailed" in r.stderr
    assert json.loads(r.stdout)["大纲"] == ["引言", "历史", "现状", "展望"]
    r = CliRunner().invoke(main, ["run", "blog/generate_blog", "--sop", str(blog / "sop"),
                                  "--context", json.dumps(START), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert set(out) >= {"status", "context", "transcript", "steps", "error"}
    assert out["status"] == "succeeded" and out["steps"] == 17 and out["error"] is None
    assert Path(out["transcript"]).is_file()


# -- bad input -----------------------------------------------------------------------------

def test_problems_in_the_folder_stop_the_run_before_any_model_call(
        tmp_path: Path, model: OpenAIServer) -> None:
    shutil.copytree(DATA / "bad", tmp_path / "bad")
    write_doc(tmp_path / "bad" / "sop", "bad/fine", "task_type: execute\n---\n\n"
              "## parameters.prompt\nhello\n")
    r = CliRunner().invoke(main, ["run", "bad/fine", "--sop", str(tmp_path / "bad" / "sop")])
    assert r.exit_code == 3
    assert "bad/loop_a.md:5: plan_steps[0]: cycle of plan_steps" in r.stderr
    assert "16 problems; nothing was run" in r.stderr
    assert model.chat_requests == []
    assert not (tmp_path / "bad" / "runs").exists()


def test_a_missing_input_names_the_document_the_variable_and_the_path(
        blog: Path, model: OpenAIServer) -> None:
    r = CliRunner().invoke(main, ["run", "blog/generate_blog", "--sop", str(blog / "sop"),
                                  "--context", '{"标题": "春天"}', "--json"])
    assert r.exit_code == 1
    err = json.loads(r.stdout)["error"]
    assert err == {"task_id": "blog/generate_outline", "error_type": "missing_input",
                   "message": "blog/generate_outline: input 'user_ask' reads $.用户原始输入, "
                              "which is not in the context"}
    assert model.chat_requests == []
    path = Path(json.loads(r.stdout)["transcript"])
    assert "[error] ename=\"missing_input\"" in path.read_text()


def test_bad_context_is_a_usage_error(blog: Path, model: OpenAIServer) -> None:
    r = CliRunner().invoke(main, ["run", "blog/generate_blog", "--sop", str(blog / "sop"),
                                  "--context", "[1, 2]"])
    assert r.exit_code == 2 and "must be a JSON object" in r.stderr


def test_a_context_file_that_is_not_utf8_is_a_usage_error(blog: Path, model: OpenAIServer,
                                                          tmp_path: Path) -> None:
    """--context @ctx.json saved as UTF-16 was a UnicodeDecodeError traceback."""
    ctx = tmp_path / "ctx.json"
    ctx.write_bytes('{"标题": "春天"}'.encode("utf-16"))
    r = CliRunner().invoke(main, ["run", "blog/generate_blog", "--sop", str(blog / "sop"),
                                  "--context", f"@{ctx}"])
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith("tce: ") and "ctx.json: not UTF-8 text" in r.stderr
    assert not model.chat_requests


SMALL = {
    "t/main": "task_type: plan\nplan_steps:\n  - task_id: t/make\n  - task_id: t/check\n---\n",
    "t/make": "task_type: execute\ninput:\n  topic: $.topic\noutput:\n  $.title: $.title\n"
              "error_handling:\n  on_failure:\n    retry: 1\n---\n\n"
              "## parameters.prompt\nMAKE a title for {topic} as JSON {{\"title\": ...}}\n",
    "t/check": "task_type: validate\ninput:\n  title: $.title\n"
               "error_handling:\n  on_failure:\n    retry: 0\n    replan: true\n"
               "    error_routing:\n      invalid_verdict: t/fix\n---\n\n"
               "## parameters.prompt\nCHECK the title\n",
    "t/fix": "task_type: error_handler\nplan_steps:\n  - task_id: t/rename\n---\n",
    "t/rename": "task_type: execute\noutput:\n  $.title: $\n---\n\n"
                "## parameters.prompt\nRENAME it\n",
    "t/polish": "task_type: execute\ndescription: polish the title\noutput:\n  $.title: $\n"
                "---\n\n## parameters.prompt\nPOLISH it\n",
}


@pytest.fixture
def small(tmp_path: Path) -> Path:
    for tid, text in SMALL.items():
        write_doc(tmp_path / "sop", tid, text)
    return tmp_path / "sop"


def by_marker(answers: dict[str, list[str]]):
    """A model answering each prompt by its marker word, in turn (the last answer repeats)."""
    lock = threading.Lock()

    def respond(body: dict[str, Any]) -> str:
        user = last_user(body)
        for marker, replies in answers.items():
            if marker in user:
                with lock:
                    return replies.pop(0) if len(replies) > 1 else replies[0]
        raise AssertionError(f"unexpected prompt: {user[:200]}")

    return respond


def test_a_reply_that_is_not_the_json_expected_fails_the_step_and_is_retried(
        small: Path, model: OpenAIServer) -> None:
    model.responder = by_marker({"MAKE": ["a title, I think", '{"title": "Spring"}'],
                                 "CHECK": ['status = "pass"']})
    result = run_task(small, "t/main", {"topic": "spring"})
    assert result.status == "ok" and result.context["title"] == "Spring"
    text = result.transcript.read_text()
    assert 'ename="invalid_output"' in text
    assert "t/make: the reply is not the JSON this step reads" in text
    assert "output_format: json): a title, I think" in text
    assert "Feedback on the previous attempt" in prompts(model, "MAKE")[1]


def test_a_verdict_that_does_not_parse_is_routed_as_invalid_verdict(
        small: Path, model: OpenAIServer) -> None:
    model.responder = by_marker({"MAKE": ['{"title": "Spring"}'],
                                 "CHECK": ["looks fine to me!", 'status = "pass"'],
                                 "RENAME": ["Spring, renamed"]})
    result = run_task(small, "t/main", {"topic": "spring"})
    assert result.status == "ok"
    assert result.context["title"] == "Spring, renamed"
    assert [s[0] for s in steps_of(result.transcript)] == [
        "t/main", "t/make", "t/check", "t/fix", "t/rename", "t/check"]
    assert 'error_type="invalid_verdict"' in result.transcript.read_text()


def test_no_route_and_replan_asks_the_planner_for_steps_from_the_folder(
        small: Path, model: OpenAIServer) -> None:
    model.responder = by_marker({
        "MAKE": ['{"title": "spring"}'],
        "CHECK": ['status = "fail"\nerror_type = "lowercase"\nmessage = "capitalise it"',
                  'status = "pass"'],
        "Choose the steps": ['["t/polish"]'], "POLISH": ["Spring"]})
    result = run_task(small, "t/main", {"topic": "spring"})
    assert result.status == "ok", result.error
    assert result.context["title"] == "Spring"
    planner = prompts(model, "Choose the steps")[0]
    assert "Error type: lowercase\nMessage: capitalise it" in planner
    assert "- t/polish (execute): polish the title" in planner
    assert "t/check (" not in planner  # validators are not offered
    assert [s[:2] for s in steps_of(result.transcript)][-3:] == [
        ("t/check", "replan"), ("t/polish", "execute"), ("t/check", "validate")]


def test_progress_numbers_the_planners_step_so_no_step_number_goes_missing(
        small: Path, model: OpenAIServer) -> None:
    model.responder = by_marker({
        "MAKE": ['{"title": "spring"}'],
        "CHECK": ['status = "fail"\nerror_type = "lowercase"\nmessage = "capitalise it"',
                  'status = "pass"'],
        "Choose the steps": ['["t/polish"]'], "POLISH": ["Spring"]})
    r = CliRunner().invoke(main, ["run", "t/main", "--sop", str(small), "--context",
                                  '{"topic": "spring"}'])
    assert r.exit_code == 0, r.output
    lines = r.stderr.splitlines()
    (then,) = [ln for ln in lines if "-> replan" in ln]
    n = int(then.split("replan (step ", 1)[1].split(")", 1)[0])
    assert then.endswith(": t/polish")
    assert any(ln.startswith(f"[{n + 1}] t/polish (execute") for ln in lines)


def test_a_failure_with_nowhere_to_go_names_the_document_error_type_and_message(
        small: Path, model: OpenAIServer) -> None:
    model.responder = by_marker({
        "MAKE": ['{"title": "spring"}'],
        "CHECK": ['status = "fail"\nerror_type = "lowercase"\nmessage = "capitalise it"'],
        "Choose the steps": ["I cannot help"]})
    r = CliRunner().invoke(main, ["run", "t/main", "--sop", str(small), "--context",
                                  '{"topic": "x"}'])
    assert r.exit_code == 1
    assert "tce: failed at t/check: replan_failed: the planner did not answer with a JSON " \
           "array of task_ids: I cannot help" in r.stderr
    assert "Traceback" not in r.output


def test_the_step_budget_ends_a_loop_of_error_routes(small: Path, model: OpenAIServer) -> None:
    model.responder = by_marker({"MAKE": ['{"title": "x"}'], "CHECK": ["never TOML"],
                                 "RENAME": ["y"]})
    result = run_task(small, "t/main", {"topic": "x"}, max_steps=12)
    assert result.status == "error" and result.steps == 12
    assert result.error["error_type"] == "step_budget"
    assert "step budget (12)" in result.error["message"]


def test_a_tool_that_raises_is_a_failed_step_recorded_in_the_transcript(
        blog: Path, model: OpenAIServer) -> None:
    tools = blog / "toolbox" / "blog_tools.py"
    tools.write_text(tools.read_text().replace(
        '    digest = hashlib', '    raise RuntimeError("the image service is down")\n'
        '    digest = hashlib'))
    r = CliRunner().invoke(main, ["run", "blog/generate_blog", "--sop", str(blog / "sop"),
                                  "--context", json.dumps(START), "--json"])
    assert r.exit_code == 1
    out = json.loads(r.stdout)
    assert out["error"]["task_id"] == "blog/generate_images"
    assert out["error"]["error_type"] == "tool_error"
    assert "RuntimeError: the image service is down" in out["error"]["message"]
    text = Path(out["transcript"]).read_text()
    assert 'tool="make_image" status="fail"' in text and 'ename="tool_error"' in text
    assert 'task_state="failed"' in text


def test_a_model_that_fails_is_a_failed_step(small: Path, model: OpenAIServer) -> None:
    model.responder = lambda body: Reply.http_error(500, "the model is down")
    result = run_task(small, "t/main", {"topic": "x"})
    assert result.status == "error"
    assert result.error["task_id"] == "t/make" and result.error["error_type"] == "model_error"
    assert "the model is down" in result.error["message"]
    assert len(model.chat_requests) == 2  # retry: 1


def test_tce_run_imports_litellm_only_when_a_model_is_called(tmp_path: Path, trusted) -> None:
    shutil.copytree(DATA / "seed_blog", tmp_path / "blog")
    trusted(tmp_path / "blog")
    sop = tmp_path / "blog" / "sop"
    code = ("import sys\nsys.argv = ['tce', 'run', 'blog/generate_images', '--sop', "
            f"{str(sop)!r}, '--context', '{{\"标题\": \"x\", \"大纲\": [\"a\"]}}', '--json']\n"
            "from jupyter_percent_agent.cli import main\n"
            "try:\n    main()\nexcept SystemExit as e:\n    print('EXIT', e.code)\n"
            "print('HEAVY', sorted(m for m in ('litellm', 'nbformat', 'jupytext') "
            "if m in sys.modules))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "EXIT 0" in p.stdout, p.stderr
    assert "HEAVY []" in p.stdout


# -- resume --------------------------------------------------------------------------------

class Gate:
    """Holds the model's answer to the first prompt with ``marker`` until released."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.reached = threading.Event()
        self.release = threading.Event()

    def __call__(self, body: dict[str, Any]) -> str:
        if self.marker in last_user(body) and not self.release.is_set():
            self.reached.set()
            self.release.wait(60)
        return blog_model(body)


def test_resume_after_sigkill_runs_no_finished_step_again(blog: Path,
                                                          model: OpenAIServer) -> None:
    gate = Gate(PARAGRAPH)
    model.responder = gate
    env = {**os.environ, "PERCENT_AGENT_BACKOFF": "0"}
    proc = subprocess.Popen([str(Path(sys.executable).parent / "tce"), "run",
                             "blog/generate_blog", "--sop", str(blog / "sop"), "--context",
                             json.dumps(START)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        reached = gate.reached.wait(60)
        assert reached, proc.stderr.read1().decode() if proc.poll() is not None else "no call"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        gate.release.set()
        if proc.poll() is None:
            proc.kill()
    (path,) = (blog / "runs").glob("*.msg.md")
    before = steps_of(path)
    assert before[-1] == ("blog/write_paragraphs", "plan", 1)  # the last finished step
    assert 'task_state="running" steps=12' in path.read_text()
    calls = {m: len(prompts(model, m)) for m in (OUTLINE, ANALYZE, REFINE, PARAGRAPH)}
    assert calls == {OUTLINE: 3, ANALYZE: 1, REFINE: 1, PARAGRAPH: 1}
    r = CliRunner().invoke(main, ["run", "--resume", str(path), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["status"] == "succeeded" and out["steps"] == 17
    assert out["transcript"] == str(path)
    assert {m: len(prompts(model, m)) for m in (OUTLINE, ANALYZE, REFINE)} == {
        OUTLINE: 3, ANALYZE: 1, REFINE: 1}  # finished steps: no model called again
    after = steps_of(path)
    assert after[:12] == before and len(after) == 17
    # a finished run resumed again calls nothing and says how it ended
    n = len(model.chat_requests)
    assert resume_task(path).status == "ok" and len(model.chat_requests) == n


def test_resume_of_a_file_that_is_no_transcript_says_so(tmp_path: Path) -> None:
    other = tmp_path / "chat.msg.md"
    other.write_text("## %% hi[^a]\n[^a]: [markdown]\n\nhello\n")
    r = CliRunner().invoke(main, ["run", "--resume", str(other)])
    assert r.exit_code == 3 and "not a task transcript" in r.stderr


def test_resume_whose_next_step_names_a_document_gone_says_so_and_runs_nothing(
        small: Path, local_model: OpenAIServer) -> None:
    """A transcript interrupted before t/check, resumed after t/check.md was renamed (and
    the plan changed to match): it ran t/make again, then failed with "KeyError: 't/check'"."""
    from jupyter_percent_agent.tasks.api import arun_task

    local_model.script(Reply('{"title": "A"}', delay=30))

    async def interrupted() -> Path:
        run = asyncio.ensure_future(arun_task(small, "t/main", {"topic": "x"}))
        while not local_model.chat_requests:
            await asyncio.sleep(0.05)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        (path,) = (small.parent / "runs").glob("*.msg.md")
        return path

    path = asyncio.run(interrupted())
    assert 'task_state="interrupted"' in path.read_text()
    (small / "t" / "check.md").rename(small / "t" / "verify.md")
    write_doc(small, "t/verify", SMALL["t/check"])
    write_doc(small, "t/main", SMALL["t/main"].replace("t/check", "t/verify"))
    local_model.reset()
    local_model.script('{"title": "A"}')
    r = CliRunner().invoke(main, ["run", "--resume", str(path)])
    assert r.exit_code == 3, r.output
    assert "'t/check'" in r.stderr and "KeyError" not in r.stderr
    assert "the SOP folder no longer has" in r.stderr
    assert not local_model.chat_requests


# -- the [task] cell (the kernel's entry point) --------------------------------------------

TASK_CELL = """## %% Write a blog[^t1]
[^t1]: [task] task_id="blog/generate_blog" sop="sop"

```json
{"标题": "春天", "用户原始输入": "写一篇关于春天的博客"}
```
"""


def task_cell(blog: Path) -> dict[str, Any]:
    (blog / "chat.msg.md").write_text(TASK_CELL)
    return fmt.read(blog / "chat.msg.md")["cells"][0]


def test_a_task_cell_runs_the_workflow_and_streams_each_step(blog: Path,
                                                            model: OpenAIServer) -> None:
    events: list[Any] = []
    assert is_task_cell(task_cell(blog))
    run = asyncio.run(run_task_cell(task_cell(blog), base_dir=blog, on_event=events.append))
    assert run.status == "ok" and run.result.status == "ok"
    shown = [e.output for e in events if isinstance(e, OutputMade)]
    assert shown == run.outputs
    lines = [fmt.output_text(o) for o in run.outputs if fmt.output_kind(o) == "stream"]
    assert lines[0] == "[1] blog/generate_blog (plan, attempt 1): ok\n"
    assert lines[2].startswith("[3] blog/validate_outline (validate, attempt 1): fail: 不够详细")
    assert any(isinstance(e, Delta) for e in events)  # live model text
    replies = [o for o in run.outputs if fmt.output_kind(o) == "reply"]
    final = fmt.output_attrs(replies[-1])
    assert final["task_status"] == "succeeded" and final["steps"] == 17
    assert final["transcript"].startswith("runs/blog-generate_blog-")
    assert '"大纲": [' in fmt.output_text(replies[-1])
    ids = [fmt.output_id(o) for o in run.outputs]
    assert ids == [f"t1.{n}" for n in range(1, len(ids) + 1)]
    # the outputs are this cell's: the notebook with them reads back the same
    cell = task_cell(blog)
    cell["outputs"] = run.outputs
    nb = fmt.reads("", path="x.msg.md")
    nb["cells"].append(cell)
    (back,) = fmt.reads(fmt.writes(nb, path="x.msg.md"), path="x.msg.md")["cells"]
    assert [fmt.output_text(o) for o in back["outputs"]] == \
        [fmt.output_text(o) for o in run.outputs]


@pytest.fixture
def waiting(tmp_path: Path, trusted) -> Path:
    """A trusted project whose task w/wait calls a toolbox tool that prints ``waiting`` and
    sleeps for the context's ``seconds`` (60 when it has none)."""
    project = tmp_path / "p"
    (project / "toolbox").mkdir(parents=True)
    (project / "toolbox" / "waits.py").write_text(
        "import time\n\n\ndef wait(seconds: int = 60) -> int:\n"
        '    """Wait.\n\n    Args:\n        seconds: how long\n    """\n'
        "    print('waiting', seconds, flush=True)\n    time.sleep(seconds)\n"
        "    return seconds\n")
    write_doc(project / "sop", "w/wait", "task_type: execute\ntool:\n  tool_id: wait\n"
              "  parameters:\n    - name: seconds\n      value: $.seconds\n---\n")
    trusted(project)
    return project


def test_ctrl_c_during_a_slow_toolbox_tool_exits_at_once(waiting: Path,
                                                         local_model: OpenAIServer) -> None:
    """tce run printed its interrupted line, then waited for the tool's thread to finish
    (a minute here) before it exited: the tools' worker threads were joined at exit."""
    project = waiting
    proc = subprocess.Popen([str(Path(sys.executable).parent / "tce"), "run", "w/wait",
                             "--sop", str(project / "sop"), "--context", '{"seconds": 60}'],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "waiting 60\n"  # the tool is running
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("tce run did not exit after Ctrl-C while a tool ran")
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "continue with tce run --resume" in err


def test_an_interrupted_run_prints_its_json_as_interrupted_and_exits_130(
        waiting: Path, local_model: OpenAIServer) -> None:
    """tce run --json printed nothing for a run stopped by Ctrl-C: a script saw neither how
    it ended nor the transcript to resume. It prints the run as its transcript has it."""
    proc = subprocess.Popen([str(Path(sys.executable).parent / "tce"), "run", "w/wait",
                             "--sop", str(waiting / "sop"), "--json", "--context",
                             '{"seconds": 60}'], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "waiting 60\n"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    (shown,) = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert shown["status"] == "interrupted", shown
    assert (shown["task_id"], shown["context"], shown["error"]) == \
        ("w/wait", {"seconds": 60}, None)
    transcript = Path(shown["transcript"])
    assert transcript.is_file()
    assert f"--resume {transcript}" in err


def test_an_interrupted_batch_counts_its_unfinished_inputs_as_interrupted_not_failed(
        waiting: Path, local_model: OpenAIServer) -> None:
    """A batch stopped by Ctrl-C said only where the finished inputs are; it counts them as
    a finished batch does, the inputs it stopped as interrupted (exit 130), none failed."""
    inputs = waiting / "in.jsonl"
    inputs.write_text('{"seconds": 0}\n{"seconds": 60}\n')
    proc = subprocess.Popen([str(Path(sys.executable).parent / "tce"), "run", "w/wait",
                             "--sop", str(waiting / "sop"), "--inputs", str(inputs),
                             "--concurrency", "1"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "waiting 0\n"
        assert proc.stdout.readline() == "waiting 60\n"  # the first input has its result
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "1 succeeded, 0 failed, 1 interrupted; results: " in err
    (results,) = (waiting / "runs").glob("*-results.jsonl")
    assert [json.loads(line)["status"] for line in results.read_text().splitlines()] == \
        ["succeeded"]  # the stopped input has no line: --resume runs it


def test_a_refused_inputs_result_line_keeps_the_shape_scripts_read(waiting: Path) -> None:
    """results.jsonl and --json lines are TaskResult.to_json() plus the input's number, an
    input refused before its run began too: the keys, their order and words of before."""
    inputs = waiting / "in.jsonl"
    inputs.write_text("{not json\n")
    r = CliRunner().invoke(main, ["run", "w/wait", "--sop", str(waiting / "sop"), "--inputs",
                                  str(inputs), "--json"])
    assert r.exit_code == 1, r.output
    (line,) = r.stdout.splitlines()
    assert list(json.loads(line).items()) == [
        ("input", 1), ("status", "failed"), ("task_id", "w/wait"), ("context", None),
        ("transcript", None), ("steps", 0),
        ("error", {"task_id": "w/wait", "error_type": "bad_input",
                   "message": json.loads(line)["error"]["message"]})]
    assert json.loads(line)["error"]["message"].startswith("line 1 is not JSON")
    assert "0 succeeded, 1 failed; results: " in r.stderr


def test_interrupting_a_task_cell_leaves_a_transcript_that_running_it_again_continues(
        blog: Path, model: OpenAIServer) -> None:
    gate = Gate(PARAGRAPH)
    model.responder = gate
    cell = task_cell(blog)

    async def interrupted() -> Any:
        from jupyter_percent_agent.tasks.cell import TaskCellRun

        run = TaskCellRun(cell_id="t1")
        task = asyncio.ensure_future(run_task_cell(cell, base_dir=blog, run=run))
        while not gate.reached.is_set():
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return run

    try:
        run = asyncio.run(interrupted())
    finally:
        gate.release.set()
    assert run.status == "interrupted"
    last = fmt.output_attrs(run.outputs[-1])
    assert last["task_status"] == "interrupted"
    # what the cell shows says so (it showed a context of ```json null```)
    assert fmt.output_text(run.outputs[-1]) == (
        f"interrupted: run the cell again to continue {last['transcript']}")
    path = blog / last["transcript"]
    assert 'task_state="interrupted"' in path.read_text()
    assert "interrupted=true" in path.read_text()  # the step cut short says so
    outlines = len(prompts(model, OUTLINE))
    cell["outputs"] = run.outputs
    again = asyncio.run(run_task_cell(cell, base_dir=blog))
    assert again.status == "ok" and again.result.status == "ok"
    assert again.result.transcript == path
    assert fmt.output_text(again.outputs[0]).startswith("continuing runs/")
    assert len(prompts(model, OUTLINE)) == outlines


def test_a_task_cell_with_a_bad_context_is_an_error_output(blog: Path,
                                                          model: OpenAIServer) -> None:
    (blog / "c.msg.md").write_text(TASK_CELL.replace('"春天",', '"春天"'))
    cell = fmt.read(blog / "c.msg.md")["cells"][0]
    run = asyncio.run(run_task_cell(cell, base_dir=blog))
    assert run.status == "error" and run.error_type == "ValueError"
    assert "initial context as JSON" in run.error
    assert fmt.output_kind(run.outputs[-1]) == "error"
    assert model.chat_requests == []


@pytest.mark.parametrize("attrs", [
    'sop="sop" runs="../escaped/deeper"',
    'sop="sop" runs="ABSOLUTE"',
    'sop="../elsewhere/sop"',
    'sop="/etc"',
    'sop="."',
])
def test_a_task_cells_paths_stay_in_its_folder(blog: Path, model: OpenAIServer,
                                               attrs: str) -> None:
    """The folders a [task] cell names (its SOP folder, where transcripts go) are written in
    a shared file: out of the file's folder they are refused before anything is read, run or
    written (TRUST: paths resolve inside the file's folder)."""
    shutil.copytree(blog / "sop", blog.parent / "elsewhere" / "sop")
    absolute = blog.parent / "absolute-runs"
    attrs = attrs.replace("ABSOLUTE", str(absolute))
    (blog / "c.msg.md").write_text(TASK_CELL.replace('sop="sop"', attrs))
    cell = fmt.read(blog / "c.msg.md")["cells"][0]
    run = asyncio.run(run_task_cell(cell, base_dir=blog))
    assert run.status == "error" and run.error_type == "trust_error"
    assert run.error.startswith("refused: [task] ")
    assert model.chat_requests == []
    assert not (blog.parent / "escaped").exists()
    assert not absolute.exists()


def test_a_task_cells_saved_transcript_out_of_its_folder_is_never_resumed(
        blog: Path, model: OpenAIServer) -> None:
    """An 'interrupted' output in a shared file may name any transcript: one out of the
    file's folder is refused, not read and rewritten."""
    outside = blog.parent / "victim.msg.md"
    outside.write_text("# %% mine[^m]\n[^m]: [markdown]\n\nnot a run\n")
    cell = task_cell(blog)
    cell["outputs"] = [fmt.reply_output(
        "interrupted", agent="task", out_id="t1.1",
        attrs={"task_status": "interrupted", "transcript": "../victim.msg.md"})]
    run = asyncio.run(run_task_cell(cell, base_dir=blog))
    assert run.status == "error" and run.error_type == "trust_error"
    assert outside.read_text() == "# %% mine[^m]\n[^m]: [markdown]\n\nnot a run\n"
    assert model.chat_requests == []


def test_a_shipped_transcript_cannot_continue_a_run_in_another_projects_sop(
        tmp_path: Path, blog: Path, model: OpenAIServer) -> None:
    """A cloned folder ships runs/evil.msg.md whose header names the user's own, trusted
    project's SOP folder, and an 'interrupted' output pointing at it: running the [task] cell
    must not run that project's toolbox with a stack and context the clone chose."""
    marker = tmp_path / "toolbox-ran"
    for tool in (blog / "toolbox").glob("*.py"):
        tool.write_text(tool.read_text() + f"\nimport pathlib\npathlib.Path({str(marker)!r})"
                        ".touch()\n")
    clone = tmp_path / "clone"
    evil = fmt.reads("", path="evil.msg.md")
    fmt.set_front_matter(evil, "task_run", {"task": "blog/generate_images",
                                            "sop": str(blog / "sop"), "max_steps": 5})
    from jupyter_percent_agent.tasks import transcript as tr

    tr.set_state(evil, {"context": {"标题": "x", "大纲": ["a"]},
                        "stack": [{"task_id": "blog/generate_images"}], "frames": {},
                        "steps": 0, "error": None}, status="interrupted", steps=0)
    (clone / "runs").mkdir(parents=True)
    fmt.write(evil, clone / "runs" / "evil.msg.md")
    cell = fmt.reads(TASK_CELL, path="c.msg.md")["cells"][0]
    cell["outputs"] = [fmt.reply_output("interrupted", agent="task", out_id="t1.1", attrs={
        "task_status": "interrupted", "transcript": "runs/evil.msg.md"})]
    run = asyncio.run(run_task_cell(cell, base_dir=clone))
    assert run.status == "error" and run.error_type == "trust_error", run.error
    assert not marker.exists()
    assert model.chat_requests == []


def test_resuming_a_transcript_linked_out_of_its_folder_is_a_refusal(tmp_path: Path) -> None:
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "x.msg.md").write_text("# %% x[^a]\n[^a]: [markdown]\n")
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "r.msg.md").symlink_to(tmp_path / "private" / "x.msg.md")
    r = CliRunner().invoke(main, ["run", "--resume", str(tmp_path / "runs" / "r.msg.md")])
    assert r.exit_code == 6 and "refused: a symbolic link" in r.stderr


def test_load_sop_is_the_public_entry_point(blog: Path) -> None:
    sop = load_sop(blog / "sop")
    assert sop.problems == [] and "blog/generate_blog" in sop
    assert sop["blog/validate_outline"].on_failure.retry == 2
    time.sleep(0)  # (no model needed)


def test_an_untrusted_sop_folders_toolbox_is_refused_before_any_model_call(
        tmp_path: Path, model: OpenAIServer) -> None:
    """A SOP folder's toolbox follows the trust rules of a message file's: it is never
    imported from a folder the user did not trust, and the run says how to allow it."""
    shutil.copytree(DATA / "seed_blog", tmp_path / "blog")
    marker = tmp_path / "blog" / "toolbox" / "_imported.marker"
    for tool in (tmp_path / "blog" / "toolbox").glob("*.py"):
        tool.write_text(f"import pathlib\npathlib.Path({str(marker)!r}).touch()\n"
                        + tool.read_text())
    result = run_task(tmp_path / "blog" / "sop", "blog/generate_images",
                      {"标题": "x", "大纲": ["a"]}, runs_dir=tmp_path / "runs")
    assert result.status == "error"
    assert f"tce trust {tmp_path / 'blog'}" in result.error["message"]
    assert not marker.exists()


@pytest.fixture
def untrusted_blog(tmp_path: Path) -> Path:
    """The seed's blog project, not trusted, its toolbox leaving a mark if it is imported."""
    shutil.copytree(DATA / "seed_blog", tmp_path / "blog")
    marker = tmp_path / "blog" / "toolbox" / "_imported.marker"
    for tool in (tmp_path / "blog" / "toolbox").glob("*.py"):
        tool.write_text(f"import pathlib\npathlib.Path({str(marker)!r}).touch()\n"
                        + tool.read_text())
    return tmp_path / "blog"


def assert_refused_before_any_model_call(blog: Path, model: OpenAIServer, error: Any) -> None:
    assert error["error_type"] == "trust_error", error
    assert error["message"].startswith("refused: task 'blog/generate_blog' (tools ")
    assert "validate_script" in error["message"]
    assert error["message"].endswith(f"; to allow it: tce trust {blog}")
    assert model.chat_requests == []
    assert not (blog / "toolbox" / "_imported.marker").exists()


def test_a_workflow_whose_first_step_calls_the_model_is_refused_before_it_in_an_untrusted_folder(
        untrusted_blog: Path, model: OpenAIServer) -> None:
    """generate_blog starts with an LLM step; its validator is a toolbox tool. Without trust
    the run used to call the model, then fail the validator and retry it (calling the model
    again) and route it: now it stops before the first call and says how to allow it."""
    result = run_task(untrusted_blog / "sop", "blog/generate_blog", START)
    assert result.status == "error"
    assert_refused_before_any_model_call(untrusted_blog, model, result.error)
    assert 'task_state="failed"' in result.transcript.read_text()
    assert steps_of(result.transcript) == []


def test_an_llm_step_whose_agent_has_toolbox_tools_is_refused_before_any_model_call(
        untrusted_blog: Path, model: OpenAIServer) -> None:
    """generate_outline is one LLM step and calls no tool itself, but its agent is given the
    toolbox's tools: without trust that agent cannot answer, so no model is called."""
    agents = untrusted_blog / "sop" / "_agents.yaml"
    agents.write_text(agents.read_text().replace("writer:\n", "writer:\n  tools: [blog_tools]\n"))
    result = run_task(untrusted_blog / "sop", "blog/generate_outline", START)
    assert result.status == "error" and result.error["error_type"] == "trust_error"
    assert result.error["message"].startswith(
        "refused: task 'blog/generate_outline' (agent 'writer' (tools: blog_tools)) would "
        "import the toolbox/ code")
    assert model.chat_requests == []
    assert not (untrusted_blog / "toolbox" / "_imported.marker").exists()


def test_tce_run_in_an_untrusted_folder_says_in_one_line_what_was_refused(
        untrusted_blog: Path, model: OpenAIServer) -> None:
    r = CliRunner().invoke(main, ["run", "blog/generate_blog", "--sop",
                                  str(untrusted_blog / "sop"), "--context", json.dumps(START)])
    assert r.exit_code == 6  # refused by trust, as every refusal; not "the workflow failed"
    started, line = r.stderr.strip().splitlines()
    assert started.startswith("transcript: ")  # the progress, then the one line of failure
    assert line.startswith("tce: failed at blog/generate_blog: trust_error: refused: ")
    assert f"tce trust {untrusted_blog} (transcript: " in line
    assert "Traceback" not in r.output
    assert model.chat_requests == []


def test_each_input_of_a_batch_in_an_untrusted_folder_is_refused_before_any_model_call(
        untrusted_blog: Path, model: OpenAIServer, tmp_path: Path) -> None:
    inputs = tmp_path / "topics.jsonl"
    inputs.write_text(json.dumps(START) + "\n" + json.dumps({**START, "标题": "夏天"}) + "\n")
    r = CliRunner().invoke(main, ["run", "blog/generate_blog", "--sop",
                                  str(untrusted_blog / "sop"), "--inputs", str(inputs),
                                  "--json"])
    assert r.exit_code == 1, r.output
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(lines) == 2 and all(o["status"] == "failed" for o in lines)
    for out in lines:
        assert_refused_before_any_model_call(untrusted_blog, model, out["error"])


def test_a_task_cell_in_an_untrusted_folder_calls_no_model(untrusted_blog: Path,
                                                          model: OpenAIServer) -> None:
    run = asyncio.run(run_task_cell(task_cell(untrusted_blog), base_dir=untrusted_blog))
    assert run.result.status == "error"
    assert_refused_before_any_model_call(untrusted_blog, model, run.result.error)


def test_resuming_a_run_whose_folder_is_no_longer_trusted_calls_no_model(
        blog: Path, model: OpenAIServer) -> None:
    from jupyter_percent_agent import trust
    from jupyter_percent_agent.tasks import arun_task

    gate = Gate(PARAGRAPH)
    model.responder = gate

    async def interrupted() -> None:
        task = asyncio.ensure_future(arun_task(blog / "sop", "blog/generate_blog", START))
        while not gate.reached.is_set():
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        asyncio.run(interrupted())
    finally:
        gate.release.set()
    (path,) = (blog / "runs").glob("*.msg.md")
    assert 'task_state="interrupted"' in path.read_text()
    trust.untrust_folder(blog)
    n = len(model.chat_requests)
    result = resume_task(path)
    assert result.status == "error" and result.error["error_type"] == "trust_error"
    assert f"tce trust {blog}" in result.error["message"]
    assert len(model.chat_requests) == n
    assert 'task_state="failed"' in path.read_text()


def test_a_trust_error_in_the_middle_of_a_run_ends_it_without_retry_or_route(
        untrusted_blog: Path, model: OpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Should a step still meet the refusal (the check before the run sees documents, a
    step's tools may come from elsewhere), the run fails there: asking again, or routing
    the failure to a handler, cannot trust the folder."""
    from jupyter_percent_agent.tasks import arun_task, load_sop
    from jupyter_percent_agent.tasks import runner as runner_mod

    # the check before the run misses it
    monkeypatch.setattr(runner_mod.Runner, "_refusal", lambda self: None)
    result = asyncio.run(arun_task(load_sop(untrusted_blog / "sop"), "blog/generate_blog",
                                   START))
    assert result.status == "error"
    assert result.error["task_id"] == "blog/validate_outline"
    assert result.error["error_type"] == "trust_error"
    assert f"tce trust {untrusted_blog}" in result.error["message"]
    assert len(prompts(model, OUTLINE)) == 1  # not retried
    assert steps_of(result.transcript) == [
        ("blog/generate_blog", "plan", 1), ("blog/generate_outline", "execute", 1),
        ("blog/validate_outline", "validate", 1)]  # not routed
    assert not (untrusted_blog / "toolbox" / "_imported.marker").exists()


def test_a_parameter_path_the_checks_missed_fails_the_step_not_the_process(
        tmp_path: Path, model: OpenAIServer) -> None:
    """Defence in depth: a JSONPath that does not parse reaching a run (tce sop check now
    reports it; here the check's problems are dropped) is a failed step with its reason in
    the transcript, handled by error_handling, never a traceback nor a run left running."""
    write_doc(tmp_path / "sop", "y/badparam", """
task_type: execute
tool:
  tool_id: LLM
  parameters:
    - name: prompt
      value: "$.[bad"
error_handling:
  on_failure:
    retry: 1
---
""")
    sop = load_sop(tmp_path / "sop")
    assert [p.field for p in sop.problems] == ["tool.parameters.prompt"]
    sop.problems = []
    result = run_task(sop, "y/badparam", {})
    assert result.status == "error"
    assert result.error["error_type"] == "runner_error"
    assert "'$.[bad' does not parse (column 3)" in result.error["message"]
    assert steps_of(result.transcript) == [("y/badparam", "execute", 1),
                                           ("y/badparam", "execute", 2)]
    text = result.transcript.read_text()
    assert 'task_state="failed"' in text and 'ename="runner_error"' in text
    assert model.chat_requests == []
    assert resume_task(result.transcript).status == "error"


def test_an_exception_raised_by_a_step_fails_the_run_with_its_reason_in_the_transcript(
        small: Path, model: OpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_percent_agent.tasks import runner as runner_mod

    def broken(self: Any, doc: Any, values: Any) -> Any:
        raise KeyError("a bug in the runner")

    monkeypatch.setattr(runner_mod.Runner, "_parameters", broken)
    result = run_task(small, "t/main", {"topic": "x"})
    assert result.status == "error"
    assert result.error == {"task_id": "t/make", "error_type": "runner_error",
                            "message": "t/make: KeyError: 'a bug in the runner'"}
    text = result.transcript.read_text()
    assert 'task_state="failed"' in text and "a bug in the runner" in text
    assert model.chat_requests == []


def test_a_request_in_words_runs_the_plan_the_index_picks_and_says_why(
        blog: Path, model: OpenAIServer) -> None:
    r = CliRunner().invoke(main, ["run", "写一篇关于城市交通的博客", "--sop", str(blog / "sop"),
                                  "--context", json.dumps(START, ensure_ascii=False),
                                  "--yes", "--json"])
    assert r.exit_code == 0, r.output
    assert "the index picks blog/generate_blog" in r.stderr
    assert "score" in r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1])["task_id"] == "blog/generate_blog"


def test_the_agent_kernel_runs_a_task_cell(blog: Path, model: OpenAIServer,
                                           tmp_path: Path) -> None:
    """In JupyterLab a [task] cell runs through the agent kernel (a real kernel, over the
    Jupyter protocol), each step streamed as an output of the cell."""
    from jupyter_percent_agent.testing.kernels import copy_kernelspec, start, stop

    kernels = copy_kernelspec(tmp_path / "kernels")
    task_cell(blog)  # writes chat.msg.md
    env = {**os.environ, "JPY_SESSION_NAME": str(blog / "chat.msg.md"),
           "PERCENT_AGENT_PRELOAD": "0"}
    km, kc = start(kernels, env, timeout=60, cwd=str(blog))
    try:
        source = fmt.message_text(task_cell(blog))
        msg_id = kc.execute(source)
        outputs = []
        while True:
            msg = kc.get_iopub_msg(timeout=120)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
            if msg["msg_type"] in ("stream", "display_data", "error"):
                outputs.append(msg)
        reply = kc.get_shell_msg(timeout=60)
        assert reply["content"]["status"] == "ok", reply["content"]
        lines = "".join(m["content"]["text"] for m in outputs if m["msg_type"] == "stream")
        assert "[1] blog/generate_blog (plan, attempt 1): ok" in lines
        final = [m for m in outputs if m["msg_type"] == "display_data"][-1]
        assert final["content"]["metadata"]["task_status"] == "succeeded"
    finally:
        stop(km, kc)


def test_a_transcript_saved_before_the_one_outcome_type_still_resumes(
        blog: Path, model: OpenAIServer) -> None:
    """A run interrupted at its paragraph step, saved by the code before runs shared one
    outcome type (tests/data/transcripts), resumes from its last finished step: the outline
    steps are not asked again, and the run ends as the same run begun today does."""
    saved = DATA.parent / "transcripts" / "blog-interrupted-before-outcome.msg.md"
    (blog / "runs").mkdir()
    path = blog / "runs" / saved.name
    shutil.copyfile(saved, path)
    assert 'task_state="interrupted" steps=12' in path.read_text()
    result = resume_task(path)
    assert result.status == "ok" and result.steps == 17, result.error
    assert result.outcome.ok and result.outcome.error is None
    assert prompts(model, OUTLINE) == [] and len(prompts(model, PARAGRAPH)) == 2
    assert 'task_state="succeeded" steps=17' in path.read_text()
    again = resume_task(path)  # ended: read back, nothing called
    assert again.status == "ok" and again.outcome.ok


def _close_call_folder(root: Path) -> Path:
    """A SOP folder where "weekly sales report" matches two plans alike (a close call)."""
    for task_id, text in (("a/weekly_report", "Write the weekly sales report"),
                          ("b/weekly_report", "Write the weekly sales report for the board"),
                          ("c/garden", "Water the garden")):
        write_doc(root, task_id, f"task_type: plan\ndescription: {text}\n"
                  "plan_steps:\n  - task_id: s/step\n---\n\n"
                  "## Plan Details\nCollect the sales numbers and write the report.\n")
    write_doc(root, "s/step", "task_type: execute\n---\n\n## parameters.prompt\nDo it.\n")
    return root


def _answer_the_prompt(sop: Path, env: dict[str, str], how: str) -> tuple[int, str]:
    """``tce run`` on a terminal until it asks "Run ...?", then Ctrl-C or Ctrl-D there."""

    def answer(got: bytes, terminal: int, proc: subprocess.Popen[bytes]) -> bool:
        if b"?" not in got.split(b"the index picks", 1)[-1] or b"[Y/n]" not in got:
            return False
        if how == "eof":
            os.write(terminal, b"\x04")
        else:
            proc.send_signal(signal.SIGINT)
        return True

    code, shown, asked = tce_on_terminal("run", "weekly sales report", "--sop", str(sop),
                                         env=env, answer=answer)
    assert asked, shown
    return code, shown


@pytest.mark.parametrize("how", ["ctrl_c", "eof"])
def test_ctrl_c_or_end_of_input_at_the_close_call_prompt_is_one_clear_line(
        how: str, tmp_path: Path, model: OpenAIServer, user_config_dir: Path) -> None:
    """click's confirm turned both into "Aborted!" and exit 1: Ctrl-C is 130 and
    'tce: interrupted' as everywhere, the end of input says nothing was answered."""
    sop = _close_call_folder(tmp_path / "sop")
    env = {**os.environ, "PERCENT_AGENT_CONFIG_DIR": str(user_config_dir)}
    code, shown = _answer_the_prompt(sop, env, how)
    assert "Aborted" not in shown and "Traceback" not in shown
    last = shown.strip().splitlines()[-1]
    if how == "ctrl_c":
        assert code == 130, shown
        assert last == "tce: interrupted", shown
    else:
        assert code == 2, shown
        assert last.startswith("tce: no answer on standard input: nothing was run"), shown
    assert model.chat_requests == []


# -- model text is text ------------------------------------------------------------------------

WHOLE = ("task_type: execute\ndescription: say it\n{extra}output:\n  $.said: $\n---\n\n"
         "## parameters.prompt\nSAY it\n")


def say_folder(tmp_path: Path, extra: str = "") -> Path:
    write_doc(tmp_path / "sop", "t/say", WHOLE.format(extra=extra))
    return tmp_path / "sop"


@pytest.mark.parametrize("reply", ["[docs](https://example.com/a) is where it is",
                                   "See [the docs](https://example.com/a).",
                                   "[1] Smith, 2020. [2] Jones, 2021."])
def test_a_reply_with_brackets_is_stored_as_text(tmp_path: Path, model: OpenAIServer,
                                                 reply: str) -> None:
    """A Markdown link in a step's text failed the step with a JSONDecodeError."""
    model.responder = by_marker({"SAY": [reply]})
    result = run_task(say_folder(tmp_path), "t/say", {})
    assert result.status == "ok", result.error
    assert result.context["said"] == reply


@pytest.mark.parametrize("reply", ['{"a": 1}', "[1, 2]", "42", "null", "true"])
def test_a_text_reply_that_happens_to_be_json_stays_text(tmp_path: Path, model: OpenAIServer,
                                                         reply: str) -> None:
    model.responder = by_marker({"SAY": [reply]})
    result = run_task(say_folder(tmp_path), "t/say", {})
    assert result.status == "ok", result.error
    assert result.context["said"] == reply


def test_a_step_declaring_json_gets_the_value_and_fails_on_text(tmp_path: Path,
                                                                model: OpenAIServer) -> None:
    sop = say_folder(tmp_path, "output_format: json\n")
    model.responder = by_marker({"SAY": ['```json\n{"a": [1, 2]}\n```']})
    result = run_task(sop, "t/say", {})
    assert result.status == "ok" and result.context["said"] == {"a": [1, 2]}
    model.responder = by_marker({"SAY": ["[docs](https://example.com/a)"]})
    result = run_task(sop, "t/say", {})
    assert result.status == "error" and result.error["error_type"] == "invalid_output"
    assert "the reply is not the JSON this step reads" in result.error["message"]


def test_an_output_format_that_is_neither_text_nor_json_is_a_problem(tmp_path: Path) -> None:
    sop = load_sop(say_folder(tmp_path, "output_format: yaml\n"))
    assert [(p.field, p.message) for p in sop.problems] == [
        ("output_format", "'yaml' is not text or json")]


# -- a task document cannot blow up its own prompt ----------------------------------------------

REPEAT = ("task_type: execute\ndescription: repeat it\ninput:\n  draft: $.draft\noutput:\n"
          "  $.final: $\n---\n\n## parameters.prompt\nREPEAT " + "{draft}" * 20_000 + "\n")


def test_a_prompt_past_the_context_window_is_refused_before_any_model_call(
        tmp_path: Path, model: OpenAIServer) -> None:
    """A 20 KB value named 20,000 times was a 400 MB prompt, written to runs/ and sent."""
    write_doc(tmp_path / "sop", "t/repeat", REPEAT)
    model.responder = by_marker({"REPEAT": ["never asked"]})
    result = CliRunner().invoke(main, ["run", "t/repeat", "--sop", str(tmp_path / "sop"),
                                       "--context", json.dumps({"draft": "x" * 20_000})])
    assert result.exit_code == 1, result.output
    assert model.requests == []
    line = next(x for x in result.output.splitlines() if "prompt_too_large" in x
                or "context window" in x)
    assert "t/repeat: refused: the rendered prompt passes the agent's context window " \
           "(200,000 tokens, about 800,000 characters at 4 per token)" in line
    written = sum(p.stat().st_size for p in (tmp_path / "runs").iterdir())
    assert written < 200_000


def test_the_bound_is_the_agents_own_context_window(tmp_path: Path,
                                                    model: OpenAIServer) -> None:
    write_doc(tmp_path / "sop", "t/repeat", "agent: small\n" + REPEAT.replace(
        "{draft}" * 20_000, "{draft} {draft}"))
    (tmp_path / "sop" / "_agents.yaml").write_text("small:\n  models: [test-model]\n"
                                                   "  context_window: 1000\n")
    model.responder = by_marker({"REPEAT": ["short enough"]})
    result = run_task(tmp_path / "sop", "t/repeat", {"draft": "x" * 2500})
    assert result.status == "error" and result.error["error_type"] == "prompt_too_large"
    assert "(1,000 tokens" in result.error["message"] and model.requests == []
    result = run_task(tmp_path / "sop", "t/repeat", {"draft": "x" * 100})
    assert result.status == "ok" and result.context["final"] == "short enough"


def test_rendering_stops_at_the_bound_without_building_the_whole_text() -> None:
    import tracemalloc

    from jupyter_percent_agent.tasks import templates

    template = "{draft}" * 20_000
    tracemalloc.start()
    try:
        with pytest.raises(templates.PromptTooLarge):
            templates.render(template, {"draft": "x" * 20_000}, limit=800_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10 * 800_000  # the whole text would be 400 MB
