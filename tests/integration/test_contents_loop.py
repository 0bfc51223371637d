"""The contents manager parses message files off the server's event loop: while one file's
parse runs (held here on an event, through a hook on the format core's reader), the server
answers every other request. Through a real jupyter_server (pytest-jupyter), with the
extension enabled as a user enables it."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest

from jupyter_percent_agent import format as core

HELD = "held-by-the-test"


class Held:
    """A function of ours that, on a text holding ``HELD``, sets ``entered`` and waits for
    ``release`` before it does its work. One that runs on the event loop waits in vain (the
    test's release comes from that loop): after 30 seconds it goes on anyway and notes it in
    ``held_the_loop``, so the test fails, not hangs."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> None:
        self.entered, self.release = threading.Event(), threading.Event()
        self.held_the_loop: list[str] = []
        work = getattr(owner, name)

        def held(first: object, *args: object, **kwargs: object) -> object:
            if HELD in str(first):
                self.entered.set()
                if not self.release.wait(30):
                    self.held_the_loop.append(threading.current_thread().name)
            return work(first, *args, **kwargs)

        monkeypatch.setattr(owner, name, held)


def _messages(count: int, marker: str = "") -> str:
    cells = [f"# %% Note {i}[^n{i}]\n[^n{i}]: [markdown]\n\nLine {i} {marker}\n"
             for i in range(count)]
    return "\n".join(cells)


async def test_a_file_being_parsed_holds_no_other_request(
        jp_fetch, jp_root_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hold = Held(monkeypatch, core, "reads")  # the format core's reader
    entered, release, held_the_loop = hold.entered, hold.release, hold.held_the_loop
    (jp_root_dir / "big.msg.md").write_text(_messages(5_000, HELD), encoding="utf-8")
    (jp_root_dir / "small.msg.md").write_text(_messages(2), encoding="utf-8")
    big = asyncio.ensure_future(jp_fetch("api", "contents", "big.msg.md", request_timeout=120))
    assert await asyncio.to_thread(entered.wait, 60), "the big file was never parsed"
    try:
        status = await jp_fetch("api", "status")
        small = await jp_fetch("api", "contents", "small.msg.md")
        served_while_parsing = not big.done()
    finally:
        release.set()
    model = json.loads((await big).body)
    assert not held_the_loop, "the parse ran on the server's event loop"
    assert served_while_parsing
    assert status.code == 200
    assert len(json.loads(small.body)["content"]["cells"]) == 2
    assert len(model["content"]["cells"]) == 5_000


async def test_a_file_being_written_holds_no_other_request(
        jp_fetch, jp_root_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_percent_agent import jupytext_format

    (jp_root_dir / "big.msg.md").write_text(_messages(2_000, HELD), encoding="utf-8")
    model = json.loads((await jp_fetch("api", "contents", "big.msg.md")).body)
    hold = Held(monkeypatch, jupytext_format, "message_text")  # the writer, for a save
    body = json.dumps({"type": "notebook", "format": "json", "content": model["content"]})
    saved = asyncio.ensure_future(jp_fetch("api", "contents", "big.msg.md", method="PUT",
                                           body=body, request_timeout=120))
    assert await asyncio.to_thread(hold.entered.wait, 60), "the notebook was never written"
    try:
        status = await jp_fetch("api", "status")
        served_while_writing = not saved.done()
    finally:
        hold.release.set()
    assert (await saved).code == 200
    assert not hold.held_the_loop, "the writing ran on the server's event loop"
    assert served_while_writing and status.code == 200
    assert (jp_root_dir / "big.msg.md").read_text(encoding="utf-8").count(HELD) == 2_000


async def test_a_file_that_does_not_parse_is_still_refused_with_its_line(
        jp_fetch, jp_root_dir: Path) -> None:
    from tornado.httpclient import HTTPClientError

    (jp_root_dir / "bad.msg.md").write_text('## %% Hello[^a]\n\n[^a]: [markdown] agent="oops\n',
                                            encoding="utf-8")
    with pytest.raises(HTTPClientError) as err:
        await jp_fetch("api", "contents", "bad.msg.md")
    assert err.value.code == 400
    assert "bad.msg.md:3" in err.value.response.body.decode()
