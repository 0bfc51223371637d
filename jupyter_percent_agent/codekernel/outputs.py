"""A code kernel's IOPub messages as the format's outputs: streams joined while they run,
rich results kept by MIME type, errors with their traceback, ANSI codes stripped, and a cap
on the bytes one cell may save (with a line saying what was cut).

Pure: no I/O, no jupyter_client. ``Collector.take(msg)`` is fed every IOPub message of one
execution; the outputs it makes go to ``emit`` as soon as they are complete (a stream when
another output or the end comes), and stream text to ``on_text`` as it comes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from jupyter_percent_agent import format as fmt

ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
"""CSI sequences (colours, cursor moves), OSC sequences (titles, links) and two-byte escapes."""

TEXT_FIRST = ("text/plain",)
BINARY = ("image/png", "image/jpeg", "image/gif", "image/webp")


def strip_ansi(text: str) -> str:
    """``text`` without terminal escape sequences (a traceback's colours)."""
    return ANSI.sub("", text) if "\x1b" in text else text


def _mime_size(value: Any) -> int:
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, list):
        return sum(_mime_size(v) for v in value)
    import json

    return len(json.dumps(value, ensure_ascii=False))


class Collector:
    """The outputs of one execution. ``emit(output)`` gets each complete output; ``cap`` is
    the bytes the cell may save (``None``: no cap); ``language`` the outputs' ``[LANG]``."""

    def __init__(
        self,
        emit: Callable[[dict[str, Any]], Any],
        next_id: Callable[[], str],
        *,
        cap: int | None,
        language: str = "python",
        on_text: Callable[[str, str], Any] | None = None,
    ) -> None:
        self._emit = emit
        self._on_text = on_text
        self._next_id = next_id
        self.cap = cap
        self.language = language
        self.used = 0
        self.cut = 0  # bytes left out past the cap
        self._stream: tuple[str, list[str]] | None = None
        self._displays: dict[str, dict[str, Any]] = {}  # display_id -> its output
        self.execution_count: int | None = None
        self.error: tuple[str, str] | None = None  # (ename, evalue) of the cell's error
        # streams of another language than Python are written [LANG]
        self._other_language = None if language in ("python", "py", "python3") else language

    # -- the cap ---------------------------------------------------------------------------

    def _room(self, size: int) -> bool:
        if self.cap is None or self.used + size <= self.cap:
            self.used += size
            return True
        self.cut += size
        return False

    def _fit_text(self, text: str) -> str:
        """As much of ``text`` as the cap leaves room for (the rest counted as cut)."""
        if self.cap is None:
            return text
        room = max(self.cap - self.used, 0)
        data = text.encode("utf-8", "surrogatepass")
        if len(data) <= room:
            self.used += len(data)
            return text
        kept = data[:room].decode("utf-8", "ignore")
        self.used = self.cap
        self.cut += len(data) - len(kept.encode("utf-8", "surrogatepass"))
        return kept

    # -- messages ----------------------------------------------------------------------------

    def take(self, msg: Mapping[str, Any]) -> None:
        """One IOPub message of this execution (status, input echoes are ignored)."""
        kind = msg.get("msg_type") or (msg.get("header") or {}).get("msg_type")
        content = msg.get("content") or {}
        if kind == "stream":
            self._take_stream(
                str(content.get("name") or "stdout"), strip_ansi(str(content.get("text") or ""))
            )
        elif kind == "update_display_data":
            self._update(content)
        elif kind in ("display_data", "execute_result"):
            if kind == "execute_result":
                self.execution_count = content.get("execution_count")
            self._take_data(kind, content)
        elif kind == "error":
            self._take_error(content)
        elif kind == "execute_input":
            self.execution_count = content.get("execution_count", self.execution_count)
        elif kind == "clear_output":
            pass  # the file keeps what was shown; a progress bar's frames are joined as text

    def _take_stream(self, name: str, text: str) -> None:
        if name != "stderr":  # the format keeps stdout and stderr; anything else is stdout
            name = "stdout"
        if self._stream is not None and self._stream[0] != name:
            self.flush()
        text = self._fit_text(text)
        if not text:
            return
        if self._on_text is not None:  # shown as it comes; saved joined, when complete
            self._on_text(name, text)
        if self._stream is None:
            self._stream = (name, [])
        self._stream[1].append(text)

    def flush(self) -> None:
        """Emit the stream being collected, if any."""
        if self._stream is None:
            return
        name, parts = self._stream
        self._stream = None
        self._emit(
            fmt.stream_output(
                name, "".join(parts), out_id=self._next_id(), language=self._other_language
            )
        )

    def _take_data(self, kind: str, content: Mapping[str, Any]) -> None:
        data = {k: v for k, v in (content.get("data") or {}).items() if isinstance(k, str)}
        if not data:
            return
        self.flush()
        size = sum(_mime_size(v) for v in data.values())
        if not self._room(size):
            return
        if "text/plain" in data and isinstance(data["text/plain"], str):
            data["text/plain"] = strip_ansi(data["text/plain"])
        count = content.get("execution_count") if kind == "execute_result" else None
        out = fmt.code_data_output(
            data,
            out_id=self._next_id(),
            language=self.language,
            execution_count=count,
            result=kind == "execute_result",
        )
        display_id = (content.get("transient") or {}).get("display_id")
        if isinstance(display_id, str):
            self._displays[display_id] = out
        self._emit(out)

    def _update(self, content: Mapping[str, Any]) -> None:
        """``update_display_data``: the output shown with that display id takes the new data
        (a progress display is saved as it ended, not as one output per frame)."""
        display_id = (content.get("transient") or {}).get("display_id")
        out = self._displays.get(display_id) if isinstance(display_id, str) else None
        data = {k: v for k, v in (content.get("data") or {}).items() if isinstance(k, str)}
        if out is None or not data:
            return
        if "text/plain" in data and isinstance(data["text/plain"], str):
            data["text/plain"] = strip_ansi(data["text/plain"])
        fresh = fmt.code_data_output(data, out_id=None, language=self.language)
        out["data"] = fresh["data"]

    def _take_error(self, content: Mapping[str, Any]) -> None:
        self.flush()
        ename = strip_ansi(str(content.get("ename") or "Error"))
        evalue = strip_ansi(str(content.get("evalue") or ""))
        traceback = [strip_ansi(str(line)) for line in content.get("traceback") or []]
        self.error = (ename, evalue)
        # an error is always kept: it is what the user and the agent need to see
        self._emit(fmt.error_output(ename, evalue, traceback, out_id=self._next_id()))

    def finish(self) -> None:
        """The execution is over: the last stream, and the line saying what the cap cut."""
        self.flush()
        if self.cut:
            note = (
                f"[output cut: {self.cut} bytes past the cap of {self.cap} bytes "
                "(code_output_bytes in your config)]\n"
            )
            if self._on_text is not None:
                self._on_text("stderr", note)
            self._emit(
                fmt.stream_output(
                    "stderr",
                    note,
                    out_id=self._next_id(),
                    attrs={"truncated": self.cut},
                    language=self._other_language,
                )
            )
