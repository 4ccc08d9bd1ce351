"""How a wing or room name is stored: one small module, so that reading names (search
filters, hints) never imports the miners."""

from __future__ import annotations

import re

GENERAL = "general"  # the room of text no other room claims


def normalize_name(name: str) -> str:
    """A wing or room name as stored: lower case, words joined by underscores."""
    slug = re.sub(r"[^\w]+", "_", name.strip().lower(), flags=re.UNICODE).strip("_")
    return slug or GENERAL
