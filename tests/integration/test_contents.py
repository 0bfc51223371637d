"""The contents manager and server extension, through a real jupyter_server (pytest-jupyter).

The extension is enabled the way a user (or the installed jupyter-config file) does it:
``ServerApp.jpserver_extensions``. Every request goes through ``/api/contents``.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_percent_agent import format as core
from jupyter_percent_agent.jupytext_format import looks_like_message_text

EXTENSION = {"jupyter_percent_agent.contents": True}


@pytest.fixture
def malformed_text() -> tuple[str, int]:
    """A message file whose metadata line (line 3) has an unterminated string."""
    return '## %% Hello[^a]\n\n[^a]: [markdown] agent="oops\n\nBody\n', 3


@pytest.fixture
def unwritable_cell() -> dict:
    """A cell no message file can hold: its source is a number."""
    return {
        "cell_type": "code",
        "id": "bad",
        "metadata": {},
        "source": 5,
        "outputs": [],
        "execution_count": None,
    }


@pytest.fixture
def chat_text(data_dir: Path) -> str:
    return (data_dir / "jupytext" / "chat.msg.md").read_text(encoding="utf-8")


async def get_model(jp_fetch, path: str, timeout: float = 20, **params: str) -> dict:
    response = await jp_fetch(
        "api", "contents", path, method="GET", params=params, request_timeout=timeout
    )
    assert response.code == 200
    return json.loads(response.body)


async def put_model(jp_fetch, path: str, model: dict) -> dict:
    body = {"type": model["type"], "format": model.get("format"), "content": model["content"]}
    response = await jp_fetch("api", "contents", path, method="PUT", body=json.dumps(body))
    assert response.code in (200, 201)
    return json.loads(response.body)


def sources(nb: dict) -> list[tuple[str, str]]:
    return [
        (c["cell_type"], "".join(c["source"]) if isinstance(c["source"], list) else c["source"])
        for c in nb["cells"]
    ]


def cell_outputs(nb: dict) -> list[int]:
    return [len(c.get("outputs", [])) for c in nb["cells"]]


# --- the server extension itself -----------------------------------------------------------------


async def test_extension_sets_a_message_contents_manager(jp_serverapp) -> None:
    from jupytext.config import JupytextConfiguration

    cm = jp_serverapp.contents_manager
    assert getattr(type(cm), "_percent_agent_message_files", False)
    assert isinstance(cm, JupytextConfiguration), "built on jupytext's contents manager"


class _UserManagerMixin:
    """Stands for a contents manager class a user configured (a real subclass, not a mock)."""

    user_marker = True


@pytest.fixture
def user_cm_class() -> type:
    from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager

    return type("UserContentsManager", (_UserManagerMixin, AsyncLargeFileManager), {})


async def test_a_user_configured_class_is_kept_underneath(
    jp_server_config, user_cm_class, jp_configurable_serverapp
) -> None:
    app = jp_configurable_serverapp(
        config={
            "ServerApp": {
                "jpserver_extensions": EXTENSION,
                "contents_manager_class": user_cm_class,
            }
        }
    )
    cm = app.contents_manager
    assert isinstance(cm, user_cm_class)
    assert getattr(type(cm), "_percent_agent_message_files", False)


async def test_other_jupytext_formats_keep_working(jp_fetch, jp_root_dir: Path) -> None:
    (jp_root_dir / "script.py").write_text("# %%\nx = 1\n\n# %% [markdown]\n# Hi\n")
    model = await get_model(jp_fetch, "script.py")
    assert model["type"] == "notebook"
    assert [c["cell_type"] for c in model["content"]["cells"]] == ["code", "markdown"]


def test_jupyter_server_does_not_import_litellm(tmp_path: Path) -> None:
    """What `jupyter lab` loads at start: the server, our extension, JupyterLab's."""
    code = (
        "import sys\n"
        "from jupyter_server.serverapp import ServerApp\n"
        "app = ServerApp()\n"
        f"app.initialize(argv=['--ServerApp.root_dir={tmp_path}', '--ServerApp.allow_root=True',"
        " '--ServerApp.open_browser=False', '--ServerApp.port=0'], new_httpserver=False)\n"
        "assert 'jupyter_percent_agent.contents' in app.extension_manager.extensions\n"
        "print(type(app.contents_manager).__name__, 'litellm' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=180,
        env={
            **os.environ,
            # Only this environment's installed configuration: our jupyter-config file.
            "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
            "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        },
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["AsyncMessageContentsManager", "False"]


def test_installed_config_enables_the_extension() -> None:
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "jupyter"), "server", "extension", "list"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    listing = proc.stdout + proc.stderr
    line = next((ln for ln in listing.splitlines() if "jupyter_percent_agent.contents" in ln), "")
    assert "enabled" in line, listing


# --- reading ------------------------------------------------------------------------------------


async def test_get_message_file_is_a_notebook(jp_fetch, jp_root_dir: Path, chat_text) -> None:
    (jp_root_dir / "chat.msg.md").write_text(chat_text, encoding="utf-8")
    model = await get_model(jp_fetch, "chat.msg.md")
    assert model["type"] == "notebook"
    assert model["format"] == "json"
    expected = core.reads(chat_text, path="chat.msg.md")
    assert sources(model["content"]) == sources(expected)
    assert cell_outputs(model["content"]) == cell_outputs(expected)
    assert any(cell_outputs(expected))


async def test_last_modified_is_the_file_time(jp_fetch, jp_root_dir: Path, chat_text) -> None:
    path = jp_root_dir / "chat.msg.md"
    path.write_text(chat_text, encoding="utf-8")
    stamp = 1_700_000_000.25
    os.utime(path, (stamp, stamp))
    model = await get_model(jp_fetch, "chat.msg.md", content="0")
    when = datetime.fromisoformat(model["last_modified"].replace("Z", "+00:00"))
    assert when == datetime.fromtimestamp(stamp, tz=UTC)
    model = await get_model(jp_fetch, "chat.msg.md")
    assert datetime.fromisoformat(model["last_modified"].replace("Z", "+00:00")) == when
    # JupyterLab can also compare content hashes: the file's, as for any text file.
    hashed = await get_model(jp_fetch, "chat.msg.md", content="0", hash="1")
    assert hashed["hash"] == hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("name", ["my chat.msg.md", "dossier été/Ünïcødé 会話.msg.md"])
async def test_paths_with_spaces_and_unicode(jp_fetch, jp_root_dir: Path, chat_text, name) -> None:
    path = jp_root_dir / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(chat_text, encoding="utf-8")
    model = await get_model(jp_fetch, name)
    assert model["type"] == "notebook"
    assert model["path"] == name
    model["content"]["cells"][0]["source"] = "Renamed question"
    await put_model(jp_fetch, name, model)
    saved = path.read_text(encoding="utf-8")
    assert sources(core.reads(saved, path=name))[0][1] == "Renamed question"


async def test_plain_md_with_message_section_opens_as_messages(jp_fetch, jp_root_dir: Path) -> None:
    text = (
        "---\nmessage_section: Discussion\n---\n\n# Project notes\n\nA preamble kept as is.\n\n"
        "## Discussion\n\n### %% What next?[^m1]\n\n[^m1]: [markdown]\n\nShip it?\n"
    )
    (jp_root_dir / "notes.md").write_text(text, encoding="utf-8")
    model = await get_model(jp_fetch, "notes.md")
    assert model["type"] == "notebook"
    assert sources(model["content"]) == sources(core.reads(text, path="notes.md"))
    await put_model(jp_fetch, "notes.md", model)
    saved = (jp_root_dir / "notes.md").read_text(encoding="utf-8")
    assert "# Project notes\n\nA preamble kept as is.\n" in saved
    assert sources(core.reads(saved, path="notes.md")) == sources(core.reads(text, path="notes.md"))


async def test_plain_md_without_it_stays_jupytext_markdown(jp_fetch, jp_root_dir: Path) -> None:
    text = "# A document\n\nSome text.\n\n```python\n# %% a comment, not a heading\nx = 1\n```\n"
    (jp_root_dir / "doc.md").write_text(text, encoding="utf-8")
    model = await get_model(jp_fetch, "doc.md")
    nb = model["content"]
    assert nb["metadata"]["jupytext"]["text_representation"]["format_name"] == "markdown"
    assert [c["cell_type"] for c in nb["cells"]] == ["markdown", "code"]
    await put_model(jp_fetch, "doc.md", model)
    saved = (jp_root_dir / "doc.md").read_text(encoding="utf-8")
    assert not looks_like_message_text(saved)
    assert "x = 1" in saved


async def test_a_message_notebook_comes_with_the_language_info_its_kernel_reports(
    jp_fetch, jp_root_dir: Path, chat_text
) -> None:
    """JupyterLab writes the kernel's language_info into an open notebook, which marks it
    modified unless the notebook already had it: the file does not keep it, the manager adds it,
    and saving leaves it out again, so what was read saves back to the same text."""
    from jupyter_percent_agent.kernel import LANGUAGE_INFO

    path = jp_root_dir / "chat.msg.md"
    canonical = core.writes(core.reads(chat_text, path="chat.msg.md"), path="chat.msg.md")
    path.write_text(canonical, encoding="utf-8")
    model = await get_model(jp_fetch, "chat.msg.md")
    assert model["content"]["metadata"]["language_info"] == LANGUAGE_INFO
    await put_model(jp_fetch, "chat.msg.md", model)
    assert path.read_text(encoding="utf-8") == canonical

    # A plain .md read as messages: the same. Another kernel's language_info is the file's.
    text = "---\nmessage_section: Talk\n---\n\n# Notes\n\n## Talk\n\n### %% Hi[^m1]\n\nHello\n"
    (jp_root_dir / "notes.md").write_text(text, encoding="utf-8")
    model = await get_model(jp_fetch, "notes.md")
    assert model["content"]["metadata"]["language_info"] == LANGUAGE_INFO
    await put_model(jp_fetch, "notes.md", model)
    assert "language_info" not in (jp_root_dir / "notes.md").read_text(encoding="utf-8")


# --- the kernel a message file opens on --------------------------------------------------------

PYTHON = {"name": "python3", "display_name": "Python 3", "language": "python"}


async def test_a_message_file_naming_another_kernel_opens_on_the_agent_kernel(
    jp_fetch, jp_root_dir: Path, chat_text
) -> None:
    """A file whose front matter names python3 must not make "running a message" run Python:
    JupyterLab gets the agent kernel, and a save writes back what the file said."""
    from jupyter_percent_agent.kernel import LANGUAGE_INFO

    nb = core.reads(chat_text, path="py.msg.md")
    nb["metadata"].update(kernelspec=PYTHON, language_info={"name": "python"})
    text = core.writes(nb, path="py.msg.md")
    path = jp_root_dir / "py.msg.md"
    path.write_text(text, encoding="utf-8")
    model = await get_model(jp_fetch, "py.msg.md")
    meta = model["content"]["metadata"]
    assert meta["kernelspec"] == core.DEFAULT_KERNELSPEC
    assert meta["language_info"] == LANGUAGE_INFO
    await put_model(jp_fetch, "py.msg.md", model)
    assert path.read_text(encoding="utf-8") == text  # python3 and its language_info kept
    # the file itself, through the format core and jupytext, still says python3
    assert core.read(path)["metadata"]["kernelspec"] == PYTHON

    # a plain .md read as messages: the same
    notes = "---\nmessage_section: Talk\njupyter: {\"kernelspec\":{\"name\":\"ir\"," \
            "\"display_name\":\"R\",\"language\":\"R\"}}\n---\n\n# Notes\n\n## Talk\n\n" \
            "### %% Hi[^m1]\n\nHello\n"
    (jp_root_dir / "notes.md").write_text(notes, encoding="utf-8")
    model = await get_model(jp_fetch, "notes.md")
    assert model["content"]["metadata"]["kernelspec"]["name"] == "percent-agent"
    await put_model(jp_fetch, "notes.md", model)
    assert '"name":"ir"' in (jp_root_dir / "notes.md").read_text(encoding="utf-8")


async def test_the_kernel_picked_in_jupyterlab_is_not_written_into_the_file(
    jp_fetch, jp_root_dir: Path, chat_text
) -> None:
    path = jp_root_dir / "chat.msg.md"
    canonical = core.writes(core.reads(chat_text, path="chat.msg.md"), path="chat.msg.md")
    path.write_text(canonical, encoding="utf-8")
    model = await get_model(jp_fetch, "chat.msg.md")
    # what JupyterLab's "Change kernel" leaves in the notebook
    model["content"]["metadata"]["kernelspec"] = PYTHON
    model["content"]["metadata"]["language_info"] = {"name": "python", "version": "3.11"}
    await put_model(jp_fetch, "chat.msg.md", model)
    assert path.read_text(encoding="utf-8") == canonical
    again = await get_model(jp_fetch, "chat.msg.md")
    assert again["content"]["metadata"]["kernelspec"] == core.DEFAULT_KERNELSPEC


# --- paths that lead elsewhere -----------------------------------------------------------------


@pytest.fixture
def private_file(tmp_path: Path, jp_root_dir: Path) -> Path:
    """A private file outside the served folder, that reads as a message file."""
    secret = tmp_path / "private" / "diary.msg.md"
    secret.parent.mkdir()
    assert not secret.is_relative_to(jp_root_dir)
    secret.write_text("# %% secret[^s]\n[^s]: [markdown]\n\nMy bank PIN is 1234\n",
                      encoding="utf-8")
    return secret


async def test_a_message_file_linked_out_of_its_folder_is_refused(
    jp_fetch, jp_root_dir: Path, private_file: Path, chat_text
) -> None:
    link = jp_root_dir / "notes.msg.md"
    link.symlink_to(private_file)
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("api", "contents", "notes.msg.md", method="GET")
    assert info.value.code == 403
    message = json.loads(info.value.response.body)["message"]
    assert "symbolic link to a file outside its folder" in message
    assert "PIN" not in message and str(private_file) not in message
    before = private_file.read_text(encoding="utf-8")
    nb = core.reads(chat_text, path="chat.msg.md")
    with pytest.raises(HTTPClientError) as info:
        await put_model(jp_fetch, "notes.msg.md",
                        {"type": "notebook", "format": "json", "content": nb})
    assert info.value.code == 403
    assert link.is_symlink() and private_file.read_text(encoding="utf-8") == before


async def test_a_message_file_linked_inside_its_folder_is_saved_through_the_link(
    jp_fetch, jp_root_dir: Path, chat_text
) -> None:
    (jp_root_dir / "archive").mkdir()
    target = jp_root_dir / "archive" / "2025.msg.md"
    target.write_text(chat_text, encoding="utf-8")
    link = jp_root_dir / "current.msg.md"
    link.symlink_to(Path("archive") / "2025.msg.md")
    model = await get_model(jp_fetch, "current.msg.md")
    model["content"]["cells"][0]["source"] = "Edited through the link"
    await put_model(jp_fetch, "current.msg.md", model)
    assert link.is_symlink()
    assert "Edited through the link" in target.read_text(encoding="utf-8")
    assert sorted(p.name for p in (jp_root_dir / "archive").iterdir()) == ["2025.msg.md"]


async def test_a_fifo_named_like_a_message_file_is_refused_without_blocking(
    jp_fetch, jp_root_dir: Path
) -> None:
    os.mkfifo(jp_root_dir / "pipe.msg.md")
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("api", "contents", "pipe.msg.md", method="GET", request_timeout=10)
    assert info.value.code == 403
    assert "a FIFO" in json.loads(info.value.response.body)["message"]


async def test_pairing_a_message_notebook_with_an_auto_script_is_one_line_not_a_locked_file(
    jp_fetch, jp_root_dir: Path, chat_text
) -> None:
    """Jupytext's "Pair Notebook with percent Script" sets ``auto:percent``; a message
    notebook has no script language, and once saved the file no longer opened (a 500 and a
    traceback: 'No language information in this notebook')."""
    path = jp_root_dir / "chat.msg.md"
    path.write_text(chat_text, encoding="utf-8")
    before = path.read_bytes()
    model = await get_model(jp_fetch, "chat.msg.md")
    model["content"]["metadata"]["jupytext"] = {"formats": "md,auto:percent"}
    with pytest.raises(HTTPClientError) as info:
        await put_model(jp_fetch, "chat.msg.md", model)
    assert info.value.code == 400
    message = json.loads(info.value.response.body)["message"]
    assert message.startswith("chat.msg.md: ") and "auto:percent" in message
    assert "py:percent" in message  # what to pair it with instead
    assert path.read_bytes() == before
    # a file saved so before opens with the same line, not a 500
    nb = core.reads(chat_text, path="chat.msg.md")
    nb["metadata"]["jupytext"] = {"formats": "md,auto:percent"}
    path.write_text(core.writes(nb, path="chat.msg.md"), encoding="utf-8")
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("api", "contents", "chat.msg.md", method="GET")
    assert info.value.code == 400
    assert "auto:percent" in json.loads(info.value.response.body)["message"]


async def test_exporting_a_message_notebook_as_html_sanitizes_model_output(
    jp_fetch, jp_root_dir: Path
) -> None:
    """File > Save and Export Notebook As > HTML (nbconvert) wrote a reply's <script> and
    event handlers into the page as they were: model output is never trusted HTML."""
    (jp_root_dir / "xss.msg.md").write_text(
        "# %% M1[^m1]\n[^m1]: [markdown]\n\nHi.\n\n## %%%[^m1.1]\n[^m1.1]: [writer]\n\n"
        'Hello <script>alert(document.domain)</script><img src=x onerror="alert(1)"> done\n',
        encoding="utf-8",
    )
    response = await jp_fetch("nbconvert", "html", "xss.msg.md", method="GET",
                              params={"download": "false"}, request_timeout=60)
    page = response.body.decode()
    assert "<p>Hello" in page and "done</p>" in page  # still rendered, not shown as tags
    assert "<script>alert" not in page and "alert(document.domain)" not in page
    assert "onerror" not in page


async def test_a_folder_holding_a_refused_message_file_still_lists(
    jp_fetch, jp_root_dir: Path, private_file: Path, chat_text
) -> None:
    """A link out of the folder (or a FIFO) named like a message file is refused when it is
    opened; the listing of its folder used to be refused with it (403), so JupyterLab's file
    browser showed none of the folder's other files."""
    (jp_root_dir / "chat.msg.md").write_text(chat_text, encoding="utf-8")
    (jp_root_dir / "notes.msg.md").symlink_to(private_file)
    os.mkfifo(jp_root_dir / "pipe.msg.md")
    listing = await get_model(jp_fetch, "", timeout=10)
    names = sorted(entry["name"] for entry in listing["content"])
    assert "chat.msg.md" in names
    assert "PIN" not in json.dumps(listing)
    with pytest.raises(HTTPClientError) as info:  # opening it is still refused
        await jp_fetch("api", "contents", "notes.msg.md", method="GET")
    assert info.value.code == 403
    with pytest.raises(HTTPClientError) as info:  # and so is hashing what it leads to
        await jp_fetch("api", "contents", "notes.msg.md", method="GET",
                       params={"content": "0", "hash": "1"})
    assert info.value.code == 403


# --- writing ------------------------------------------------------------------------------------


async def test_put_writes_canonical_text_and_keeps_metadata_and_tags(
    jp_fetch, jp_root_dir: Path, chat_text
) -> None:
    path = jp_root_dir / "chat.msg.md"
    path.write_text(chat_text, encoding="utf-8")
    model = await get_model(jp_fetch, "chat.msg.md")
    first = model["content"]["cells"][0]
    first["source"] = "Which plan is cheaper?"
    first["metadata"]["tags"] = ["question", "priority"]
    first["metadata"]["reviewed_by"] = "ana"
    model["content"]["cells"][-1]["metadata"]["collapsed"] = True
    await put_model(jp_fetch, "chat.msg.md", model)

    saved = path.read_text(encoding="utf-8")
    assert saved == core.writes(core.reads(saved, path="chat.msg.md"), path="chat.msg.md")
    assert "text_representation" not in saved
    nb = core.reads(saved, path="chat.msg.md")
    assert nb["cells"][0]["source"] == "Which plan is cheaper?"
    assert nb["cells"][0]["metadata"]["tags"] == ["question", "priority"]
    assert nb["cells"][0]["metadata"]["reviewed_by"] == "ana"
    assert nb["cells"][-1]["metadata"]["collapsed"] is True
    assert cell_outputs(nb) == cell_outputs(core.reads(chat_text, path="chat.msg.md"))

    again = await get_model(jp_fetch, "chat.msg.md")
    assert again["content"]["cells"][0]["metadata"]["tags"] == ["question", "priority"]
    # Saving what was just read changes nothing: the text is canonical.
    await put_model(jp_fetch, "chat.msg.md", again)
    assert path.read_text(encoding="utf-8") == saved


async def test_save_replaces_the_file_in_one_rename(jp_fetch, jp_root_dir: Path, chat_text) -> None:
    """A reader that opened the file before the save reads the whole old text, never a mix."""
    path = jp_root_dir / "chat.msg.md"
    path.write_text(chat_text, encoding="utf-8")
    path.chmod(0o640)
    model = await get_model(jp_fetch, "chat.msg.md")
    model["content"]["cells"][0]["source"] = "A new question"
    with path.open("rb") as reader:
        before_inode = os.fstat(reader.fileno()).st_ino
        await put_model(jp_fetch, "chat.msg.md", model)
        assert reader.read() == chat_text.encode("utf-8")
    assert path.stat().st_ino != before_inode
    assert path.stat().st_mode & 0o777 == 0o640
    assert "A new question" in path.read_text(encoding="utf-8")
    assert sorted(p.name for p in jp_root_dir.iterdir()) == ["chat.msg.md"]


async def test_a_save_whose_metadata_no_heading_can_hold_is_a_400_and_leaves_the_file(
    jp_fetch, jp_root_dir: Path, chat_text
) -> None:
    """A cell's percent_agent entry edited in JupyterLab's metadata editor to a value no
    heading can say: the save is refused naming the cell and the key, and the file on disk is
    the one before (never a file its own reader refuses, nor a 500)."""
    path = jp_root_dir / "chat.msg.md"
    path.write_text(chat_text, encoding="utf-8")
    model = await get_model(jp_fetch, "chat.msg.md")
    cell = model["content"]["cells"][0]
    cell["metadata"]["percent_agent"] = {"level": 9}
    body = {"type": "notebook", "content": model["content"]}
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("api", "contents", "chat.msg.md", method="PUT", body=json.dumps(body))
    assert info.value.code == 400
    message = json.loads(info.value.response.body)["message"]
    assert f"cell {cell['id']!r}: percent_agent.level must be a heading level" in message
    assert "Traceback" not in message
    assert path.read_text(encoding="utf-8") == chat_text
    assert sorted(p.name for p in jp_root_dir.iterdir()) == ["chat.msg.md"]


async def test_empty_msg_md_opens_and_saves_as_a_message_file(jp_fetch, jp_root_dir: Path) -> None:
    path = jp_root_dir / "new chat.msg.md"
    path.write_text("", encoding="utf-8")
    model = await get_model(jp_fetch, "new chat.msg.md")
    assert model["type"] == "notebook"
    assert model["content"]["cells"] == []
    assert model["content"]["metadata"].get("kernelspec") == core.reads("", path="new chat.msg.md")[
        "metadata"
    ].get("kernelspec")
    model["content"]["cells"].append(
        {
            "cell_type": "code",
            "id": "first",
            "metadata": {},
            "source": "Hello, agent.",
            "outputs": [],
            "execution_count": None,
        }
    )
    await put_model(jp_fetch, "new chat.msg.md", model)
    saved = path.read_text(encoding="utf-8")
    assert looks_like_message_text(saved)
    assert sources(core.reads(saved, path="new chat.msg.md")) == [("code", "Hello, agent.")]


async def test_a_notebook_paired_with_a_message_file(
    jp_fetch, jp_root_dir: Path, chat_text
) -> None:
    """jupytext pairing through the server: ipynb <-> .msg.md, the message file's outputs win."""
    nb = core.reads(chat_text, path="chat.msg.md")
    nb["metadata"]["jupytext"] = {"formats": "ipynb,.msg.md"}
    await put_model(jp_fetch, "pair.ipynb", {"type": "notebook", "format": "json", "content": nb})
    msg = jp_root_dir / "pair.msg.md"
    assert msg.is_file()
    paired = core.reads(msg.read_text(encoding="utf-8"), path=str(msg))
    assert sources(paired) == sources(nb)
    assert cell_outputs(paired) == cell_outputs(nb)

    # The message file is edited outside JupyterLab (a reply lands in it): it is newer now.
    code = next(c for c in paired["cells"] if c["cell_type"] == "code")
    code["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "new reply\n"}]
    core.write(paired, msg)
    stamp = (jp_root_dir / "pair.ipynb").stat().st_mtime + 5
    os.utime(msg, (stamp, stamp))
    model = await get_model(jp_fetch, "pair.ipynb")
    reread = next(c for c in model["content"]["cells"] if c["cell_type"] == "code")
    assert reread["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "new reply\n"}]


async def test_new_untitled_message_file(jp_fetch, jp_root_dir: Path) -> None:
    """What a "New agent chat" command can ask the server for."""
    response = await jp_fetch(
        "api",
        "contents",
        "",
        method="POST",
        body=json.dumps({"type": "notebook", "ext": ".msg.md"}),
    )
    created = json.loads(response.body)
    assert created["path"].endswith(".msg.md")
    model = await get_model(jp_fetch, created["path"])
    assert model["type"] == "notebook"
    kernelspec = core.reads("", path="x.msg.md")["metadata"]["kernelspec"]
    assert model["content"]["metadata"]["kernelspec"] == kernelspec
    text = (jp_root_dir / created["path"]).read_text(encoding="utf-8")
    assert core.reads(text, path=created["path"])["cells"] == []


# --- errors -------------------------------------------------------------------------------------


async def test_malformed_file_is_a_400_naming_the_line(
    jp_fetch, jp_root_dir: Path, malformed_text: tuple[str, int]
) -> None:
    text, line = malformed_text
    (jp_root_dir / "bad.msg.md").write_text(text, encoding="utf-8")
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("api", "contents", "bad.msg.md", method="GET")
    assert info.value.code == 400
    body = json.loads(info.value.response.body)
    assert f"line {line}" in body["message"] or f":{line}:" in body["message"]
    assert "Traceback" not in body["message"]


async def test_a_malformed_file_is_one_line_in_the_server_log_not_a_traceback(
    jp_fetch, jp_serverapp, jp_root_dir: Path, malformed_text: tuple[str, int]
) -> None:
    """jupytext logs what its reading raised with its traceback; for a file the user wrote
    wrong, the log says where and what in one line, as the answer does."""
    import logging

    text, line = malformed_text
    (jp_root_dir / "bad.msg.md").write_text(text, encoding="utf-8")
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    log = jp_serverapp.contents_manager.log
    log.addHandler(handler)
    try:
        with pytest.raises(HTTPClientError):
            await jp_fetch("api", "contents", "bad.msg.md", method="GET")
    finally:
        log.removeHandler(handler)
    about_it = [r for r in records if "bad.msg.md" in r.getMessage()]
    assert about_it, "the failure is logged"
    assert any(f"bad.msg.md:{line}:" in r.getMessage() for r in about_it)
    assert [r.getMessage() for r in about_it if r.exc_info or r.exc_text] == []


async def test_a_file_that_is_not_utf8_is_a_400_naming_its_line_not_a_server_path(
    jp_fetch, jp_root_dir: Path
) -> None:
    """docs/format.md: text that is not UTF-8 is a FormatError naming its line; JupyterLab
    showed jupyter_server's own "/abs/path/x.msg.md is not UTF-8 encoded" instead."""
    (jp_root_dir / "latin.msg.md").write_bytes(
        "## %% Hello[^a]\n[^a]: [markdown]\n\nCaf\xe9 cr\xe8me.\n".encode("latin-1")
    )
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("api", "contents", "latin.msg.md", method="GET")
    assert info.value.code == 400
    message = json.loads(info.value.response.body)["message"]
    assert message.startswith("latin.msg.md:4: ")
    assert "UTF-8" in message
    assert str(jp_root_dir) not in message


async def test_failing_save_leaves_the_old_file_intact(
    jp_fetch, jp_root_dir: Path, chat_text, unwritable_cell: dict
) -> None:
    path = jp_root_dir / "chat.msg.md"
    path.write_text(chat_text, encoding="utf-8")
    before = path.read_bytes()
    model = await get_model(jp_fetch, "chat.msg.md")
    model["content"]["cells"].append(unwritable_cell)
    with pytest.raises(HTTPClientError) as info:
        await put_model(jp_fetch, "chat.msg.md", model)
    assert 400 <= info.value.code < 500
    assert path.read_bytes() == before
    assert sorted(p.name for p in jp_root_dir.iterdir()) == ["chat.msg.md"]


# --- size ---------------------------------------------------------------------------------------


@pytest.mark.timeout(900)  # the open may take 600 s
@pytest.mark.slow
async def test_a_50_mb_message_file_opens(jp_fetch, jp_root_dir: Path) -> None:
    paragraph = "All work and no play makes a long conversation. " * 20 + "\n\n"
    body = paragraph * 50  # about 50 KB a message
    cells = [core.new_message(f"{i}\n\n{body}", cell_id=f"m{i}") for i in range(1100)]
    nb = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": cells,
    }
    path = jp_root_dir / "big.msg.md"
    core.write(nb, path)
    assert path.stat().st_size >= 50_000_000
    # A generous client timeout: this checks that the file opens, not how fast.
    model = await get_model(jp_fetch, "big.msg.md", timeout=600)
    assert model["type"] == "notebook"
    assert len(model["content"]["cells"]) == 1100


def test_sync_manager_reads_and_saves_message_files(tmp_path: Path, chat_text) -> None:
    """The same behaviour on top of a synchronous (deprecated but configurable) manager."""
    from jupyter_server.services.contents.largefilemanager import LargeFileManager
    from tornado.web import HTTPError

    from jupyter_percent_agent.contents import build_message_contents_manager_class

    cm = build_message_contents_manager_class(LargeFileManager)(root_dir=str(tmp_path))
    (tmp_path / "chat.msg.md").write_text(chat_text, encoding="utf-8")
    model = cm.get("chat.msg.md")
    assert model["type"] == "notebook"
    model["content"]["cells"][0]["metadata"]["tags"] = ["sync"]
    saved = cm.save({"type": "notebook", "content": model["content"]}, "chat.msg.md")
    assert saved["type"] == "notebook"
    text = (tmp_path / "chat.msg.md").read_text(encoding="utf-8")
    assert core.reads(text, path="chat.msg.md")["cells"][0]["metadata"]["tags"] == ["sync"]

    (tmp_path / "bad.msg.md").write_text("## %% A[^a]\n\nx\n\n## %% B[^a]\n\ny\n", encoding="utf-8")
    with pytest.raises(HTTPError) as info:
        cm.get("bad.msg.md")
    assert info.value.status_code == 400
    assert "bad.msg.md:5: " in info.value.log_message  # as tce names it


def test_the_agent_kernelspec_is_one_fact() -> None:
    """format.DEFAULT_KERNELSPEC is what message files and the contents manager use; the
    kernel package and its installed kernel.json must say the same."""
    from jupyter_percent_agent import kernel

    spec = json.loads((kernel.kernelspec_dir() / "kernel.json").read_text(encoding="utf-8"))
    assert kernel.KERNEL_NAME == core.DEFAULT_KERNELSPEC["name"] == kernel.kernelspec_dir().name
    assert kernel.DISPLAY_NAME == core.DEFAULT_KERNELSPEC["display_name"] == spec["display_name"]
    assert spec["language"] == core.DEFAULT_KERNELSPEC["language"]


async def test_a_save_from_jupyterlab_writes_a_clean_file(jp_fetch, jp_root_dir: Path) -> None:
    """No 36-character UUID ids (the short ids tce makes), no execution_count on messages,
    no empty message for the cell JupyterLab adds after a run."""
    uuid = "dd48e6a2-30aa-4cea-a532-396601ee4b78"
    nb = {"nbformat": 4, "nbformat_minor": 5,
          "metadata": {"kernelspec": dict(core.DEFAULT_KERNELSPEC)},
          "cells": [
              {"cell_type": "code", "id": uuid, "metadata": {}, "source": "Hello",
               "execution_count": 1,
               "outputs": [core.reply_output("Hi!", agent="default", out_id="dd48e6a2.1")]},
              {"cell_type": "code", "id": "0b6ef3bc-7c1f-4d9f-a4b2-2a3f1c0e9d11",
               "metadata": {"trusted": True}, "source": "", "execution_count": None,
               "outputs": []}]}
    await put_model(jp_fetch, "clean.msg.md", {"type": "notebook", "format": "json",
                                              "content": nb})
    text = (jp_root_dir / "clean.msg.md").read_text()
    assert "[^dd48e6a2]" in text and uuid not in text
    assert "execution_count" not in text
    cells = core.read(jp_root_dir / "clean.msg.md")["cells"]
    assert [core.message_text(c) for c in cells] == ["Hello"]
    assert core.output_text(cells[0]["outputs"][0]) == "Hi!"


async def test_a_save_writes_the_bytes_tce_writes_whatever_order_the_metadata_comes_in(
        jp_fetch, jp_root_dir: Path, data_dir: Path, reordered) -> None:
    """A browser sends the notebook with its metadata dicts in the order it built them; the
    file is the same bytes ``tce`` and the format core write for that conversation."""
    text = (data_dir / "format" / "canonical" / "conversation.msg.md").read_text("utf-8")
    path = jp_root_dir / "chat.msg.md"
    path.write_text(text, encoding="utf-8")
    model = await get_model(jp_fetch, "chat.msg.md")
    model["content"] = reordered(model["content"], lambda keys: keys[::-1])
    first = model["content"]["cells"][1]["metadata"]
    assert list(first) == list(reversed(list(core.reads(text)["cells"][1]["metadata"])))
    await put_model(jp_fetch, "chat.msg.md", model)
    assert path.read_text(encoding="utf-8") == text


# --- script message files (.msg.py) ---------------------------------------------------------


@pytest.fixture
def script_text(data_dir: Path) -> str:
    return (data_dir / "format" / "script" / "analysis.msg.py").read_text(encoding="utf-8")


async def test_a_script_message_file_opens_as_a_notebook_on_the_agent_kernel_and_saves_back(
    jp_fetch, jp_root_dir: Path, script_text: str
) -> None:
    path = jp_root_dir / "analysis.msg.py"
    path.write_text(script_text, encoding="utf-8")
    model = await get_model(jp_fetch, "analysis.msg.py", type="notebook")
    assert model["type"] == "notebook"
    content = model["content"]
    assert content["metadata"]["kernelspec"]["name"] == "percent-agent"
    expected = core.reads(script_text, path="analysis.msg.py")
    assert sources(content) == sources(expected)
    assert cell_outputs(content) == cell_outputs(expected)
    # saving what was read writes the same bytes: still the script, code plain
    await put_model(jp_fetch, "analysis.msg.py", model)
    assert path.read_text(encoding="utf-8") == script_text
    content["cells"][2]["source"] = "Edited in JupyterLab."
    await put_model(jp_fetch, "analysis.msg.py", model)
    saved = path.read_text(encoding="utf-8")
    assert "\n# Edited in JupyterLab.\n" in saved and "\nnumbers = [3, 1, 2]\n" in saved
    assert "text_representation" not in saved


async def test_a_plain_script_still_opens_as_jupytext_percent(jp_fetch, jp_root_dir: Path) -> None:
    (jp_root_dir / "plain.py").write_text("# %%\nx = 1\n\n# %% [markdown]\n# Text\n")
    model = await get_model(jp_fetch, "plain.py", type="notebook")
    assert [c["cell_type"] for c in model["content"]["cells"]] == ["code", "markdown"]


async def test_a_malformed_script_message_file_is_a_400_naming_its_line(
    jp_fetch, jp_root_dir: Path, script_text: str
) -> None:
    lines = script_text.split("\n")
    at = lines.index("# [^check]: [code]")
    lines[at] = '# [^check]: [code] x="oops'
    (jp_root_dir / "bad.msg.py").write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("api", "contents", "bad.msg.py", method="GET", params={"type": "notebook"})
    assert info.value.code == 400
    assert f":{at + 1}:" in json.loads(info.value.response.body)["message"]
