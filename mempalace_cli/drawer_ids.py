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
