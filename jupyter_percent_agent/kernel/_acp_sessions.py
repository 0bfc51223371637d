"""The Agent kernel's external agents: one process per ACP agent of the open conversation.

``tce`` starts an agent for a turn and ends it after; the kernel serves one open
conversation, so it keeps each agent it started (and its session: the next message goes on
in it without loading or replaying anything) until the conversation closes: the kernel's
shutdown or restart ends every one, and with it all that it started. An agent that died,
or whose command the user changed since (``tce acp add --replace``), or a conversation that
moved to another folder, gets a new process on its next turn.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["AcpSessions"]


class AcpSessions:
    """The kept sessions, by the user's name for the agent; ``runtime.RunOptions``'s
    ``acp_sessions``, through which an ACP turn gets its session instead of starting one."""

    def __init__(self) -> None:
        self._kept: dict[str, Any] = {}  # name -> acp.AcpSession

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def pids(self) -> list[int]:
        """The process ids of the agents running now."""
        return [s.pid for s in self._kept.values() if s.pid is not None]

    async def session(self, spec: Any, folder: os.PathLike[str] | str,
                      protected: tuple[os.PathLike[str] | str, ...] = ()) -> Any:
        """The started session of agent ``spec`` (``acp.AcpAgentSpec``) in ``folder``: the
        kept one when it still runs the same command there, else a new one."""
        from jupyter_percent_agent import acp

        root = Path(folder).resolve()
        kept = self._kept.get(spec.name)
        if kept is not None and (kept.spec != spec or not kept.running
                                 or Path(kept.folder.root) != root):
            del self._kept[spec.name]
            await kept.close()
            kept = None
        if kept is None:
            kept = acp.AcpSession(spec, root, protected=protected)
            try:
                await kept.start()
            except BaseException:
                await kept.close()
                raise
            self._kept[spec.name] = kept
        return kept

    async def close(self) -> None:
        """End every agent and all it started."""
        kept, self._kept = list(self._kept.values()), {}
        for session in kept:
            await session.close()
