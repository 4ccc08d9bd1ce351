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
