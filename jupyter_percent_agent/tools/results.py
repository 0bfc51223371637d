"""Tool results: the Jarvis ``{"data": ..., "instruction": ...}`` form and plain JSON values,
and the images a tool shows beside its value (``show_image``)."""

from __future__ import annotations

import base64
import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypedDict

STREAM_CHUNK = "stream_chunk"
_JARVIS_KEYS = frozenset({"data", "instruction"})


class ToolResult(TypedDict):
    """A normalized result: ``data`` for the calling code, ``instruction`` for the model."""

    data: Any
    instruction: str | None


def normalize_result(value: Any) -> ToolResult:
    """Bring a tool's return value to ``{"data": JSON, "instruction": str | None}``.

    A mapping whose keys are ``data`` (required) and optionally ``instruction`` is the Jarvis
    form; anything else is taken as ``data``. ``data`` must be a JSON value (tuples become lists);
    an empty instruction becomes ``None``. Idempotent. Raises ``TypeError`` for values that are not
    JSON (an object, a set, bytes, NaN) naming what was found.
    """
    if _is_jarvis(value):
        instruction = value.get("instruction")
        if instruction is not None and not isinstance(instruction, str):
            raise TypeError(f"instruction must be a string, not {type(instruction).__name__}")
        return {"data": to_json(value["data"]), "instruction": instruction or None}
    return {"data": to_json(value), "instruction": None}


def to_json(value: Any, path: str = "data") -> Any:
    """A copy of ``value`` made of JSON types only; ``TypeError`` names the first offending path."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TypeError(f"{path} is {value!r}, which JSON cannot carry")
        return value
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(
                    f"{path} has a key of type {type(key).__name__}; JSON keys are strings"
                )
            out[key] = to_json(item, f"{path}[{key!r}]")
        return out
    if isinstance(value, list | tuple):
        return [to_json(item, f"{path}[{i}]") for i, item in enumerate(value)]
    raise TypeError(f"{path} is a {type(value).__name__}, not a JSON value")


def split_stream_chunk(value: Any) -> tuple[Any, Any, bool]:
    """Take ``data.stream_chunk`` out of a raw return value, before it is normalized.

    ``(value without the chunk, chunk, whether there was one)``. The chunk goes to the display as
    it is (it may be any object: it never reaches the model's code), so only the rest must be
    JSON. Works on the Jarvis form (``{"data": {"stream_chunk": ...}}``) and on a bare mapping
    taken as data.
    """
    if _is_jarvis(value):
        rest, chunk, found = _split_data(value["data"])
        if not found:
            return value, None, False
        return {**value, "data": rest}, chunk, True
    return _split_data(value)


def _split_data(data: Any) -> tuple[Any, Any, bool]:
    if not isinstance(data, Mapping) or STREAM_CHUNK not in data:
        return data, None, False
    rest = {k: v for k, v in data.items() if k != STREAM_CHUNK}
    return rest or None, data[STREAM_CHUNK], True


def _is_jarvis(value: Any) -> bool:
    return isinstance(value, Mapping) and "data" in value and set(value) <= _JARVIS_KEYS


# -- images a tool shows ------------------------------------------------------------------


@dataclass(frozen=True)
class ToolImage:
    """An image a tool returned: it becomes an image output of the call's record (and an
    image part for a model that sees images); the calling code gets a small value instead."""

    mime: str
    data: str  # base64
    tool: str


_IMAGES: ContextVar[list[ToolImage] | None] = ContextVar("tool_images", default=None)


SHOWN_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The images a tool's call shows as an output: pictures, nothing a front end runs or lays out
(an output's MIME type decides its renderer: ``application/javascript`` is run, ``text/html``
and SVG laid out, by JupyterLab for a live output)."""


def show_image(mime: str, data: str, tool: str) -> int | None:
    """Hand an image to the run that called the tool: its number (from 1) among the run's
    images, or None when no run collects them or it is not a picture (``SHOWN_IMAGE_TYPES``,
    its data base64): it is then only described."""
    images = _IMAGES.get()
    if images is None or not _picture(mime, data):
        return None
    images.append(ToolImage(mime, data, tool))
    return len(images)


@contextmanager
def collecting_images() -> Iterator[list[ToolImage]]:
    """The images the tools called within this block (this task and the tasks it starts)
    show with :func:`show_image`, in order."""
    images: list[ToolImage] = []
    token = _IMAGES.set(images)
    try:
        yield images
    finally:
        _IMAGES.reset(token)


def _picture(mime: object, data: object) -> bool:
    """``mime`` names a picture and ``data`` is base64 (as the image's output holds it)."""
    if not isinstance(mime, str) or mime not in SHOWN_IMAGE_TYPES:
        return False
    try:
        base64.b64decode(data, validate=True)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return True
