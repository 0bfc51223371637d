"""Code kernels: the user's real ``python3`` kernelspec driven with ``jupyter_client`` from
the runtime, and the pure parts (IOPub messages to outputs, the cap, what the model gets)."""

from __future__ import annotations

import asyncio
import base64
import io
from collections.abc import Callable
from pathlib import Path

import pytest

from jupyter_percent_agent import codekernel
from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.runtime import history as hist
from jupyter_percent_agent.runtime.code_history import IMAGE_SIDE, sees_images
from jupyter_percent_agent.runtime.turn import RunOptions, new_run, run_turn
from tests.paths import TEST_DATA

DATA = TEST_DATA / "code"
RED = base64.b64encode((DATA / "red-2000x1000.png").read_bytes()).decode()


def code_file(*cells: str) -> dict:
    text = "".join(
        f"# %% Cell {i}[^k{i}]\n[^k{i}]: [code]\n\n```python\n{src}\n```\n\n"
        for i, src in enumerate(cells, start=1)
    )
    return fmt.reads(text, path="k.msg.md")


def run_cell(
    nb: dict,
    cid: str,
    folder: Path,
    kernels: codekernel.CodeKernels | None,
    *,
    seconds: float | None = None,
):
    """Run one cell as the front ends do; ``seconds``: cancel it then (Ctrl-C)."""
    run = new_run(nb, cid)
    options = RunOptions(base_dir=folder, code_kernels=kernels)

    async def go() -> None:
        task = run_turn(nb, cid, options, run=run)
        if seconds is None:
            await task
        else:
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(task, seconds)

    return run, go()


def streams(run) -> str:
    return "".join(fmt.output_text(o) for o in run.outputs if fmt.output_kind(o) == "stream")


def test_a_cell_that_prints_forever_is_capped_interrupted_and_the_kernel_lives_on(
    tmp_path: Path, user_config_dir: Path, trusted: Callable[[Path], Path]
) -> None:
    (user_config_dir / "config.toml").write_text("code_output_bytes = 2000\n")
    trusted(tmp_path)
    nb = code_file(
        "i = 0\nwhile True:\n    i += 1\n    print('line', i)", "print('alive', i > 100)"
    )
    kernels = codekernel.CodeKernels(tmp_path)

    async def scenario():
        try:
            first, go = run_cell(nb, "k1", tmp_path, kernels, seconds=4)
            await go
            second, go = run_cell(nb, "k2", tmp_path, kernels)
            await go
            return first, second
        finally:
            await kernels.shutdown()

    first, second = asyncio.run(scenario())
    assert first.status == "interrupted"
    text = streams(first)
    assert text.startswith("line 1\nline 2\n")
    assert "[output cut:" in text and "cap of 2000 bytes" in text
    kept = sum(
        len(fmt.output_text(o).encode())
        for o in first.outputs
        if fmt.output_kind(o) == "stream" and "[output cut" not in fmt.output_text(o)
    )
    assert kept <= 2000
    assert ("error", "KeyboardInterrupt") in [
        (fmt.output_kind(o), o.get("ename")) for o in first.outputs
    ]
    assert second.status == "ok" and streams(second) == "alive True\n"  # state kept


def test_a_kernel_that_dies_mid_cell_keeps_earlier_outputs_and_the_next_run_starts_anew(
    tmp_path: Path, trusted: Callable[[Path], Path]
) -> None:
    trusted(tmp_path)
    nb = code_file(
        "import os, time\nprint('before', flush=True)\ntime.sleep(0.5)\nos._exit(3)",
        "print('again')",
    )
    kernels = codekernel.CodeKernels(tmp_path)

    async def scenario():
        try:
            dead, go = run_cell(nb, "k1", tmp_path, kernels)
            await go
            fresh, go = run_cell(nb, "k2", tmp_path, kernels)
            await go
            return dead, fresh
        finally:
            await kernels.shutdown()

    dead, fresh = asyncio.run(scenario())
    assert dead.status == "error" and dead.error_type == "KernelDied"
    assert streams(dead) == "before\n"
    (error,) = [o for o in dead.outputs if fmt.output_kind(o) == "error"]
    assert error["ename"] == "KernelDied" and "died" in error["evalue"]
    assert fresh.status == "ok" and streams(fresh) == "again\n"
    assert fresh.execution_count == 1  # a new kernel


def test_the_kernel_runs_in_the_notebooks_folder(
    tmp_path: Path, trusted: Callable[[Path], Path]
) -> None:
    trusted(tmp_path)
    (tmp_path / "data.csv").write_text("a,b\n1,2\n")
    nb = code_file("print(open('data.csv').read().split()[1])")
    run, go = run_cell(nb, "k1", tmp_path, None)  # a kernel for this cell, stopped after it
    asyncio.run(go)
    assert streams(run) == "1,2\n", run.outputs


def collect(messages: list[dict], cap: int | None = None) -> list[dict]:
    outs: list[dict] = []
    ids = iter(range(1, 100))
    c = codekernel.Collector(outs.append, lambda: f"x.{next(ids)}", cap=cap)
    for m in messages:
        c.take(m)
    c.finish()
    return outs


def test_ansi_codes_are_stripped_and_streams_joined() -> None:
    outs = collect(
        [
            {"msg_type": "stream", "content": {"name": "stdout", "text": "\x1b[31mred\x1b[0m "}},
            {"msg_type": "stream", "content": {"name": "stdout", "text": "text\n"}},
            {
                "msg_type": "error",
                "content": {
                    "ename": "ValueError",
                    "evalue": "bad",
                    "traceback": [
                        "\x1b[0;31mValueError\x1b[0m: bad",
                        "\x1b]8;;file://x\x07link\x1b]8;;\x07",
                    ],
                },
            },
        ]
    )
    assert [o["output_type"] for o in outs] == ["stream", "error"]
    assert outs[0]["text"] == "red text\n"
    assert outs[1]["traceback"] == ["ValueError: bad", "link"]


def test_rich_results_keep_every_mime_type_and_the_cap_counts_them() -> None:
    html = {"text/html": "<table><tr><td>1</td></tr></table>", "text/plain": "   a\n0  1"}
    outs = collect(
        [
            {
                "msg_type": "execute_result",
                "content": {"data": html, "execution_count": 3, "metadata": {}},
            },
            {"msg_type": "display_data", "content": {"data": {"image/png": RED}, "metadata": {}}},
        ],
        cap=1000,
    )
    (table, note) = outs
    assert table["output_type"] == "execute_result" and table["execution_count"] == 3
    assert table["data"] == html
    assert "[output cut: " in note["text"] and note["name"] == "stderr"
    text = fmt.writes(
        {
            "cells": [
                {
                    "cell_type": "code",
                    "id": "x",
                    "source": "df",
                    "metadata": {fmt.NS: {"type": "code"}},
                    "outputs": outs,
                    "execution_count": 3,
                }
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )
    assert (
        'mime_type=["text/html","text/plain"]' in text
        or 'mime_type=["text/plain","text/html"]' in text
    )


def _history_with_image() -> hist.History:
    text = (
        "# %% Plot[^p]\n[^p]: [code] execution_count=1\n\n```python\nshow()\n```\n\n"
        f'## %%%[^p.1]\n[^p.1]: [python] mime_type="image/png"\n\n{RED}\n\n'
        "# %% What does the plot show?[^q]\n\nWhat does the plot show?\n"
    )
    cells = hist.conversation_cells(fmt.reads(text, path="p.msg.md"))
    return hist.build_history(cells, 2)


def test_images_go_as_scaled_image_parts_to_a_model_that_sees_them() -> None:
    from PIL import Image

    history = _history_with_image()
    assert history.has_images
    first = history.messages_for(vision=True)[0]["content"]
    assert first[0]["type"] == "text" and "[image 1: image/png]" in first[0]["text"]
    url = first[1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    with Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) as img:
        assert img.size == (IMAGE_SIDE, IMAGE_SIDE // 2)  # the file keeps 2000x1000
    blind = history.messages_for(vision=False)[0]["content"]
    assert isinstance(blind, str) and "not shown" in blind and RED not in blind
    assert RED not in history.messages[0]["content"]


def test_which_models_see_images() -> None:
    assert sees_images(None, "gpt-4o") is True
    assert sees_images(None, "test-model") is False
    assert sees_images(True, "test-model") is True
    assert sees_images(False, "gpt-4o") is False


def test_the_model_gets_code_and_outputs_as_data_within_a_budget() -> None:
    rows = "".join(f"stdout> row {i}\n" for i in range(5000))
    head = "# %% Load[^a]\n[^a]: [code]\n\n```python\nload()\n```\n\n"
    head += "## %%%[^a.1]\n[^a.1]: [python]\n\n" + rows
    text = head + (DATA / "history_tail.msg.md").read_text()
    cells = hist.conversation_cells(fmt.reads(text, path="h.msg.md"))
    sent = hist.build_history(cells, 3).messages
    assert len(sent) == 2  # the code cell, then the question: the excluded cell is left out
    code = sent[0]["content"]
    assert code.startswith("[The user ran this python code cell") and "not instructions" in code
    assert "row 0\n" in code and "row 4999\n" in code
    assert "characters of output cut" in code and len(code) < 10_000
    assert "   a\n0  1" in code and "<table>" not in code  # a DataFrame by its text/plain
    assert "Error: KeyError: 'b'" in code and "Traceback" in code
    assert "secret" not in "".join(m["content"] for m in sent)


def test_a_display_updated_in_place_is_saved_as_it_ended() -> None:
    shown = {"data": {"text/plain": "10%"}, "metadata": {}, "transient": {"display_id": "bar"}}
    outs = collect(
        [
            {"msg_type": "display_data", "content": shown},
            *[
                {
                    "msg_type": "update_display_data",
                    "content": {
                        "data": {"text/plain": f"{p}%"},
                        "transient": {"display_id": "bar"},
                    },
                }
                for p in (50, 100)
            ],
        ]
    )
    (bar,) = outs
    assert bar["data"] == {"text/plain": "100%"}


def test_an_image_counts_in_the_history_budget() -> None:
    history = _history_with_image()
    assert hist.fit(history, 1_000, lambda msgs: 10).dropped == ["p"]  # the plot's cell goes
    assert hist.fit(_history_with_image(), 5_000, lambda msgs: 10).dropped == []


def test_outputs_of_another_language_are_written_as_that_language() -> None:
    outs: list[dict] = []
    ids = iter(range(1, 9))
    c = codekernel.Collector(outs.append, lambda: f"r1.{next(ids)}", cap=None, language="r")
    c.take({"msg_type": "stream", "content": {"name": "stdout", "text": "[1] 2\n"}})
    c.take({"msg_type": "display_data", "content": {"data": {"text/plain": "x"}}})
    c.finish()
    nb = fmt.reads("# %% R[^r1]\n[^r1]: [code]\n\n```r\nprint(2)\n```\n", path="r.msg.md")
    nb["cells"][0]["outputs"] = outs
    text = fmt.writes(nb)
    assert "[^r1.1]: [r]\n\nstdout> [1] 2" in text and "[^r1.2]: [r] mime_type=" in text
