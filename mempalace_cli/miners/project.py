"""Project mode: the `mempalace.toml` written by `init`, and turning one file into chunks."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mempalace_cli.common.config import PROJECT_FILE, read_toml
from mempalace_cli.common.errors import ConfigError
from mempalace_cli.miners.chunking import Chunk, chunk_text
from mempalace_cli.miners.files import SNIFF_BYTES, file_type_verdict, looks_textual
from mempalace_cli.miners.rooms import Room, normalize_name, route_file

DEFAULT_MAX_FILE_MB = 5.0
DEFAULT_EXCLUDE = ["*.min.js", "*.map", "package-lock.json", "yarn.lock", "poetry.lock"]


@dataclass
class ProjectConfig:
    wing: str
    rooms: list[Room] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    max_file_mb: float = DEFAULT_MAX_FILE_MB

    def to_toml(self) -> dict[str, Any]:
        return {
            "wing": self.wing,
            "max_file_mb": self.max_file_mb,
            "exclude": self.exclude,
            "rooms": [
                {"name": r.name, "keywords": r.keywords}
                | ({"description": r.description} if r.description else {})
                for r in self.rooms
            ],
        }


def load_project_config(root: Path) -> ProjectConfig | None:
    path = root / PROJECT_FILE
    if not path.is_file():
        return None
    data = read_toml(path)
    try:
        rooms = [
            Room(
                normalize_name(str(r["name"])),
                [str(k) for k in r.get("keywords", [])],
                str(r.get("description", "")),
            )
            for r in data.get("rooms", [])
        ]
        return ProjectConfig(
            wing=normalize_name(str(data.get("wing") or root.name)),
            rooms=rooms,
            exclude=[str(x) for x in data.get("exclude", [])],
            max_file_mb=float(data.get("max_file_mb", DEFAULT_MAX_FILE_MB)),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ConfigError(
            f"{path} has an unexpected shape ({exc}).",
            hint="Each [[rooms]] entry needs a name; keywords and exclude are lists of strings. "
            "Re-create it with: mempalace init <dir> --yes",
        ) from exc


@dataclass(frozen=True)
class FileText:
    """A file's text, and the hash, size and mtime of the very bytes it was decoded from."""

    text: str
    encoding: str
    digest: str = ""
    size: int = 0
    mtime: float = 0.0


def read_text_file(path: Path, max_bytes: int) -> FileText | str:
    """The file's text, or the reason it can't be mined.

    The file is opened once and read once: the verdict (size, binary), the content hash and
    the text all come from the same bytes, so a save between two reads can't store the new
    hash with the old text. Size and mtime are taken from the open file before reading: if it
    changes while we read, its mtime differs next time and it is read again.
    """
    verdict = file_type_verdict(path)
    if verdict:
        return verdict
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block the open below
            return "not a regular file (a pipe, socket or device)"
        with path.open("rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                return "not a regular file"
            if st.st_size == 0:
                return "empty file"
            if st.st_size > max_bytes:
                return _too_large(st.st_size, max_bytes)
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    if len(data) > max_bytes:  # it grew while we read
        return _too_large(len(data), max_bytes)
    if not data:
        return "empty file"
    text = decode_text(data)
    if not isinstance(text, FileText):
        return text
    return FileText(
        text.text, text.encoding, hashlib.sha256(data).hexdigest(), st.st_size, st.st_mtime
    )


def _too_large(size: int, max_bytes: int) -> str:
    return (
        f"larger than the {max_bytes / 1e6:g} MB limit ({size / 1e6:.1f} MB); "
        "raise max_file_mb in mempalace.toml to mine it"
    )


def decode_text(data: bytes) -> FileText | str:
    """Bytes as text (UTF-8, or cp1252 when that reads as printable text), or why not."""
    if not looks_textual(data[:SNIFF_BYTES]):
        return "binary content (NUL bytes)"
    try:
        text, encoding = data.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError as exc:
        # Old notes are often cp1252 or latin-1: accept them when they decode to printable text.
        try:
            text, encoding = data.decode("cp1252"), "cp1252"
        except UnicodeDecodeError:
            return f"not UTF-8 text (invalid byte at offset {exc.start})"
        if sum(1 for ch in text if ord(ch) < 32 and ch not in "\t\n\r\f") > len(text) // 100:
            return f"not UTF-8 text (invalid byte at offset {exc.start})"
    if not text.strip():
        return "only whitespace"
    return FileText(text, encoding)


def plan_file(rel: str, text: str, rooms: list[Room]) -> tuple[str, list[Chunk]]:
    return route_file(rel, text[:4096], rooms), chunk_text(text)
