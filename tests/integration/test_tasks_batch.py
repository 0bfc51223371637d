"""Many inputs: ``tce run --inputs`` at most N at once (seen at the model server), a failed input
never stopping the others, a progress bar on a terminal, and the same inputs on a real Dask
scheduler with two workers."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.cli import main
from jupyter_percent_agent.testing.openai_server import OpenAIServer, Reply
from tests.paths import TEST_DATA

DATA = TEST_DATA / "sop" / "review"
BIN = Path(sys.executable).parent


class Reviewer:
    """The workflow's model: drafts (better ones when told why), a review that fails the first
    draft, a final text. Counts the calls in flight; ``delay`` keeps each call open a while;
    a topic starting with FAIL makes the model fail."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most = 0

    def __call__(self, body: dict[str, Any]) -> Reply | str:
        with self.lock:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        try:
            if self.delay:
                time.sleep(self.delay)
            return answer(str(body["messages"][-1]["content"]))
        finally:
            with self.lock:
                self.in_flight -= 1


def answer(user: str) -> Reply | str:
    if user.startswith("DRAFT"):
        topic = user.split("about ", 1)[1].split(".", 1)[0]
        if topic.startswith("FAIL"):
            return Reply.http_error(500, "the model is down")
        return f"a better draft on {topic}" if "Feedback" in user else f"a draft on {topic}"
    if user.startswith("REVIEW"):
        if "better" in user:
            return 'status = "pass"'
        return 'status = "fail"\nerror_type = "weak"\nmessage = "make it better"'
    if user.startswith("FINAL"):
        return "final: " + user.split("of: ", 1)[1]
    raise AssertionError(user)


@pytest.fixture
def project(tmp_path: Path, trusted) -> Path:
    shutil.copytree(DATA, tmp_path / "p")
    trusted(tmp_path / "p")  # its toolbox runs
    return tmp_path / "p"


@pytest.fixture
def model(local_model: OpenAIServer) -> OpenAIServer:
    local_model.responder = Reviewer()
    return local_model


def write_inputs(path: Path, topics: list[str], extra: list[str] = ()) -> Path:
    lines = [json.dumps({"topic": t}) for t in topics] + list(extra)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_inputs_run_at_most_n_at_once_and_a_failed_input_stops_no_other(
        project: Path, model: OpenAIServer) -> None:
    reviewer = Reviewer(delay=0.15)
    model.responder = reviewer
    topics = [f"t{i}" for i in range(9)] + ["FAIL-1"]
    inputs = write_inputs(project / "topics.jsonl", topics, ["{not json", "[1]"])
    r = CliRunner().invoke(main, ["run", "w/main", "--sop", str(project / "sop"), "--inputs",
                                  str(inputs), "--concurrency", "4", "--json"])
    assert r.exit_code == 1, r.output
    assert reviewer.most == 4  # seen at the server: 4 calls in flight, never more
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert sorted(row["input"] for row in rows) == list(range(1, 13))
    by_input = {row["input"]: row for row in rows}
    for i, topic in enumerate(topics[:9], start=1):
        row = by_input[i]
        assert row["status"] == "succeeded", row
        assert row["context"]["final"] == f"final: a better draft on {topic}"
        assert row["steps"] == 6
        assert row["transcript"].endswith(f"-{i:04d}.msg.md")
    assert by_input[10]["error"]["error_type"] == "model_error"
    assert by_input[11]["error"]["message"].startswith("line 11 is not JSON")
    assert by_input[12]["error"]["message"] == "line 12 is not a JSON object (an initial context)"
    assert "9 succeeded, 3 failed; results: " in r.stderr
    runs = project / "runs"
    assert len(list(runs.glob("*.msg.md"))) == 10  # one transcript per input that ran
    (results,) = runs.glob("*results.jsonl")
    assert len(results.read_text().splitlines()) == 12


def test_a_terminal_gets_a_progress_bar(project: Path, model: OpenAIServer) -> None:
    inputs = write_inputs(project / "topics.jsonl", ["a", "b", "c"])
    pid, fd = pty.fork()
    if pid == 0:  # the child: tce on a terminal
        os.execv(str(BIN / "tce"), ["tce", "run", "w/main", "--sop", str(project / "sop"),
                                    "--inputs", str(inputs), "--concurrency", "2"])
    out = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    _, status = os.waitpid(pid, 0)
    text = out.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0, text
    assert "100%|" in text and "3/3" in text  # tqdm's bar
    assert "\u240d" not in text and "\u241b" not in text  # drawn, not shown as text
    assert "3 succeeded, 0 failed" in text


# -- Dask distributed ----------------------------------------------------------------------

def steps(path: str) -> list[tuple[str, int]]:
    nb = fmt.read(path)
    return [(a["task_id"], a["attempt"]) for a in (fmt.cell_attrs(c) for c in nb["cells"])
            if "task_id" in a]


@pytest.mark.slow
def test_a_dask_cluster_gives_the_results_and_transcripts_of_a_local_run(
        project: Path, model: OpenAIServer, dask_cluster) -> None:
    address = dask_cluster()
    inputs = write_inputs(project / "topics.jsonl", [f"t{i}" for i in range(6)] + ["FAIL-x"])
    sop = str(project / "sop")
    local = CliRunner().invoke(main, ["run", "w/main", "--sop", sop, "--inputs", str(inputs),
                                      "--runs", str(project / "local"), "--json"])
    assert local.exit_code == 1, local.output
    calls = len(model.chat_requests)
    remote = CliRunner().invoke(main, ["run", "w/main", "--sop", sop, "--inputs", str(inputs),
                                       "--cluster", address, "--concurrency", "3",
                                       "--runs", str(project / "remote"), "--json"])
    assert remote.exit_code == 1, remote.output
    assert len(model.chat_requests) == 2 * calls, remote.output  # the workers' calls

    def rows(out: str) -> dict[int, dict[str, Any]]:
        return {r["input"]: r for r in map(json.loads, out.splitlines())}

    here, there = rows(local.stdout), rows(remote.stdout)
    assert set(here) == set(there) == set(range(1, 8))
    for i in here:
        a, b = here[i], there[i]
        assert (a["status"], a["context"], a["steps"], a["error"]) == \
            (b["status"], b["context"], b["steps"], b["error"])
        assert Path(b["transcript"]).parent == project / "remote"
        assert steps(a["transcript"]) == steps(b["transcript"])
    assert there[7]["error"]["error_type"] == "model_error"


def test_an_unreachable_cluster_is_named(project: Path, model: OpenAIServer,
                                         free_port) -> None:
    inputs = write_inputs(project / "topics.jsonl", ["a"])
    r = CliRunner().invoke(main, ["run", "w/main", "--sop", str(project / "sop"), "--inputs",
                                  str(inputs), "--cluster", f"tcp://127.0.0.1:{free_port()}"])
    assert r.exit_code == 2
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:" in r.stderr
    assert model.chat_requests == []
