"""What the Agent kernel asks the person when an external agent wants permission
(``kernel/_permission.py``): the request as a plain prompt any front end shows, and the
answer read back as one of the agent's options, anything else rejecting."""

from __future__ import annotations

from jupyter_percent_agent import acp
from jupyter_percent_agent.kernel._permission import (
    DIFF_LINES,
    chosen_option,
    plain_prompt,
    request_json,
)

OPTIONS = (acp.PermissionOption("allow", "Allow once", "allow_once"),
           acp.PermissionOption("always", "Always allow", "allow_always"),
           acp.PermissionOption("reject", "Reject", "reject_once"))


def _edit(new_lines: int = 1) -> acp.PermissionRequest:
    diff = acp.FileDiff("notes.txt", "old\n", "".join(f"new {i}\n" for i in range(new_lines)))
    call = acp.AgentToolCall("t1", "Edit notes.txt", kind="edit", locations=("notes.txt",),
                             diffs=(diff,))
    return acp.PermissionRequest(call, OPTIONS)


def test_the_prompt_names_the_tool_its_diff_and_the_numbered_options() -> None:
    prompt = plain_prompt(request_json("coder", _edit()))
    assert prompt.splitlines()[0] == "coder asks permission: Edit notes.txt (edit)"
    assert "  at notes.txt" in prompt
    assert "-old\n+new 0" in prompt
    assert prompt.endswith("Answer 1: Allow once, 2: Always allow, 3: Reject "
                           "(anything else rejects): ")


def test_a_command_is_shown_as_a_command_line() -> None:
    call = acp.AgentToolCall("t2", "Run tests", kind="execute",
                             raw_input={"command": ["pytest", "-q"]})
    asked = request_json("coder", acp.PermissionRequest(call, OPTIONS))
    assert asked["command"] == "pytest -q"
    assert "  $ pytest -q" in plain_prompt(asked)


def test_a_long_diff_is_cut_in_the_prompt_and_whole_for_the_dialog() -> None:
    asked = request_json("coder", _edit(new_lines=200))
    assert asked["diffs"][0]["diff"].count("\n+new ") == 200
    prompt = plain_prompt(asked)
    assert prompt.count("\n+new ") < DIFF_LINES
    assert "more lines" in prompt


def test_an_answer_names_an_option_by_id_number_or_name() -> None:
    request = _edit()
    assert chosen_option(request, "always") == OPTIONS[1]
    assert chosen_option(request, " 3 \n") == OPTIONS[2]
    assert chosen_option(request, "allow once") == OPTIONS[0]
    assert chosen_option(request, "allow_always") == OPTIONS[1]


def test_any_other_answer_rejects() -> None:
    request = _edit()
    for answer in ("", "y", "0", "4", "yes please"):
        assert chosen_option(request, answer) is None
