"""What the SOP index answers with, and its rows checked in shape as they are read, so a
damaged row never reaches a caller (a ``sqlite3.DatabaseError``: the file is rebuilt)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from jupyter_percent_agent.tasks.documents import TASK_TYPES


@dataclass(frozen=True)
class Hit:
    """One search result. ``score`` is in [0, 1] (1: first by terms and by meaning)."""

    task_id: str
    score: float
    description: str
    task_type: str
    path: str

    def to_json(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "score": round(self.score, 4),
                "description": self.description}


# -- rows, checked in shape as they are read ---------------------------------------------------

def damaged(what: str) -> sqlite3.DatabaseError:
    return sqlite3.DatabaseError(f"damaged row: {what}")


def text_value(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise damaged(f"{what} is not text")
    return value


def task_type_value(value: object) -> str:
    if value not in TASK_TYPES:
        raise damaged("unknown task_type")
    return str(value)


def names_value(value: object, what: str) -> list[str]:
    """A stored JSON list of strings (tool ids, routes)."""
    try:
        names = json.loads(text_value(value, what))
    except ValueError:
        raise damaged(f"{what} is not JSON") from None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise damaged(f"{what} is not a list of names")
    return names
