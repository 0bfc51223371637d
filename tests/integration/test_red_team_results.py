"""Red team: what ``tce run`` writes beside its transcripts keeps the user's secrets out.

A batch's results file (``runs/TASK-...-results.jsonl``) holds each input's final context:
what models wrote and what tools returned. It sits beside the transcripts, in a folder users
share, and is as much text leaving the process as a transcript. A tool that returns a
credential (a trusted toolbox's config reader, a server quoting its token) must have it masked
there as in the transcript. ``tce`` runs here as the user runs it, with the project's local
model server as the model. Each case failed before its fix.
"""

from __future__ import annotations

import json
from pathlib import Path

from jupyter_percent_agent.testing.environment import model_env, run_tce
from jupyter_percent_agent.testing.openai_server import OpenAIServer

SECRET = "svc-tok-5c1e9b77aa"

FETCH = """---
task_id: w/fetch
task_type: execute
description: Read the service's settings
tool:
  tool_id: settings
  parameters:
    - name: topic
      value: "$.topic"
output:
  "$.settings": "$"
---
"""
SUMMARY = """---
task_id: w/summary
task_type: execute
description: Summarise
input:
  settings: "$.settings"
output:
  "$.summary": "$"
---

## parameters.prompt
Summarise {settings}.
"""
MAIN = """---
task_id: w/main
task_type: plan
description: Read the settings, then summarise them
plan_steps:
  - task_id: w/fetch
  - task_id: w/summary
---
"""
TOOL = '''import os


def settings(topic: str) -> dict:
    """The service settings for a topic (they include its token, as such readers do).

    Args:
        topic: what the settings are for.
    """
    return {"topic": topic, "token": os.environ["SERVICE_TOKEN"]}
'''


def project(folder: Path) -> Path:
    for name, text in {"w/fetch.md": FETCH, "w/summary.md": SUMMARY, "w/main.md": MAIN}.items():
        (folder / "sop" / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / "sop" / name).write_text(text)
    (folder / "toolbox").mkdir()
    (folder / "toolbox" / "settings.py").write_text(TOOL)
    (folder / "topics.jsonl").write_text('{"topic": "tea"}\n{"topic": "rain"}\n')
    return folder


def test_a_batchs_results_file_masks_a_secret_a_tool_returned(
    tmp_path: Path, user_config_dir: Path
) -> None:
    folder = project(tmp_path / "work")
    with OpenAIServer(default="A summary.") as model:
        env = model_env(model, user_config_dir, SERVICE_TOKEN=SECRET)
        assert run_tce("trust", str(folder), cwd=folder, env=env).returncode == 0
        done = run_tce("run", "w/main", "--sop", "sop", "--inputs", "topics.jsonl", "--json",
                       cwd=folder, env=env)  # fmt: skip
        sent = json.dumps([r.messages for r in model.chat_requests])
    assert done.returncode == 0, done.stderr
    assert SECRET not in sent  # the model call masks it
    (transcript, *_) = sorted((folder / "runs").glob("*.msg.md"))
    assert "[masked SERVICE_TOKEN]" in transcript.read_text()
    (results,) = (folder / "runs").glob("*-results.jsonl")
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert [r["context"]["settings"]["token"] for r in rows] == ["[masked SERVICE_TOKEN]"] * 2
    assert SECRET not in results.read_text() + done.stdout + done.stderr


def test_a_single_runs_printed_context_masks_a_secret_a_tool_returned(
    tmp_path: Path, user_config_dir: Path
) -> None:
    folder = project(tmp_path / "work")
    with OpenAIServer(default="A summary.") as model:
        env = model_env(model, user_config_dir, SERVICE_TOKEN=SECRET)
        assert run_tce("trust", str(folder), cwd=folder, env=env).returncode == 0
        done = run_tce("run", "w/main", "--sop", "sop", "--context", '{"topic": "tea"}',
                       "--json", cwd=folder, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "[masked SERVICE_TOKEN]" in done.stdout
    assert SECRET not in done.stdout + done.stderr
