"""What a drawer must be before anything is written: checked once, before the write mark.

Chroma refuses some metadata (nested values, None, its reserved `chroma:` keys, integers
beyond 64 bits) with a bare ValueError, and a UTF-8 encoder refuses lone surrogates. Found
half-way through a write, either would leave the write-in-progress mark set and force a full
rebuild on the next read, so every row is checked (and its text cleaned) before the first
byte goes anywhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from mempalace_cli.common.errors import InvalidInputError
from mempalace_cli.common.textsafe import clean_text, clean_value
from mempalace_cli.storage.catalog import DrawerRow

_INT64 = (-(2**63), 2**63 - 1)
_RESERVED_PREFIX = "chroma:"
_HINT = (
    "Metadata values must be text, whole numbers (64-bit), finite decimals or true/false. "
    "Drop the key or pass its value as text."
)


def _refuse(where: str, problem: str, hint: str | None = None) -> InvalidInputError:
    return InvalidInputError(f"{where}: {problem}. Nothing was written.", hint=hint)


def _value_problem(value: Any) -> str | None:
    if isinstance(value, bool | str):
        return None
    if isinstance(value, int):
        return None if _INT64[0] <= value <= _INT64[1] else "an integer beyond 64 bits"
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value} (not a finite number)"
    if value is None:
        return "null"
    return f"a {type(value).__name__}"


def check_metadata(meta: dict[str, Any], where: str) -> dict[str, Any]:
    """`meta` with its text cleaned, or InvalidInputError naming the first bad key."""
    if not isinstance(meta, dict):
        raise _refuse(where, f"metadata must be an object, not {type(meta).__name__}", _HINT)
    clean: dict[str, Any] = {}
    for key, value in meta.items():
        if not isinstance(key, str) or not key.strip():
            raise _refuse(where, f"metadata key {key!r} is not a non-empty name", "Name the key.")
        if key.startswith(_RESERVED_PREFIX):
            raise _refuse(where, f"metadata key {key!r} is reserved by Chroma", "Rename the key.")
        problem = _value_problem(value)
        if problem:
            raise _refuse(where, f"metadata {clean_text(key)!r} is {problem}", _HINT)
        clean[clean_text(key)] = clean_value(value)
    return clean


def prepare_rows(rows: Sequence[DrawerRow]) -> list[DrawerRow]:
    """Rows ready to store: names and metadata checked, lone surrogates in any text replaced
    with U+FFFD (the embedder reads the same cleaned text). Raises InvalidInputError, before
    any write, for the first row that can't be stored."""
    out: list[DrawerRow] = []
    for row in rows:
        where = f"Drawer {clean_text(str(row.id))!r}"
        for name in ("id", "wing", "room", "source_file", "filed_at", "text"):
            if not isinstance(getattr(row, name), str):
                raise _refuse(where, f"{name} must be text")
        if not row.id:
            raise _refuse("A drawer", "its id is empty")
        if row.chunk_index is not None and (
            isinstance(row.chunk_index, bool) or not isinstance(row.chunk_index, int)
        ):
            raise _refuse(where, "chunk_index must be a whole number")
        out.append(
            replace(
                row,
                id=clean_text(row.id),
                wing=clean_text(row.wing),
                room=clean_text(row.room),
                source_file=clean_text(row.source_file),
                text=clean_text(row.text),
                metadata=check_metadata(row.metadata, where),
            )
        )
    return out
