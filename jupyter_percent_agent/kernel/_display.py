"""How a running cell's typed events reach the front end: ``CellDisplay`` turns the runtime's
events into iopub messages (the reply streaming as one ``display_data`` updated in place at a
pace that grows with its length, tool calls, results, streams and errors as further outputs,
built by the format core), and ``for_clients`` is what leaves the kernel: a ``text/plain``
beside rich types, every secret masked."""

from __future__ import annotations

import time
from typing import Any

STREAMING_ATTRS = {"incomplete": True}
"""What a reply still streaming carries until its final form replaces it (docs/format.md):
what JupyterLab saves meanwhile is never taken for a finished reply."""

UPDATE_INTERVAL = 0.1
"""Seconds between two in-place updates of a streaming reply (the last one always goes)."""

UPDATE_RATE = 500_000
"""Characters a second a streaming reply's updates may resend: each update carries the whole
text so far, so a long reply waits ``len(text) / UPDATE_RATE`` seconds between two (a 300 KB
reply: 0.6 s) and what the kernel sends, and the front end renders, grows with the reply's
length, not with its square."""


def update_interval(chars: int) -> float:
    """Seconds to wait before the next in-place update of a reply ``chars`` long."""
    return max(UPDATE_INTERVAL, chars / UPDATE_RATE)


def one_line(text: str, limit: int = 400) -> str:
    return " ".join(str(text).split())[:limit]

class CellDisplay:
    """Sends a run's typed events to the front end as iopub messages.

    ``live``: the client named the cell it runs (JupyterLab, nbclient): the reply streams as one
    display updated in place. A client that names none (``jupyter console``, ``jupyter run``)
    shows no update of a display, so it gets the reply once, whole."""

    def __init__(self, kernel: Any, live: bool = True) -> None:
        self.kernel = kernel
        # the request that ran the cell: every output names it as its parent, also one an
        # external agent kept from an earlier cell sends from a task that cell's request made
        # (ipykernel 7 keeps the parent in a context variable, which such a task inherits)
        self.parent = kernel.get_parent("shell")
        self.live = live
        self.agent = "agent"
        self.display_id: str | None = None
        self.text = ""
        self.sent_at = 0.0
        self.sent_text = ""
        self.errors: list[dict[str, Any]] = []
        self.shown = False
        self.conversation: Any = None  # its kind is known once the run has begun
        self.live_streams = False  # a code kernel's stdout/stderr was shown as it came

    # -- the streaming reply -----------------------------------------------------------

    def _streaming_content(self) -> dict[str, Any]:
        from jupyter_percent_agent import format as fmt
        from jupyter_percent_agent.masking import streamed

        shown, _ = streamed(self.text)  # not even the start of a key before it is whole
        # marked incomplete until the last update replaces it: a save (or JupyterLab's
        # autosave) while it streams writes the reply so far as one that did not finish
        out = fmt.reply_output(fmt.escape_surrogates(shown), agent=self.agent,
                               out_id=None,  # type: ignore[arg-type]  # id: on the last update
                               attrs=STREAMING_ATTRS)
        return {"data": out["data"], "metadata": out["metadata"]}

    def _push(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and (now - self.sent_at < update_interval(len(self.sent_text))
                          or self.text == self.sent_text):
            return
        self._send("update_display_data", {**self._streaming_content(),
                                           "transient": {"display_id": self.display_id}})
        self.sent_at, self.sent_text = now, self.text

    def _open(self) -> None:
        import uuid

        self.display_id = uuid.uuid4().hex
        self._send("display_data", {**self._streaming_content(),
                                    "transient": {"display_id": self.display_id}})
        self.sent_at, self.sent_text = time.monotonic(), self.text

    def _close_with(self, out: dict[str, Any]) -> None:
        """Replace the streaming reply by its final form, with every attribute."""
        self._send("update_display_data", {"data": out["data"], "metadata": out["metadata"],
                                           "transient": {"display_id": self.display_id}})
        self.display_id, self.text, self.sent_text = None, "", ""

    # -- events --------------------------------------------------------------------------

    def __call__(self, event: Any) -> None:
        from jupyter_percent_agent.runtime import events as ev

        match event:
            case ev.Answering(agent=agent):
                self.agent = agent
            case ev.Delta(text=text):
                self.text += text
                if not self.live:
                    pass
                elif self.display_id is None:
                    if self.text.strip():
                        self._open()
                else:
                    self._push()
            case ev.Retry(reason=reason):
                # the next attempt starts afresh; the text shown stays until it streams (or,
                # when every attempt fails, until the runtime's incomplete reply replaces it):
                # never an empty reply left behind
                self.text = ""
                self.kernel.log.info("agent: %s", reason)
            case ev.CodeText(name=name, text=text):
                self.live_streams = True
                self._send("stream", {"name": name, "text": text})
            case ev.OutputMade(output=out):
                self._output(out)
            case ev.Interrupted(partial=partial):
                if not self.live and partial is not None:
                    self._output(partial)
                elif self.display_id is not None:
                    if partial is not None:
                        self._close_with(partial)
                    else:
                        self._push(force=True)
            case ev.Status() | ev.Chunk():
                self.kernel.log.info("agent: %s", event)

    def _output(self, out: dict[str, Any]) -> None:
        from jupyter_percent_agent import format as fmt

        if fmt.output_kind(out) == "reply" and self.display_id is not None:
            self._close_with(out)
            return
        self.display_id, self.text = None, ""
        ot = out.get("output_type")
        if ot == "stream":
            if not self.live_streams:  # a code kernel's streams were shown as they came
                self._send("stream", {"name": out["name"], "text": fmt.output_text(out)})
        elif ot == "execute_result":
            count = out.get("execution_count")  # a [code] cell's: its kernel's count
            self._send("execute_result", {"data": out["data"], "metadata": out["metadata"],
                                          "execution_count": count if isinstance(count, int)
                                          else self.kernel.execution_count})
        elif ot == "error":
            self.errors.append(out)
            # a [code] cell's traceback comes from its kernel: shown whole, as Jupyter does
            code = getattr(self.conversation, "kind", None) == "code"
            traceback = (list(out.get("traceback") or []) if code and out.get("traceback")
                         else short_traceback(out))
            self._send("error", {"ename": out["ename"], "evalue": out["evalue"],
                                 "traceback": traceback})
        else:
            self._send("display_data", {"data": out["data"], "metadata": out["metadata"],
                                        "transient": {}})

    def _send(self, msg_type: str, content: dict[str, Any]) -> None:
        self.shown = True
        self.kernel.session.send(self.kernel.iopub_socket, msg_type, for_clients(content),
                                 self.parent)


def for_clients(content: dict[str, Any]) -> dict[str, Any]:
    """What leaves the kernel: a ``text/plain`` beside rich types (``jupyter console`` and
    ``jupyter run`` show only that; the file does not keep it), every secret masked."""
    from jupyter_percent_agent import format as fmt
    from jupyter_percent_agent.masking import mask_data

    if isinstance(content.get("data"), dict):
        content = dict(fmt.with_plain_text(content))
    return mask_data(content)


def short_traceback(out: dict[str, Any]) -> list[str]:
    """The reason on one line, then the attempts the runtime listed (a line each)."""
    lines = [f"{out['ename']}: {one_line(out['evalue'])}"]
    lines += [one_line(t) for t in (out.get("traceback") or [])[:10]]
    return lines


