"""Summaries of ``history="summary"`` cells: made once by the cell's agent, stored with the
cell (``summary`` and ``summary_hash`` attributes), made again only when the cell changed.

``make_summaries`` returns what it made, for the front end to store: ``tce`` writes them into
the file, the kernel keeps them for the rest of its session (``apply_summaries`` lays them
over the notebook it reads next).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.runtime import history as hist
from jupyter_percent_agent.runtime.agents import Agent
from jupyter_percent_agent.runtime.events import Status
from jupyter_percent_agent.runtime.models import spec_for
from jupyter_percent_agent.runtime.run import Run
from jupyter_percent_agent.runtime.transport import Transport
from jupyter_percent_agent.trust import Route

SUMMARY_PROMPT = (
    "Summarize the following part of a conversation in a few sentences. Keep facts, decisions, "
    "names and numbers; drop pleasantries. Answer with the summary only."
)


async def make_summaries(nb: Mapping[str, Any], index: int, agent: Agent, run: Run, *,
                         route: Route, transport: Transport) -> dict[str, tuple[str, str]]:
    """Summaries for the earlier ``history="summary"`` cells that have none (or a stale one):
    cell id -> (summary, content hash)."""
    made: dict[str, tuple[str, str]] = {}
    for _i, cell, mode in hist.earlier_cells(hist.conversation_cells(nb), index):
        if mode != "summary" or hist.stored_summary(cell) is not None:
            continue
        cid = fmt.cell_id(cell)
        text = "\n\n".join(f"{t.role}: {t.content}" for t in hist.cell_turns(cell, cid))
        spec = spec_for(agent, [{"role": "system", "content": SUMMARY_PROMPT},
                                {"role": "user", "content": text}], route=route)
        run.tell(Status(f"summarizing cell {cid}"))
        res = await transport.complete(spec)
        if res.ok and res.text.strip():
            made[cid] = (res.text.strip(), hist.content_hash(cell))
    return made


def apply_summaries(nb: Mapping[str, Any], summaries: Mapping[str, tuple[str, str]]) -> None:
    """Store summaries with their cells (in place), where the cell is still what was
    summarized."""
    by_id = {fmt.cell_id(c): c for c in nb.get("cells", [])}
    for cid, (summary, digest) in summaries.items():
        cell = by_id.get(cid)
        if cell is not None and hist.content_hash(cell) == digest:
            fmt.set_cell_attrs(cell, {"summary": summary, "summary_hash": digest})
