"""Code a reply proposes: one ATTP form (``[proposed_code]`` beside the answer), saved as a
new ``[code]`` cell under the reply with ``proposed=true``, never run by itself; running it
(``tce exec``) runs it in the code kernel and drops the mark."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from jupyter_percent_agent import attp
from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.cli import main
from jupyter_percent_agent.runtime import history as hist
from jupyter_percent_agent.testing.openai_server import OpenAIServer
from tests.paths import TEST_DATA

DATA = TEST_DATA
HEADER = "---\nagents:\n  helper:\n    models: [test-model]\n    tools: [weather]\n---\n"


@pytest.fixture
def folder(tmp_path: Path, trusted, local_model: OpenAIServer) -> Path:
    trusted(tmp_path)
    (tmp_path / "toolbox").mkdir()
    shutil.copy(DATA / "toolbox" / "weather.py", tmp_path / "toolbox" / "weather.py")
    (tmp_path / "weather.csv").write_text("city,t\nParis,18.5\nOslo,4\n")
    (tmp_path / "w.msg.md").write_text(HEADER)
    return tmp_path


def test_the_attp_prompt_documents_the_one_form() -> None:
    prompt = attp.system_prompt()
    assert "[proposed_code]" in prompt and "never runs by itself" in prompt


def test_a_proposal_parses_and_writes_back_the_same() -> None:
    reply = attp.parse_reply((DATA / "code" / "propose_answer.toml").read_text())
    assert isinstance(reply, attp.FinalAnswer) and reply.proposed is not None
    assert reply.proposed.language == "python" and "csv.DictReader" in reply.proposed.code
    assert attp.parse_reply(attp.format_reply(reply)) == reply
    with pytest.raises(attp.ATTPError, match="needs the code"):
        attp.parse_reply('answer = "x"\n\n[proposed_code]\nlanguage = "python"\n')


def test_a_fenced_block_in_an_answer_is_not_a_proposal() -> None:
    reply = attp.parse_reply('answer = """Try:\n\n```python\nprint(1)\n```\n"""\n')
    assert isinstance(reply, attp.FinalAnswer) and reply.proposed is None


def test_a_proposed_cell_lands_under_the_reply_and_runs_only_when_the_user_runs_it(
    folder: Path, openai_server: OpenAIServer
) -> None:
    path = folder / "w.msg.md"
    openai_server.script((DATA / "code" / "propose_answer.toml").read_text())
    r = CliRunner().invoke(
        main, ["chat", str(path), "-m", "Chart my weather file"], catch_exceptions=False
    )
    assert r.exit_code == 0, r.output
    _question, proposal = hist.conversation_cells(fmt.read(path))
    assert fmt.cell_kind(proposal) == "code"
    assert fmt.cell_attrs(proposal) == {"proposed": True}
    assert "csv.DictReader" in fmt.message_text(proposal)
    assert not proposal["outputs"] and proposal["execution_count"] is None  # not run
    assert "[^" in path.read_text() and "proposed=true" in path.read_text()
    # the next `tce exec` leaves it, and says how to run it
    r = CliRunner().invoke(main, ["exec", str(path)], catch_exceptions=False)
    assert r.exit_code == 0 and "not run: cell 2" in r.output, r.output
    assert fmt.cell_attrs(hist.conversation_cells(fmt.read(path))[1]) == {"proposed": True}
    # the user read it and runs it: the cell runs in the code kernel, the mark goes
    r = CliRunner().invoke(main, ["exec", str(path), "--cell", "2"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    _, ran = hist.conversation_cells(fmt.read(path))
    assert "proposed" not in fmt.cell_attrs(ran)
    assert "".join(fmt.output_text(o) for o in ran["outputs"]) == "2 rows\n"
    assert len(openai_server.chat_requests) == 1  # the message was answered, not sent again


def test_auto_run_in_the_users_config_runs_the_proposal_and_a_file_cannot_ask_for_it(
    folder: Path, openai_server: OpenAIServer, user_config_dir: Path
) -> None:
    path = folder / "w.msg.md"
    # a file asking for auto_run is only an attribute: the proposal waits
    path.write_text(HEADER.replace("---\n", "---\nauto_run: true\n", 1))
    openai_server.script((DATA / "code" / "propose_answer.toml").read_text())
    r = CliRunner().invoke(main, ["chat", str(path), "-m", "Chart it"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    _, waiting = hist.conversation_cells(fmt.read(path))
    assert not waiting["outputs"] and fmt.cell_attrs(waiting) == {"proposed": True}
    # the user's config names the folder: the next proposal runs at once
    config = user_config_dir / "config.toml"
    config.write_text(config.read_text() + f'\nauto_run = ["{folder}"]\n')
    openai_server.script((DATA / "code" / "propose_answer.toml").read_text())
    r = CliRunner().invoke(main, ["chat", str(path), "-m", "Again"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    cells = hist.conversation_cells(fmt.read(path))
    ran = cells[-1]
    assert fmt.cell_kind(ran) == "code" and "proposed" not in fmt.cell_attrs(ran)
    assert "".join(fmt.output_text(o) for o in ran["outputs"]) == "2 rows\n"
    assert not cells[1]["outputs"]  # the earlier proposal still waits for the user


def test_tce_exec_runs_a_proposal_at_once_only_with_auto_run(
    folder: Path, openai_server: OpenAIServer, user_config_dir: Path
) -> None:
    path = folder / "w.msg.md"
    path.write_text(HEADER + "\n# %% Ask[^m1]\n[^m1]: [markdown]\n\nChart it\n")
    config = user_config_dir / "config.toml"
    config.write_text(config.read_text() + f'\nauto_run = ["{folder}"]\n')
    openai_server.script((DATA / "code" / "propose_answer.toml").read_text())
    r = CliRunner().invoke(main, ["exec", str(path)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    _, ran = hist.conversation_cells(fmt.read(path))
    assert "proposed" not in fmt.cell_attrs(ran)
    assert "".join(fmt.output_text(o) for o in ran["outputs"]) == "2 rows\n"
