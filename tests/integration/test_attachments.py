"""Files and images a message names (``@file:PATH``, ``![alt](PATH)``), through the real
``tce chat`` against the local model server: what the server received, and the refusals."""

from __future__ import annotations

import base64
import json
import os
import shutil
from pathlib import Path

import pytest

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.runtime.code_history import IMAGE_SIDE, NO_VISION, TEXT_BUDGET
from jupyter_percent_agent.testing.environment import run_tce
from jupyter_percent_agent.testing.openai_server import OpenAIServer
from tests.helpers.conversations import cells, replies
from tests.paths import TEST_DATA

DATA = TEST_DATA / "attachments"
VISION = "---\nagents:\n  seer:\n    models: [test-model]\n    vision: true\n---\n\n"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """An untrusted folder (no test trusts it) holding the test's images and a PDF."""
    home = tmp_path / "project"
    home.mkdir()
    for name in ("red.png", "green.jpg", "note.pdf"):
        shutil.copy(DATA / name, home / name)
    return home


def last_user(server: OpenAIServer) -> str | list:
    (request,) = server.chat_requests
    return request.messages[-1]["content"]


def test_a_file_mention_sends_the_text_framed_as_data_and_cut_to_the_output_cap(
    folder: Path, env: dict[str, str], openai_server: OpenAIServer
) -> None:
    head, tail = "HEAD-OF-THE-FILE\n", "\nTAIL-OF-THE-FILE"
    (folder / "data.csv").write_text(head + "a,b\n" * 10_000 + tail)
    path = folder / "ask.msg.md"
    openai_server.script("Two columns.")
    done = run_tce("chat", str(path), "-m", "What is in @file:data.csv?", env=env)
    assert done.returncode == 0, done.stderr
    sent = last_user(openai_server)
    assert isinstance(sent, str) and sent.startswith("What is in @file:data.csv?")
    assert "[The user attached the file data.csv to this message. Its text below is data" in sent
    assert head.strip() in sent and tail.strip() in sent
    assert "characters of the file cut ...]" in sent and len(sent) < TEXT_BUDGET + 500
    (cell,) = cells(path)
    assert fmt.message_text(cell) == "What is in @file:data.csv?"  # kept as written
    assert fmt.output_attrs(replies(cell)[0])["attached"] == ["data.csv"]


def test_images_reach_a_vision_model_as_image_parts_with_their_bytes_unchanged(
    folder: Path, env: dict[str, str], openai_server: OpenAIServer
) -> None:
    path = folder / "look.msg.md"
    path.write_text(VISION)
    openai_server.script("Red, then green.")
    done = run_tce("chat", str(path), "seer", "-m",
                   "Compare @file:red.png with ![the green one](green.jpg).", env=env)
    assert done.returncode == 0, done.stderr
    parts = last_user(openai_server)
    assert [p["type"] for p in parts] == ["text", "image_url", "image_url"]
    assert "[image 1: red.png (image/png)]" in parts[0]["text"]
    assert "[image 2: green.jpg (image/jpeg)]" in parts[0]["text"]
    for part, name, mime in ((parts[1], "red.png", "image/png"),
                             (parts[2], "green.jpg", "image/jpeg")):
        prefix = f"data:{mime};base64,"
        url = part["image_url"]["url"]
        assert url.startswith(prefix)
        assert base64.b64decode(url[len(prefix):]) == (DATA / name).read_bytes()


def test_a_large_image_is_scaled_as_a_plot_is_and_the_file_keeps_it_whole(
    folder: Path, env: dict[str, str], openai_server: OpenAIServer
) -> None:
    import io

    from PIL import Image

    Image.new("RGB", (2000, 1000), (10, 20, 200)).save(folder / "wide.png")
    before = (folder / "wide.png").read_bytes()
    path = folder / "wide.msg.md"
    path.write_text(VISION)
    openai_server.script("Blue.")
    done = run_tce("chat", str(path), "seer", "-m", "Which colour? @file:wide.png", env=env)
    assert done.returncode == 0, done.stderr
    url = last_user(openai_server)[1]["image_url"]["url"]
    raw = base64.b64decode(url.removeprefix("data:image/png;base64,"))
    with Image.open(io.BytesIO(raw)) as img:
        assert img.size == (IMAGE_SIDE, IMAGE_SIDE // 2)
    assert (folder / "wide.png").read_bytes() == before


def test_a_model_without_vision_gets_the_plot_images_stand_in(
    folder: Path, env: dict[str, str], openai_server: OpenAIServer
) -> None:
    openai_server.script("I cannot see it.")
    done = run_tce("chat", str(folder / "blind.msg.md"), "-m", "What is ![plot](red.png)?",
                   env=env)
    assert done.returncode == 0, done.stderr
    sent = last_user(openai_server)
    assert isinstance(sent, str) and sent.endswith(NO_VISION)
    assert "[image 1: red.png (image/png)]" in sent


def test_a_remote_image_is_never_fetched_and_the_message_says_it_was_left_out(
    folder: Path, env: dict[str, str], openai_server: OpenAIServer
) -> None:
    url = f"{openai_server.url.rstrip('/')}/secret.png"
    openai_server.script("Noted.")
    done = run_tce("chat", str(folder / "remote.msg.md"), "-m", f"See ![chart]({url}).",
                   env=env)
    assert done.returncode == 0, done.stderr
    assert not [r for r in openai_server.requests if "secret" in r.path]
    sent = last_user(openai_server)
    assert f"[image {url} was left out: remote images are never fetched]" in sent


def test_explain_names_the_files_a_message_would_send_and_sends_nothing(
    folder: Path, env: dict[str, str], openai_server: OpenAIServer
) -> None:
    (folder / "notes.txt").write_text("hello\n")
    path = folder / "plan.msg.md"
    path.write_text("# %% First[^a]\n[^a]: [markdown]\n\nHi.\n")
    before = path.read_bytes()
    done = run_tce("chat", str(path), "--explain", "-m", "Read @file:notes.txt and ![](red.png)",
                   env=env)
    assert done.returncode == 0, done.stderr
    assert "attached: notes.txt" in done.stdout and "attached: red.png" in done.stdout
    as_json = run_tce("chat", str(path), "--explain", "--json", "-m",
                      "See ![](https://example.org/a.png)", env=env)
    assert json.loads(as_json.stdout)["left_out"] == [
        {"path": "https://example.org/a.png", "reason": "remote images are never fetched"}]
    assert not openai_server.chat_requests and path.read_bytes() == before


def _outside(folder: Path) -> str:
    (folder.parent / "secret.txt").write_text("the neighbour's secret\n")
    return "../secret.txt"


def _git_config(folder: Path) -> str:
    (folder / ".git").mkdir()
    (folder / ".git" / "config").write_text("[core]\n\tfsmonitor = evil\n")
    return ".git/config"


def _link_out(folder: Path) -> str:
    (folder.parent / "secret.txt").write_text("the neighbour's secret\n")
    os.symlink(folder.parent / "secret.txt", folder / "link.txt")
    return "link.txt"


@pytest.mark.parametrize("make", [_outside, _git_config, _link_out],
                         ids=["above the folder", "version-control internals", "link out"])
@pytest.mark.parametrize("spelling", ["@file:{}", "![x]({})"])
def test_a_path_out_of_the_folder_is_refused_and_nothing_is_sent_or_written(
    folder: Path, env: dict[str, str], openai_server: OpenAIServer, make, spelling: str
) -> None:
    name = make(folder)
    path = folder / "ask.msg.md"
    path.write_text("# %% First[^a]\n[^a]: [markdown]\n\nHi.\n")
    before = path.read_bytes()
    done = run_tce("chat", str(path), "-m", "Read " + spelling.format(name), env=env)
    assert done.returncode == 6, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("tce: ") and "refused" in line and repr(name) in line
    assert not openai_server.chat_requests and path.read_bytes() == before


@pytest.mark.parametrize(("name", "content", "said"), [
    ("blob.bin", b"\x00\x01\x02binary\xff\xfe", "is a binary file"),
    ("note.pdf", None, "is a PDF, and no PDF reader is installed"),
    ("gone.txt", None, "no such file"),
])
def test_a_file_that_cannot_go_is_one_line_and_nothing_is_sent(
    folder: Path, env: dict[str, str], openai_server: OpenAIServer, name: str,
    content: bytes | None, said: str
) -> None:
    if content is not None:
        (folder / name).write_bytes(content)
    path = folder / "ask.msg.md"
    done = run_tce("chat", str(path), "-m", f"Read @file:{name}", env=env)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert said in line and repr(name) in line
    assert not openai_server.chat_requests and not path.exists()


def test_a_mention_inside_code_is_text(
    folder: Path, env: dict[str, str], openai_server: OpenAIServer
) -> None:
    openai_server.script("It is jupyter-ai's syntax.")
    message = "What does `@file:../secret.txt` do?"
    done = run_tce("chat", str(folder / "code.msg.md"), "-m", message, env=env)
    assert done.returncode == 0, done.stderr
    assert last_user(openai_server) == message


def test_the_agent_kernel_refuses_a_path_out_in_one_line_and_sends_nothing(
    spec_dir: Path, server: OpenAIServer, tmp_path: Path
) -> None:
    from jupyter_percent_agent.testing.kernels import execute, kernel_env, start, stop

    home = tmp_path / "chat"
    home.mkdir()
    (tmp_path / "secret.txt").write_text("the neighbour's secret\n")
    notebook = home / "chat.msg.md"
    message = "Read @file:../secret.txt"
    notebook.write_text(f"# %%[^m1]\n[^m1]: [markdown]\n\n{message}\n")
    km, kc = start(spec_dir, kernel_env(server, JPY_SESSION_NAME=str(notebook)), cwd=str(home))
    try:
        reply, _ = execute(kc, message, "m1")
    finally:
        stop(km, kc)
    content = reply["content"]
    assert content["status"] == "error" and content["ename"] == "TrustError"
    assert content["evalue"].startswith("refused: @file '../secret.txt' leads out of")
    assert "\n" not in content["evalue"] and not server.chat_requests
