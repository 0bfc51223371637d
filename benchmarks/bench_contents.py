"""Contents manager: GET and PUT of a 5,000-cell message file vs jupytext's own Markdown.

Ours: ``jupyter_percent_agent.contents`` (jupytext's contents manager with message files
through the format core) reading and saving ``chat.msg.md``. Peer: jupytext's own contents
manager reading and saving the same notebook as a jupytext ``.md`` (``markdown`` format).
Both derive from jupyter_server's default ``AsyncLargeFileManager`` and run in the same
process, on the same notebook: 5,000 cells, a message with a reply every other cell and notes
in between. Medians of repeated runs; the target is a ratio of at least 5 both ways.

Run: ``.venv/bin/python -m benchmarks.bench_contents``
"""

from __future__ import annotations

import asyncio
import copy
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._timing import median_seconds, print_table

N_CELLS = 5_000
TARGET = 5.0


def make_notebook(n_cells: int = N_CELLS) -> dict[str, Any]:
    """A conversation: messages (code cells) with a Markdown reply each, notes in between."""
    from jupyter_percent_agent import format as core

    cells = []
    for i in range(n_cells):
        if i % 2 == 0:
            cell = core.new_message(
                f"Question {i}: how do the two plans compare on cost and on risk?\n\n"
                "Please answer with a short table.",
                cell_id=f"q{i}",
            )
            cell["outputs"] = [
                core.reply_output(
                    f"Plan A costs {i} units, plan B {i + 1}.\n\n| plan | cost |\n|---|---|\n"
                    f"| A | {i} |\n| B | {i + 1} |",
                    agent="planner",
                    out_id=f"q{i}.1",
                )
            ]
        else:
            cell = {
                "cell_type": "markdown",
                "id": f"n{i}",
                "metadata": {},
                "source": f"A note between messages, number {i}, with *some* Markdown.",
            }
        cells.append(cell)
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {
            "kernelspec": {"name": "percent-agent", "display_name": "Agent", "language": "markdown"}
        },
        "cells": cells,
    }


def _managers(root: str) -> tuple[Any, Any]:
    from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
    from jupytext.async_contentsmanager import build_async_jupytext_contents_manager_class

    from jupyter_percent_agent.contents import build_message_contents_manager_class

    jupytext_cls = build_async_jupytext_contents_manager_class(AsyncLargeFileManager)
    ours_cls = build_message_contents_manager_class(AsyncLargeFileManager)
    return ours_cls(root_dir=root), jupytext_cls(root_dir=root)


def main() -> None:
    import jupytext
    import nbformat

    from jupyter_percent_agent import format as core

    nb = make_notebook()
    loop = asyncio.new_event_loop()
    with tempfile.TemporaryDirectory() as root:
        core.write(nb, Path(root) / "chat.msg.md")
        jupytext.write(nbformat.from_dict(copy.deepcopy(nb)), str(Path(root) / "chat.md"))
        ours, peer = _managers(root)

        ours_model = loop.run_until_complete(ours.get("chat.msg.md"))
        peer_model = loop.run_until_complete(peer.get("chat.md"))
        assert len(ours_model["content"]["cells"]) == N_CELLS
        assert len(peer_model["content"]["cells"]) >= N_CELLS

        def run(coro_fn: Any) -> Any:
            return lambda: loop.run_until_complete(coro_fn())

        timings = {
            ("GET", "ours"): median_seconds(run(lambda: ours.get("chat.msg.md")), repeat=5),
            ("GET", "peer"): median_seconds(run(lambda: peer.get("chat.md")), repeat=3),
            ("PUT", "ours"): median_seconds(
                run(lambda: ours.save(_put(ours_model), "chat.msg.md")), repeat=5
            ),
            ("PUT", "peer"): median_seconds(
                run(lambda: peer.save(_put(peer_model), "chat.md")), repeat=3
            ),
        }
        text = (Path(root) / "chat.msg.md").read_text(encoding="utf-8")
        core_reads = median_seconds(lambda: core.reads(text, path="chat.msg.md"), repeat=3)
        core_writes = median_seconds(
            lambda: core.writes(ours_model["content"], path="chat.msg.md"), repeat=3
        )
        sizes = (
            (Path(root) / "chat.msg.md").stat().st_size,
            (Path(root) / "chat.md").stat().st_size,
        )
    loop.close()

    rows = []
    for op in ("GET", "PUT"):
        ratio = timings[(op, "peer")] / timings[(op, "ours")]
        rows.append(
            [
                op,
                timings[(op, "ours")],
                timings[(op, "peer")],
                f"{ratio:.1f}x",
                "yes" if ratio >= TARGET else "NO",
            ]
        )
    print_table(
        f"Contents manager, {N_CELLS} cells (msg {sizes[0] / 1e6:.2f} MB, "
        f"jupytext md {sizes[1] / 1e6:.2f} MB)",
        rows,
        ["op", "ours .msg.md (s)", "jupytext .md (s)", "ratio", f">= {TARGET:g}x"],
    )
    # Where our time goes: the format core alone, outside any contents manager.
    print(f"\nformat core alone: reads {core_reads:.4g} s, writes {core_writes:.4g} s")


def _put(model: dict[str, Any]) -> dict[str, Any]:
    return {"type": "notebook", "format": "json", "content": model["content"]}


if __name__ == "__main__":
    main()
