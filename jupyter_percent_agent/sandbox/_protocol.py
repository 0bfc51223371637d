"""Length-prefixed JSON frames between the parent and the sandbox child.

A frame is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON (an object
with a ``"t"`` type key). The child side uses blocking reads on raw descriptors; the parent
feeds bytes into ``FrameDecoder``, which never buffers more than one capped frame.
This module imports only the standard library: the child imports it before anything else.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any

from jupyter_percent_agent.errors import Kind, PercentAgentError

_HEADER = struct.Struct(">I")


class ProtocolError(PercentAgentError):
    """The other side sent something that is not a valid frame."""

    error_kind = Kind.TOOL


def encode(message: dict[str, Any]) -> bytes:
    """One frame for ``message`` (raises TypeError/ValueError if it is not JSON)."""
    # ASCII escapes keep lone surrogates (valid in a Python str, not in UTF-8) representable.
    body = json.dumps(message, separators=(",", ":")).encode("ascii")
    return _HEADER.pack(len(body)) + body


def _reject_constant(name: str) -> Any:
    raise ProtocolError(f"non-JSON constant {name}")


def decode_body(body: bytes) -> dict[str, Any]:
    """Parse one frame body; anything but a JSON object with a string ``t`` is an error."""
    try:
        message = json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ProtocolError(f"bad frame: {type(exc).__name__}") from None
    if not isinstance(message, dict) or not isinstance(message.get("t"), str):
        raise ProtocolError("frame is not an object with a type")
    return message


class FrameDecoder:
    """Incremental decoder: ``feed`` bytes, get whole frames (as ``(size, message)``)."""

    def __init__(self, max_frame: int) -> None:
        self._max = max_frame
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[tuple[int, dict[str, Any]]]:
        self._buf += data
        frames = []
        while len(self._buf) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self._buf)
            if size > self._max:
                raise ProtocolError(f"frame of {size} bytes exceeds the {self._max} byte cap")
            if len(self._buf) < _HEADER.size + size:
                break
            body = bytes(self._buf[_HEADER.size : _HEADER.size + size])
            del self._buf[: _HEADER.size + size]
            frames.append((size, decode_body(body)))
        return frames


def write_frame(fd: int, message: dict[str, Any]) -> None:
    """Blocking write of one frame to a raw descriptor (child side)."""
    view = memoryview(encode(message))
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _read_exact(fd: int, size: int) -> bytes:
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError("peer closed the channel")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, max_frame: int) -> dict[str, Any]:
    """Blocking read of one frame from a raw descriptor (child side)."""
    (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size))
    if size > max_frame:
        raise ProtocolError(f"frame of {size} bytes exceeds the {max_frame} byte cap")
    return decode_body(_read_exact(fd, size))
