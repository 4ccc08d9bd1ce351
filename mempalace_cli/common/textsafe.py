"""Text that every store and encoder accepts: valid Unicode with no lone surrogates.

Python strings can hold lone surrogates (a JSON export's "\\ud83d", an emoji cut in half; a
file name's undecodable bytes under surrogateescape). UTF-8 encoders (the tokenizer, SQLite,
Chroma, JSON on stdout) refuse them, so text is cleaned once, before it is hashed, embedded
or stored: a lone surrogate becomes U+FFFD (the replacement character), a split pair that is
still whole becomes the character it encodes.
"""

from __future__ import annotations

from typing import Any

REPLACEMENT = "\ufffd"


def is_clean(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def clean_text(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD; the same object when already clean."""
    if is_clean(text):
        return text
    # UTF-16 with surrogatepass re-joins pairs that are intact and flags the lone ones.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def clean_value(value: Any) -> Any:
    """A metadata value with its text cleaned; other values unchanged."""
    return clean_text(value) if isinstance(value, str) else value
