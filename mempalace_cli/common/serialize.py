"""The one way a result becomes JSON: the CLI's `--json` output and the MCP server's text
content both go through `to_json`.

Beyond what `json` writes itself (dicts, lists, tuples, strings, numbers, booleans, None):
a path is written as its text, a date or datetime in ISO 8601, a set as a sorted list, a
dataclass as the object of its fields; anything else as its `str()`. Text is written as
is (ensure_ascii off): a Chinese note stays readable.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import date, datetime
from pathlib import PurePath
from typing import Any


def to_json(obj: Any, *, indent: int | None = None) -> str:
    """`obj` as one JSON document (`indent` spaces per level; None: one line)."""
    return json.dumps(obj, ensure_ascii=False, indent=indent, default=_plain)


def _plain(obj: Any) -> Any:
    """What `json` cannot write itself, as something it can."""
    if isinstance(obj, PurePath):
        return str(obj)
    if isinstance(obj, datetime | date):
        return obj.isoformat()
    if isinstance(obj, set | frozenset):
        try:
            return sorted(obj)
        except TypeError:  # mixed kinds: keep a stable order all the same
            return sorted(obj, key=repr)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    return str(obj)
