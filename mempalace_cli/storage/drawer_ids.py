"""Drawer ids: `drawer_{wing}_{room}_{digest}`, readable and unambiguous.

Names are joined with underscores and may hold underscores themselves, so the readable part
alone can't tell wing `a_b`/room `c` from wing `a`/room `b_c`. The digest therefore covers the
wing and the room (NUL-separated) as well as the content key: two places never share an id.

Ids filed before this scheme (the digest over the content alone) stay valid: ids are opaque
to every reader, and `legacy_drawer_id` lets idempotent writers recognise a drawer they filed
under the old scheme (after checking its stored wing and room) instead of filing it twice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from mempalace_cli.common.errors import InvalidInputError, NotFoundError

DIGEST_CHARS = 16


def drawer_id(wing: str, room: str, key: str) -> str:
    """The id of the drawer with content key `key` (a content digest, or a file and chunk)."""
    h = hashlib.sha256()
    for part in ("drawer/2", wing, room, key):
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return f"drawer_{wing}_{room}_{h.hexdigest()[:DIGEST_CHARS]}"


def legacy_drawer_id(wing: str, room: str, digest: str) -> str:
    """The id the same drawer got before wing and room were hashed in (`digest` is the hex
    digest that scheme used). Ambiguous: check the stored drawer's wing and room."""
    return f"drawer_{wing}_{room}_{digest[:DIGEST_CHARS]}"


def filed_under(
    stored: Mapping[str, Any], wing: str, room: str, digest: str, content: str | None = None
) -> str | None:
    """The id under which this content already sits in (wing, room), if any: the current id,
    or the legacy one when the drawer stored there really is in this wing and room (and holds
    `content`, when given). `stored` maps ids to catalogue rows (from `Catalog.get`)."""
    for candidate in (drawer_id(wing, room, digest), legacy_drawer_id(wing, room, digest)):
        row = stored.get(candidate)
        if row is None or (row.wing, row.room) != (wing, room):
            continue
        if content is None or row.text == content:
            return candidate
    return None


def candidate_ids(wing: str, room: str, digest: str) -> list[str]:
    """Both ids a drawer may be stored under (look them up, then call `filed_under`)."""
    return [drawer_id(wing, room, digest), legacy_drawer_id(wing, room, digest)]


# -- short ids: a unique prefix stands for the whole id ------------------------------------------
MIN_PREFIX = 6  # characters: shorter prefixes match too much to be worth the ambiguity
LISTED_MATCHES = 10  # matches named in the error for an ambiguous prefix
_HEX = frozenset("0123456789abcdef")


def expand_prefix(conn: Any, text: str) -> str:
    """The drawer id `text` stands for: itself when a drawer has that id, else the one drawer
    whose id starts with it (or whose trailing hex digest does, so `50c23b45` is enough). Raises
    InvalidInputError for a prefix under MIN_PREFIX characters or one that matches several
    drawers (naming them), NotFoundError when nothing matches. `conn` is the catalogue's
    SQLite connection."""
    if conn.execute("SELECT 1 FROM drawers WHERE id = ?", (text,)).fetchone():
        return text
    if len(text) < MIN_PREFIX:
        raise InvalidInputError(
            f"{text!r} is too short to stand for a drawer id: give at least {MIN_PREFIX} "
            "characters of it.",
            hint="Copy the id from search or `mempalace drawers`; any unique start of it "
            "(6 characters or more) will do.",
        )
    where, params = _prefix_where(text)
    matches = [
        r[0]
        for r in conn.execute(
            f"SELECT id FROM drawers WHERE {where} ORDER BY id LIMIT ?",
            (*params, LISTED_MATCHES),
        )
    ]
    if not matches:
        raise NotFoundError(
            f"No drawer with id {text!r}, nor one starting with it.",
            hint="Drawer ids come from search results or `mempalace drawers`.",
        )
    if len(matches) > 1:
        count = conn.execute(f"SELECT COUNT(*) FROM drawers WHERE {where}", params).fetchone()[0]
        more = f" (and {count - len(matches)} more)" if count > len(matches) else ""
        raise InvalidInputError(
            f"{text!r} is the start of {count} drawer ids: {', '.join(matches)}{more}.",
            hint="Give more of the id, enough to match only one.",
        )
    return matches[0]


def _prefix_where(text: str) -> tuple[str, tuple[Any, ...]]:
    """SQL for "the id starts with `text`, or its digest (its last DIGEST_CHARS characters)
    does", the latter only for hex text."""
    where, params = "(id >= ? AND id < ?)", (text, text + "\U0010ffff")
    if set(text) <= _HEX and len(text) <= DIGEST_CHARS:
        where += " OR (substr(id, -?) >= ? AND substr(id, -?) < ?)"
        params += (DIGEST_CHARS, text, DIGEST_CHARS, text + "g")
    return where, params
