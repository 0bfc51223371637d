"""Checked is what is opened: a folder along a path that a file names, swapped for a link to
somewhere else between the check and the open (a shared folder, a sync tool), makes nothing
read from or written outside. The swap is injected at that exact point through the test hook
``format.opening.between_check_and_open``, so every test is deterministic. Also: ``include:``
and ``[async]`` refuse a file with another hard link."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent import trust
from jupyter_percent_agent.format import opening
from jupyter_percent_agent.runtime import RunOptions, run_turn
from jupyter_percent_agent.testing.environment import tce
from jupyter_percent_agent.testing.openai_server import OpenAIServer

SECRET = "the launch code is 1234"


@pytest.fixture
def swap(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path, Path], list[str]]:
    """``swap(folder, elsewhere)``: the first time a path at or under ``folder`` (or one
    ``when(path)`` picks) is about to be opened after its check, ``folder`` is moved aside
    and replaced by a link to ``elsewhere``. Returns the path the hook swapped at (once it
    happened)."""
    def arm(folder: Path, elsewhere: Path,
            when: Callable[[str], bool] | None = None) -> list[str]:
        done: list[str] = []

        def under(path: str) -> bool:
            return path == str(folder) or path.startswith(str(folder) + os.sep)

        def hook(path: str) -> None:
            if not done and (when or under)(path):
                os.rename(folder, folder.with_name(folder.name + "-moved"))
                os.symlink(elsewhere, folder)
                done.append(path)

        monkeypatch.setattr(opening, "between_check_and_open", hook)
        return done

    return arm


def bodies(server: OpenAIServer) -> str:
    return json.dumps([r.body for r in server.requests], ensure_ascii=False)


# -- include: ------------------------------------------------------------------------------

def test_an_include_whose_folder_is_swapped_for_a_link_reads_nothing_outside(
        tmp_path: Path, keys, local_model: OpenAIServer, swap) -> None:
    proj, outside = tmp_path / "proj", tmp_path / "outside"
    (proj / "sub").mkdir(parents=True)
    outside.mkdir()
    (proj / "sub" / "notes.msg.md").write_text("# %% notes\n\nharmless notes\n")
    (outside / "notes.msg.md").write_text(f"# %% private\n\n{SECRET}\n")
    path = proj / "a.msg.md"
    path.write_text("---\ninclude: ['sub/notes.msg.md']\n---\n")
    swapped = swap(proj / "sub", outside)
    result = tce("chat", str(path), "-m", "summarize")
    assert swapped, "the include was never opened"
    assert result.exit_code == 6, result.output
    line = result.output.strip().splitlines()[-1]
    assert "refused:" in line and "symbolic link now" in line
    assert "1234" not in bodies(local_model)


def test_an_include_with_another_hard_link_is_refused_in_one_line(
        tmp_path: Path, keys, local_model: OpenAIServer) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (tmp_path / "private.msg.md").write_text(f"# %% private\n\n{SECRET}\n")
    os.link(tmp_path / "private.msg.md", proj / "notes.msg.md")
    path = proj / "a.msg.md"
    path.write_text("---\ninclude: ['notes.msg.md']\n---\n")
    result = tce("chat", str(path), "-m", "summarize")
    assert result.exit_code == 6, result.output
    line = result.output.strip()
    assert len(line.splitlines()) == 1 and "notes.msg.md" in line
    assert "refused: include 'notes.msg.md' has 2 hard links" in line
    assert "to allow it: copy the file here instead" in line
    assert "1234" not in bodies(local_model)


# -- [async](FILE) -------------------------------------------------------------------------

def async_file(folder: Path, link: str = "results/poem.md") -> Path:
    path = folder / "a.msg.md"
    path.write_text(f'# %% job[^j1]\n[^j1]: [async]({link}) id="1"\n\nWrite a poem.\n')
    return path


def test_an_async_result_whose_folder_is_swapped_is_not_read_from_outside(
        tmp_path: Path, keys, local_model: OpenAIServer, swap) -> None:
    proj, outside = tmp_path / "proj", tmp_path / "outside"
    (proj / "results").mkdir(parents=True)
    outside.mkdir()
    (proj / "results" / "poem.md").write_text("A poem.")
    (outside / "poem.md").write_text(SECRET)
    path = async_file(proj)
    swapped = swap(proj / "results", outside)
    with pytest.raises(fmt.FormatError) as err:
        asyncio.run(run_turn(fmt.read(path), "j1", RunOptions(base_dir=proj)))
    assert swapped and "symbolic link now" in str(err.value)
    assert "1234" not in str(err.value) and local_model.requests == []


def test_an_async_result_whose_folder_is_swapped_is_not_written_outside(
        tmp_path: Path, keys, local_model: OpenAIServer, swap) -> None:
    local_model.script("A poem.")
    proj, outside = tmp_path / "proj", tmp_path / "outside"
    (proj / "results").mkdir(parents=True)
    outside.mkdir()
    path = async_file(proj)
    swapped = swap(proj / "results", outside)
    with pytest.raises(fmt.FormatError) as err:
        asyncio.run(run_turn(fmt.read(path), "j1", RunOptions(base_dir=proj)))
    assert swapped and "symbolic link now" in str(err.value)
    assert list(outside.iterdir()) == []


def test_an_async_file_with_another_hard_link_is_refused(tmp_path: Path, keys,
                                                         local_model: OpenAIServer) -> None:
    proj = tmp_path / "proj"
    (proj / "results").mkdir(parents=True)
    (tmp_path / "private.md").write_text(SECRET)
    os.link(tmp_path / "private.md", proj / "results" / "poem.md")
    path = async_file(proj)
    with pytest.raises(trust.TrustError) as err:
        asyncio.run(run_turn(fmt.read(path), "j1", RunOptions(base_dir=proj)))
    assert str(err.value) == ("refused: [async] file 'results/poem.md' has 2 hard links "
                              "(another name may lie outside the folder); to allow it: copy "
                              "the file here instead")
    assert local_model.requests == [] and (tmp_path / "private.md").read_text() == SECRET


# -- task documents: tce run, a [task] cell, tce sop search ---------------------------------

DOC = ("---\ntask_id: t/go\ntask_type: execute\ndescription: {what}\noutput:\n  $.out: $\n"
       "---\n\n## parameters.prompt\n{prompt}\n")


def sop_pair(tmp_path: Path) -> tuple[Path, Path]:
    """``proj/sop`` with a harmless t/go, and ``outside/t`` with a t/go holding the secret."""
    proj, outside = tmp_path / "proj", tmp_path / "outside"
    (proj / "sop" / "t").mkdir(parents=True)
    (outside / "t").mkdir(parents=True)
    (proj / "sop" / "t" / "go.md").write_text(DOC.format(what="say hello", prompt="Say HELLO"))
    (outside / "t" / "go.md").write_text(DOC.format(what="quarterly payroll figures",
                                                    prompt=SECRET))
    return proj, outside


def test_tce_run_reads_no_document_through_a_folder_swapped_for_a_link(
        tmp_path: Path, keys, local_model: OpenAIServer, swap) -> None:
    proj, outside = sop_pair(tmp_path)
    local_model.script("hello")
    swapped = swap(proj / "sop" / "t", outside / "t")
    result = tce("run", "t/go", "--sop", str(proj / "sop"))
    assert swapped and result.exit_code != 0, result.output
    assert "symbolic link now" in result.output
    assert "1234" not in bodies(local_model) and "1234" not in result.output


def test_a_task_cells_sop_folder_swapped_after_its_check_is_not_read(
        tmp_path: Path, keys, local_model: OpenAIServer, swap) -> None:
    from jupyter_percent_agent.tasks.cell import run_task_cell

    proj, outside = sop_pair(tmp_path)
    local_model.script("hello")
    path = proj / "task.msg.md"
    path.write_text('# %% run[^k]\n[^k]: [task] task_id="t/go" sop="sop"\n\n{}\n')
    cell = next(c for c in fmt.read(path)["cells"] if fmt.cell_kind(c) == "task")
    swapped = swap(proj / "sop", outside)
    run = asyncio.run(run_task_cell(cell, base_dir=proj))
    assert swapped and run.status == "error"
    assert "symbolic link now" in run.error
    assert "1234" not in bodies(local_model)


def test_sop_search_reads_no_document_through_a_folder_swapped_for_a_link(
        tmp_path: Path, swap, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERCENT_AGENT_EMBED_MODEL", "none")
    proj, outside = sop_pair(tmp_path)
    swapped = swap(proj / "sop" / "t", outside / "t")
    result = tce("sop", "search", "payroll figures", "--sop", str(proj / "sop"), "--json")
    assert swapped, result.output
    assert "payroll" not in result.stdout and "t/go" not in result.stdout


def test_the_index_file_is_connected_in_the_folder_that_was_checked(
        tmp_path: Path, swap, monkeypatch: pytest.MonkeyPatch) -> None:
    """The link check and the connect of the SOP index: a folder swapped between them leads
    SQLite to no other index (here another folder's, sealed by this user)."""
    from jupyter_percent_agent.tasks.index import Index

    monkeypatch.setenv("PERCENT_AGENT_EMBED_MODEL", "none")
    proj, outside = sop_pair(tmp_path)
    with Index.open(outside):
        pass  # this user's sealed index of the other folder
    theirs = (outside / ".sop-index.sqlite").read_bytes()
    with Index.open(proj / "sop"):
        pass
    swapped = swap(proj / "sop", outside, lambda path: path.endswith(".sop-index.sqlite"))
    with Index.open(proj / "sop", update=False) as ix:
        assert "payroll" not in json.dumps(ix.get("t/go"))
        assert ix.get("t/go")["description"] == "say hello"
    assert swapped and swapped[0].endswith(".sop-index.sqlite")
    assert (outside / ".sop-index.sqlite").read_bytes() == theirs


def task_in(proj: Path) -> dict:
    path = proj / "task.msg.md"
    path.write_text('# %% run[^k]\n[^k]: [task] task_id="t/go" sop="sop" runs="out"\n\n{}\n')
    return next(c for c in fmt.read(path)["cells"] if fmt.cell_kind(c) == "task")


def test_a_task_cells_runs_folder_swapped_after_its_check_receives_nothing_outside(
        tmp_path: Path, keys, local_model: OpenAIServer, swap) -> None:
    from jupyter_percent_agent.tasks.cell import run_task_cell

    proj, outside = sop_pair(tmp_path)
    (proj / "out").mkdir()
    local_model.script("hello")
    swapped = swap(proj / "out", outside)
    run = asyncio.run(run_task_cell(task_in(proj), base_dir=proj))
    assert swapped and run.status == "error", run.error
    assert "symbolic link now" in run.error
    assert sorted(p.name for p in outside.iterdir()) == ["t"]


def test_a_runs_folder_swapped_while_the_run_goes_on_gets_no_transcript_write(
        tmp_path: Path, keys, local_model: OpenAIServer) -> None:
    """The transcript is written where runs/ really was when the run started: a swap once
    it runs (after the transcript was made, before a step is written) is refused."""
    from jupyter_percent_agent.runtime.events import Delta
    from jupyter_percent_agent.tasks import run_task

    proj, outside = sop_pair(tmp_path)
    runs = proj / "out"
    runs.mkdir()
    local_model.script("hello")

    def on_event(event: object) -> None:
        if isinstance(event, Delta) and not runs.is_symlink():  # the model is answering
            os.rename(runs, runs.with_name("out-moved"))
            os.symlink(outside, runs)

    with pytest.raises(fmt.FormatError, match="symbolic link now"):
        run_task(proj / "sop", "t/go", {}, runs_dir=runs, on_event=on_event)
    assert runs.is_symlink() and sorted(p.name for p in outside.iterdir()) == ["t"]
