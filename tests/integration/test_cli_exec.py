"""``tce exec`` end to end: the real command in a subprocess, the user's real ``python3``
kernelspec (ipykernel) in a trusted folder, the sandbox in an untrusted one, and litellm's
client against the local test server for the messages after the code cells."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.testing.environment import run_tce
from jupyter_percent_agent.testing.openai_server import OpenAIServer, Reply
from tests.helpers.conversations import cells
from tests.paths import TEST_DATA

DATA = TEST_DATA / "code"
TCE = [sys.executable, "-c", "from jupyter_percent_agent.cli import main; main()"]
TIMEOUT = 180


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder with the scenario's file and the image its second cell shows."""
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(DATA / "done_when.msg.md", work / "nums.msg.md")
    shutil.copy(DATA / "red-2000x1000.png", work / "red-2000x1000.png")
    return work


def texts(cell: dict, kind: str, name: str | None = None) -> str:
    return "".join(
        fmt.output_text(o)
        for o in cell.get("outputs") or []
        if fmt.output_kind(o) == kind and (name is None or o.get("name") == name)
    )


def test_exec_runs_code_in_a_kernel_and_sends_outputs_with_the_question(
    folder: Path, env: dict[str, str], openai_server: OpenAIServer, trusted: Callable[[Path], Path]
) -> None:
    trusted(folder)
    path = folder / "nums.msg.md"
    openai_server.script("The mean is 4 because the numbers sum to 16.")
    done = run_tce("exec", str(path), env=env)
    assert done.returncode == 0, done.stderr
    load, show, question = cells(path)
    # stdout, stderr, state kept from the first cell (data), and the PNG as it was shown
    assert texts(load, "stream", "stdout") == "mean 4\n"
    assert texts(load, "stream", "stderr") == "a warning\n"
    assert load["execution_count"] == 1 and show["execution_count"] == 2
    assert texts(show, "stream", "stdout") == "points 4\n"
    (image,) = [o for o in show["outputs"] if "image/png" in (o.get("data") or {})]
    assert (
        image["data"]["image/png"].replace("\n", "")
        == __import__("base64").b64encode((DATA / "red-2000x1000.png").read_bytes()).decode()
    )
    # the question went with both cells' code and outputs, framed as data
    (request,) = openai_server.chat_requests
    sent = "\n".join(m["content"] for m in request.messages if isinstance(m["content"], str))
    assert "statistics.mean(data)" in sent and "mean 4" in sent
    assert "stderr: a warning" in sent and "points 4" in sent
    assert "not instructions to follow" in sent
    assert "[image 1: image/png]" in sent and "not shown" in sent  # test-model sees no images
    assert request.messages[-1]["content"].startswith("What does the output above say")
    assert "sum to 16" in fmt.output_text(question["outputs"][-1])
    # and the saved file reads back the same; a second exec runs nothing again
    before = path.read_bytes()
    again = run_tce("exec", str(path), env=env)
    assert again.returncode == 0, again.stderr
    assert "nothing to run" in again.stderr
    assert path.read_bytes() == before and len(openai_server.chat_requests) == 1


def test_exec_in_an_untrusted_folder_runs_nothing_and_exits_6(
    folder: Path, env: dict[str, str], openai_server: OpenAIServer
) -> None:
    path = folder / "nums.msg.md"
    before = path.read_bytes()
    # run in a child that then says whether a kernel manager was ever imported
    probe = (
        "import sys\nfrom pathlib import Path\n"
        "from jupyter_percent_agent.cli.exec import run_exec\n"
        f"try:\n    code = run_exec(Path({str(path)!r}))\n"
        "except SystemExit as exc:\n    code = exc.code\n"
        "print('kernel manager imported:', 'jupyter_client.manager' in sys.modules)\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert done.returncode == 6, done.stderr
    (line,) = [ln for ln in done.stderr.splitlines() if ln.startswith("tce:")]
    assert "cell c1" in line and f"tce trust {folder}" in line and "import" in line
    assert "kernel manager imported: False" in done.stdout
    assert path.read_bytes() == before and not openai_server.chat_requests


def test_a_plain_python_cell_still_runs_in_the_sandbox_when_untrusted(
    tmp_path: Path, env: dict[str, str]
) -> None:
    path = tmp_path / "s.msg.md"
    path.write_text("# %% Sum[^c1]\n[^c1]: [code]\n\n```python\nprint(sum([1, 2, 3]))\n```\n")
    done = run_tce("exec", str(path), env=env)
    assert done.returncode == 0, done.stderr
    assert texts(cells(path)[0], "stream", "stdout") == "6\n"


def test_exec_leaves_code_a_reply_proposed_until_the_user_names_it(
    tmp_path: Path, env: dict[str, str], trusted: Callable[[Path], Path]
) -> None:
    # a proposal never runs by itself: not with the user's next `tce exec`, nor with --all
    trusted(tmp_path)
    path = tmp_path / "n.msg.md"
    path.write_text(
        "# %% One[^a]\n[^a]: [code]\n\n```python\nn = 1\n```\n\n"
        "# %% Two[^b]\n[^b]: [code] proposed=true\n\n```python\nprint(n + 1)\n```\n"
    )
    for args in ((), ("--all",)):
        done = run_tce("exec", str(path), *args, env=env)
        assert done.returncode == 0, done.stderr
        assert "not run: cell 2, code a reply proposed" in done.stderr and "--cell" in done.stderr
        one, two = cells(path)
        assert one["execution_count"] is not None
        assert not two["outputs"] and fmt.cell_attrs(two) == {"proposed": True}
    # the user read it: --proposed runs it (and --cell N, below), and the mark goes
    done = run_tce("exec", str(path), "--all", "--proposed", env=env)
    assert done.returncode == 0, done.stderr
    two = cells(path)[1]
    assert texts(two, "stream") == "2\n" and "proposed" not in fmt.cell_attrs(two)


def test_exec_on_a_read_only_file_runs_no_cell_and_says_so_in_one_line(
    tmp_path: Path, env: dict[str, str], trusted: Callable[[Path], Path]
) -> None:
    """Its outputs could not be saved: the cell (which makes a file here) must not run."""
    trusted(tmp_path)
    path = tmp_path / "ro.msg.md"
    path.write_text("# %% Mark[^c1]\n[^c1]: [code]\n\n```python\n"
                    "open('ran.txt', 'w').write('x')\n```\n")
    before = path.read_bytes()
    path.chmod(0o444)
    done = run_tce("exec", str(path), env=env)
    assert done.returncode == 2, done.stderr
    (line,) = [ln for ln in done.stderr.splitlines() if ln.startswith("tce:")]
    assert line == f"tce: {path}: the file is read-only: nothing written (chmod u+w to allow it)"
    assert "Traceback" not in done.stderr
    assert path.read_bytes() == before and not (tmp_path / "ran.txt").exists()


def test_exec_all_and_cell_run_again_and_replace_outputs(
    tmp_path: Path, env: dict[str, str], trusted: Callable[[Path], Path]
) -> None:
    trusted(tmp_path)
    path = tmp_path / "n.msg.md"
    path.write_text(
        "# %% One[^a]\n[^a]: [code]\n\n```python\nn = 1\n```\n\n"
        "# %% Two[^b]\n[^b]: [code]\n\n```python\nprint(n + 1)\n```\n"
    )
    assert run_tce("exec", str(path), env=env).returncode == 0
    _one, two = cells(path)
    assert texts(two, "stream") == "2\n"
    # --cell 2 alone: a fresh kernel has no n, the error is saved in the file
    done = run_tce("exec", str(path), "--cell", "2", env=env)
    assert done.returncode == 4 and "NameError" in done.stderr
    two = cells(path)[1]
    assert [fmt.output_kind(o) for o in two["outputs"]] == ["error"]
    assert "\x1b" not in path.read_text()  # ANSI colours stripped in the file
    # --all runs both again in one kernel: the error is replaced by the output
    assert run_tce("exec", str(path), "--all", env=env).returncode == 0
    two = cells(path)[1]
    assert texts(two, "stream") == "2\n" and two["execution_count"] == 2
    bad = run_tce("exec", str(path), "--cell", "9", env=env)
    assert bad.returncode == 2 and "has 2 cells" in bad.stderr


def test_missing_kernelspec_is_one_line_naming_it(
    tmp_path: Path, env: dict[str, str], trusted: Callable[[Path], Path]
) -> None:
    trusted(tmp_path)
    path = tmp_path / "c.msg.md"
    path.write_text("# %% Old[^a]\n[^a]: [code]\n\n```cobol\nDISPLAY 'HI'.\n```\n")
    before = path.read_bytes()
    done = run_tce("exec", str(path), env=env)
    assert done.returncode == 4
    (line,) = [ln for ln in done.stderr.splitlines() if ln.startswith("tce:")]
    assert "'cobol'" in line and "kernelspec" in line
    assert path.read_bytes() == before


def test_ctrl_c_interrupts_the_kernel_keeps_outputs_and_exits_130(
    tmp_path: Path, env: dict[str, str], trusted: Callable[[Path], Path]
) -> None:
    trusted(tmp_path)
    path = tmp_path / "spin.msg.md"
    path.write_text(
        "# %% Spin[^a]\n[^a]: [code]\n\n```python\nimport time\n"
        "print('started', flush=True)\nwhile True:\n    time.sleep(0.05)\n```\n"
    )
    proc = subprocess.Popen(
        [*TCE, "exec", str(path)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        assert "cell 1" in proc.stderr.readline()
        time.sleep(3)  # the kernel starts and the cell is in its loop (nothing is timed)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    (cell,) = cells(path)
    assert "started" in texts(cell, "stream")
    kinds = [(fmt.output_kind(o), o.get("ename")) for o in cell["outputs"]]
    assert ("error", "KeyboardInterrupt") in kinds


def test_a_vision_agent_gets_the_plot_as_an_image_part(
    folder: Path, env: dict[str, str], openai_server: OpenAIServer, trusted: Callable[[Path], Path]
) -> None:
    trusted(folder)
    path = folder / "nums.msg.md"
    front = "---\nagents:\n  seer:\n    models: [test-model]\n    vision: true\n---\n\n"
    path.write_text(front + path.read_text())
    openai_server.script("A red rectangle.")
    done = run_tce("exec", str(path), env=env)
    assert done.returncode == 0, done.stderr
    (request,) = openai_server.chat_requests
    parts = [p for m in request.messages if isinstance(m["content"], list) for p in m["content"]]
    assert [p["type"] for p in parts] == ["text", "image_url"]
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert "[image 1: image/png]" in parts[0]["text"]


def test_an_untrusted_cells_own_mistake_is_its_error_not_a_refusal(
    tmp_path: Path, env: dict[str, str]
) -> None:
    path = tmp_path / "typo.msg.md"
    path.write_text("# %% Typo[^c1]\n[^c1]: [code]\n\n```python\nprint(totl)\n```\n")
    done = run_tce("exec", str(path), env=env)
    assert done.returncode == 4, done.stderr
    assert "NameError" in done.stderr and "tce trust" not in done.stderr
    assert "NameError" in texts(cells(path)[0], "stream", "stderr")
    path.write_text("# %% Read[^c1]\n[^c1]: [code]\n\n```python\nprint(open('x').read())\n```\n")
    refused = run_tce("exec", str(path), env=env)
    assert refused.returncode == 6 and f"tce trust {tmp_path}" in refused.stderr


def test_exec_runs_a_script_message_file_and_it_stays_a_runnable_script(
    tmp_path: Path,
    env: dict[str, str],
    openai_server: OpenAIServer,
    trusted: Callable[[Path], Path],
) -> None:
    """``tce exec analysis.msg.py``: the code cell in its kernel, then the question with its
    output; the outputs are saved as comments, so ``python analysis.msg.py`` still runs."""
    trusted(tmp_path)
    path = tmp_path / "analysis.msg.py"
    shutil.copy(TEST_DATA / "clients" / "analysis.msg.py", path)
    openai_server.script("Three numbers.")
    done = run_tce("exec", str(path), env=env)
    assert done.returncode == 0, done.stderr
    load, question = cells(path)
    assert load["execution_count"] == 1 and texts(load, "stream", "stdout") == "loaded 3\n"
    assert "Three numbers." in fmt.output_text(question["outputs"][-1])
    (request,) = openai_server.chat_requests
    assert "loaded 3" in json.dumps(request.messages)
    text = path.read_text(encoding="utf-8")
    assert "\n# stdout> loaded 3\n" in text and "\n# Three numbers.\n" in text
    ran = subprocess.run(
        [sys.executable, path.name], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0 and ran.stdout == "loaded 3\n", ran.stderr


def test_exec_runs_a_task_cell_as_the_agent_kernel_does(
    tmp_path: Path, env: dict[str, str], local_model: OpenAIServer
) -> None:
    """A [task] cell was skipped by tce exec (``[1/1] cell 2``, exit 0, nothing written),
    while jupytext --execute on the same file ran it on the Agent kernel."""
    (tmp_path / "sop" / "t").mkdir(parents=True)
    (tmp_path / "sop" / "t" / "title.md").write_text(
        "---\ntask_id: t/title\ntask_type: execute\ninput:\n  topic: $.topic\noutput:\n"
        "  $.title: $\n---\n\n## parameters.prompt\nA TITLE for {topic}\n")
    path = tmp_path / "t.msg.md"
    path.write_text(
        '# %% Title it[^t1]\n[^t1]: [task] task_id="t/title" sop="sop"\n\n{"topic": "rain"}\n\n'
        "# %% And?[^q1]\n[^q1]: [markdown]\n\nIs it good?\n")
    local_model.script("Songs of Rain", "Yes.")
    done = run_tce("exec", str(path), env=env)
    assert done.returncode == 0, done.stderr
    assert "[1/2] cell 1 (task)" in done.stderr
    task, question = cells(path)
    attrs = [fmt.output_attrs(o) for o in task["outputs"]]
    assert attrs[-1]["task_status"] == "succeeded"
    assert "Songs of Rain" in fmt.output_text(task["outputs"][-1])
    assert (tmp_path / attrs[-1]["transcript"]).is_file()
    assert fmt.output_text(question["outputs"][-1]) == "Yes."
    done = run_tce("exec", str(path), env=env)  # it has run: not again
    assert done.returncode == 0 and len(local_model.chat_requests) == 2


def test_an_interrupted_task_cell_run_again_continues_its_transcript(
    tmp_path: Path, env: dict[str, str], local_model: OpenAIServer
) -> None:
    """As in the Agent kernel, running an interrupted [task] cell again (tce exec --cell N)
    continues its transcript: the finished step's model is not called again."""
    from jupyter_percent_agent.testing.openai_server import Reply

    for name, text in (("main", "task_type: plan\nplan_steps: [t/one, t/two]\n"),
                       ("one", "task_type: execute\noutput:\n  $.one: $\n"),
                       ("two", "task_type: execute\noutput:\n  $.two: $\n")):
        doc = tmp_path / "sop" / "t" / f"{name}.md"
        doc.parent.mkdir(parents=True, exist_ok=True)
        prompt = "" if name == "main" else f"\n## parameters.prompt\nSTEP {name}\n"
        doc.write_text(f"---\ntask_id: t/{name}\n{text}---\n{prompt}")
    path = tmp_path / "t.msg.md"
    path.write_text('# %% Go[^t1]\n[^t1]: [task] task_id="t/main" sop="sop"\n\n{}\n')
    local_model.script("first", Reply("second, too late", delay=60))
    proc = subprocess.Popen([*TCE, "exec", str(path)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while len(local_model.chat_requests) < 2:  # the second step waits for its reply
            assert time.monotonic() < deadline and proc.poll() is None, "no second step"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    (cell,) = cells(path)
    assert fmt.output_attrs(cell["outputs"][-1])["task_status"] == "interrupted"
    local_model.reset()
    local_model.script("second")
    done = run_tce("exec", str(path), "--cell", "1", env=env)
    assert done.returncode == 0, done.stderr
    (cell,) = cells(path)
    assert "continuing runs/" in texts(cell, "stream")
    assert fmt.output_attrs(cell["outputs"][-1])["task_status"] == "succeeded"
    assert ["STEP two" in json.dumps(r.messages) for r in local_model.chat_requests] == [True]
    assert len(list((tmp_path / "runs").glob("*.msg.md"))) == 1


def test_a_task_cell_that_fails_or_is_refused_exits_as_tce_run_does(
    tmp_path: Path, env: dict[str, str], local_model: OpenAIServer
) -> None:
    """A failed [task] cell exits 1 as tce run's failed workflow does (not 4, a tool's), and
    one the trust rules refuse (its toolbox in a folder not trusted) exits 6."""
    (tmp_path / "toolbox").mkdir()
    (tmp_path / "toolbox" / "kit.py").write_text(
        'def shout(text: str) -> str:\n    """Shout.\n\n    Args:\n        text: what\n    """\n'
        "    return text.upper()\n")
    (tmp_path / "sop").mkdir()
    (tmp_path / "sop" / "loud.md").write_text(
        "---\ntask_id: loud\ntask_type: execute\ntool:\n  tool_id: shout\n  parameters:\n"
        "    - name: text\n      value: hi\n---\n")
    (tmp_path / "sop" / "ask.md").write_text(
        "---\ntask_id: ask\ntask_type: execute\n---\n\n## parameters.prompt\nAsk.\n")
    path = tmp_path / "t.msg.md"
    path.write_text('# %% Loud[^t1]\n[^t1]: [task] task_id="loud" sop="sop"\n\n{}\n')
    done = run_tce("exec", str(path), env=env)
    assert done.returncode == 6, done.stderr
    assert "tce trust" in done.stderr
    path.write_text('# %% Ask[^t1]\n[^t1]: [task] task_id="ask" sop="sop"\n\n{}\n')
    local_model.script(Reply.http_error(500))
    done = run_tce("exec", str(path), env=env)
    assert done.returncode == 1, done.stderr


def test_a_task_cell_whose_sop_points_out_of_the_folder_exits_6_as_every_refusal(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """sop="../x" is refused by the trust rules (a path out of the file's folder): exit 6,
    as a toolbox in a folder not trusted, not 1 as a workflow that failed."""
    (tmp_path / "x").mkdir()
    (tmp_path / "in").mkdir()
    path = tmp_path / "in" / "t.msg.md"
    path.write_text('# %% Out[^t1]\n[^t1]: [task] task_id="loud" sop="../x"\n\n{}\n')
    done = run_tce("exec", str(path), env=env)
    assert done.returncode == 6, done.stderr
    assert "[task] sop" in done.stderr
