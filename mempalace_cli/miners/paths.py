"""File names as the palace stores and shows them.

On Linux a file name is bytes; Python decodes the ones that are not valid UTF-8 with
surrogateescape (byte 0xff becomes U+DCFF). Such a string can't be encoded to UTF-8, so
SQLite, Chroma and JSON on stdout refuse it. Stored and reported, each undecodable byte is
written as the four characters `\\xHH` (as `ls -b` and Python's repr show it); `on_disk` turns
a stored name back into the path to open. A valid UTF-8 name is stored unchanged.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from mempalace_cli.common.textsafe import REPLACEMENT, is_clean

_ESCAPED_BYTE = re.compile(r"\\x([89a-f][0-9a-f])")


def storable(name: str) -> str:
    """`name` (a path or part of one) as valid UTF-8 text: surrogate-escaped bytes as \\xHH,
    any other lone surrogate as U+FFFD."""
    if is_clean(name):
        return name
    out = []
    for ch in name:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte, from surrogateescape
            out.append(f"\\x{code - 0xDC00:02x}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append(REPLACEMENT)
        else:
            out.append(ch)
    return "".join(out)


def source_key(path: Path | str) -> str:
    """A file's or folder's path as the palace stores it (`source_file`, `source_root`)."""
    return storable(str(path))


def is_storable(name: str) -> bool:
    return is_clean(name)


def on_disk(stored: str) -> Path:
    """The path a stored source name stands for: the name itself when it exists (or has no
    escapes), otherwise with each \\xHH turned back into the byte it stands for."""
    if "\\x" not in stored or os.path.lexists(stored):
        return Path(stored)
    return Path(_ESCAPED_BYTE.sub(lambda m: chr(0xDC00 + int(m[1], 16)), stored))
