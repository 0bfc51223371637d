"""Red team: a script message file (``NAME.msg.py``) runs only the code of its ``[code]`` cells.

``python notes.msg.py`` is how a script message file is meant to be used, so every message,
reply, tool call and output in it must stay behind the comment marker, whatever characters the
text holds. ``tce chat`` runs here as the user runs it, with the project's local model server
playing a prompt-injected model; then the saved file runs under the real interpreter. Each case
failed before its fix; the module grows with every hole.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.testing.environment import model_env, run_tce
from jupyter_percent_agent.testing.openai_server import OpenAIServer

CANARY = "PWNED-by-the-reply"

# Every character some reader takes for the end of a line: Python's tokenizer ends a line at a
# lone CR; JavaScript at U+2028 and U+2029; str.splitlines (editors, other tools) at all of them
LINE_BREAKS = ["\r", "\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]


@pytest.fixture
def model() -> OpenAIServer:
    with OpenAIServer() as server:
        yield server


def chat(folder: Path, name: str, server: OpenAIServer, config: Path, reply: str):
    server.script(reply)
    return run_tce("chat", name, "-m", "Summarise the data, please.", cwd=folder,
                   env=model_env(server, config))  # fmt: skip


@pytest.mark.parametrize("brk", LINE_BREAKS, ids=[f"U+{ord(c):04X}" for c in LINE_BREAKS])
def test_a_line_break_in_a_reply_does_not_turn_its_text_into_python_code(
    tmp_path: Path, model: OpenAIServer, user_config_dir: Path, brk: str
) -> None:
    """Python ends a line at a lone CR: a reply 'Done.<CR>import os; ...' written as
    '# Done.<CR>import os; ...' ran the model's code as the user with python notes.msg.py."""
    reply = f"Done.{brk}import os; print({CANARY!r}, os.getcwd())"
    result = chat(tmp_path, "notes.msg.py", model, user_config_dir, reply)
    assert result.returncode == 0, result.stderr
    script = tmp_path / "notes.msg.py"
    ran = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60)  # fmt: skip
    assert CANARY not in ran.stdout
    assert ran.returncode == 0, ran.stderr
    # nothing lost: the file keeps the reply exactly
    nb = fmt.read(script)
    assert [o["data"]["text/markdown"] for o in nb["cells"][-1]["outputs"]] == [reply]


@pytest.mark.parametrize("brk", ["\u2028", "\u2029", "\r"])
def test_a_line_break_in_a_reply_does_not_turn_its_text_into_javascript_code(
    tmp_path: Path, model: OpenAIServer, user_config_dir: Path, brk: str
) -> None:
    """JavaScript ends a // comment at U+2028 and U+2029 (and CR): node notes.msg.js ran the
    text after one."""
    reply = f"Done.{brk}console.log({CANARY!r})"
    result = chat(tmp_path, "notes.msg.js", model, user_config_dir, reply)
    assert result.returncode == 0, result.stderr
    script = tmp_path / "notes.msg.js"
    ran = subprocess.run(["node", str(script)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert CANARY not in ran.stdout
    assert ran.returncode == 0, ran.stderr
    assert fmt.read(script)["cells"][-1]["outputs"][0]["data"]["text/markdown"] == reply


@pytest.mark.parametrize("text", [
    "a\rb", "a\r# b", "a\r# # b", "\r", "\r\r# x", "a\r\nb", "x\u2028# y", "%% a\r%% b",
    "a\r\\%% b",
])  # fmt: skip
@pytest.mark.parametrize("ext", [".py", ".js", ".m", ".hs"])
def test_text_with_line_breaks_reads_back_exactly_from_a_script(text: str, ext: str) -> None:
    nb = fmt.reads("# %% Q[^q]\n[^q]: [markdown]\n\nquestion\n")
    nb["cells"][0]["source"] = text
    path = f"notes.msg{ext}"
    written = fmt.writes(nb, path=path)
    assert fmt.reads(written, path=path)["cells"][0]["source"] == text
    assert fmt.writes(fmt.reads(written, path=path), path=path) == written
    if "\n" not in text:  # and in a CRLF file
        crlf = written.replace("\n", "\r\n")
        assert fmt.reads(crlf, path=path)["cells"][0]["source"] == text
        assert fmt.writes(fmt.reads(crlf, path=path), path=path) == crlf


def test_code_a_reply_proposed_is_not_plain_code_of_the_script(tmp_path: Path) -> None:
    """A proposed cell (saved by JupyterLab as the labextension inserted it, with no blank line
    after the code) was written as plain code: python notes.msg.py ran what the model wrote
    before the user had read it. Once the user runs it (the mark gone) it is plain code."""
    nb = fmt.reads("# %% Q[^q]\n[^q]: [markdown]\n\nRead my file.\n")
    code = "open('proposal-ran', 'w').write('ran')"
    nb["cells"].append(fmt.new_code_cell(code, language="python", cell_id="p1",
                                         attrs={"proposed": True}))  # fmt: skip
    script = tmp_path / "notes.msg.py"
    fmt.write(nb, script)
    assert fmt.read(script)["cells"][1]["source"] == nb["cells"][1]["source"]
    ran = subprocess.run([sys.executable, script.name], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert not (tmp_path / "proposal-ran").exists()
    fmt.set_cell_attrs(nb["cells"][1], {"proposed": None})  # the user ran it
    fmt.write(nb, script)
    subprocess.run([sys.executable, script.name], cwd=tmp_path, check=True, timeout=60)
    assert (tmp_path / "proposal-ran").read_text() == "ran"


@pytest.mark.parametrize("ext", [".sas", ".mac", ".ml", ".wolfram", ".jenner"])
def test_a_language_whose_comments_need_an_end_is_no_script_message_file(
    tmp_path: Path, model: OpenAIServer, user_config_dir: Path, ext: str
) -> None:
    """SAS, Maxima (/* ... */), OCaml and Wolfram ((* ... *)) comment a line only up to the
    comment's end: the marker-only grammar wrote every line as '/* text' with no '*/', so in
    notes.msg.sas a reply 'Done. */ x = system(...); /*' closed the comment and the rest was
    code the interpreter ran. Such a name is no script message file: tce chat keeps the conversation
    in Markdown beside it (NAME.msg.md), as for any name that is not a message file's."""
    name = f"notes.msg{ext}"
    result = chat(tmp_path, name, model, user_config_dir, "Done. */ *) x = 1; /* (*")
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / name).exists()
    assert (tmp_path / f"{name}.msg.md").is_file()
    assert not fmt.is_script_path(name)
