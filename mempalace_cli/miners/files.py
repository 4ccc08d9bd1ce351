"""Walk a folder for mineable files: honour .gitignore (nested ones too), skip what is never
worth mining, never follow a symlink out of the folder, and say why anything was skipped."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pathspec

# Folders that hold tools' state, dependencies or build output, never notes.
SKIP_DIRS = frozenset(
    """.git .hg .svn .bzr node_modules __pycache__ .venv venv env .env .tox .nox .mypy_cache
    .pytest_cache .ruff_cache .cache .idea .vscode .gradle .terraform build dist target out
    .next .nuxt .parcel-cache coverage htmlcov site-packages .eggs .ipynb_checkpoints
    .mempalace .DS_Store""".split()
)
SKIP_DIR_SUFFIXES = (".egg-info", ".dist-info")

TEXT_EXTENSIONS = frozenset(
    """.md .markdown .mdx .txt .text .rst .org .adoc .asciidoc .tex .rtf .csv .tsv .log
    .html .htm .xml .svg .json .jsonl .ndjson .yaml .yml .toml .ini .cfg .conf .env.example
    .properties .py .pyi .ipynb .js .jsx .mjs .cjs .ts .tsx .vue .svelte .css .scss .sass .less
    .go .rs .java .kt .kts .scala .groovy .c .h .cc .cpp .cxx .hpp .hh .m .mm .swift .cs .fs
    .vb .rb .php .pl .pm .lua .r .jl .dart .ex .exs .erl .hrl .hs .ml .mli .clj .cljs .elm .nim
    .zig .sh .bash .zsh .fish .ps1 .bat .cmd .sql .graphql .gql .proto .thrift .tf .hcl .nix
    .dockerfile .cmake .mk .gradle .vim .el .lisp .scm .rkt .sol .v .sv .vhd .asm .s
    .diff .patch .srt .vtt .eml .mbox .bib""".split()
)
TEXT_FILENAMES = frozenset(
    """readme license licence copying authors contributors changelog changes news notes todo
    makefile dockerfile containerfile justfile procfile gemfile rakefile vagrantfile
    .gitignore .dockerignore .editorconfig""".split()
)
BINARY_EXTENSIONS = frozenset(
    """.png .jpg .jpeg .gif .bmp .ico .webp .tif .tiff .psd .heic .avif .mp3 .wav .flac .ogg
    .m4a .aac .mp4 .mov .avi .mkv .webm .zip .gz .tgz .bz2 .xz .7z .rar .tar .zst .jar .war
    .whl .egg .exe .dll .so .dylib .a .o .obj .class .pyc .pyo .bin .dat .db .sqlite .sqlite3
    .pdf .doc .docx .xls .xlsx .ppt .pptx .odt .ods .odp .epub .woff .woff2 .ttf .otf .eot
    .onnx .pt .pth .safetensors .npy .npz .pkl .pickle .parquet .arrow .feather .h5 .hdf5
    .iso .dmg .img .lock""".split()
)
# Editor swap, backup and temp files: never content, and they churn during edits.
TEMP_SUFFIXES = (".swp", ".swo", ".swx", "~", ".tmp", ".temp", ".part", ".crdownload", ".bak")
TEMP_PREFIXES = (".#", "#", ".~lock.")

SNIFF_BYTES = 8192


@dataclass(frozen=True)
class Candidate:
    path: Path  # absolute, inside the root
    rel: str  # posix path relative to the root


@dataclass(frozen=True)
class Skipped:
    rel: str
    reason: str


def is_temp_file(name: str) -> bool:
    return name.endswith(TEMP_SUFFIXES) or name.startswith(TEMP_PREFIXES)


def is_skipped_dir(name: str) -> bool:
    return name in SKIP_DIRS or name.endswith(SKIP_DIR_SUFFIXES)


def file_type_verdict(path: Path) -> str | None:
    """None if the name says text (or gives no hint); a reason if it says binary."""
    suffix = path.suffix.lower()
    if suffix in BINARY_EXTENSIONS:
        return f"binary file type ({suffix})"
    return None


def looks_textual(head: bytes) -> bool:
    return b"\x00" not in head


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class IgnoreRules:
    """The .gitignore files from the root down to one folder, plus the project's excludes."""

    def __init__(self, root: Path, exclude: Sequence[str] = ()) -> None:
        self.root = root
        self.exclude = pathspec.GitIgnoreSpec.from_lines(list(exclude)) if exclude else None
        self._specs: dict[Path, pathspec.GitIgnoreSpec | None] = {}

    def _spec_for(self, folder: Path) -> pathspec.GitIgnoreSpec | None:
        if folder not in self._specs:
            gi = folder / ".gitignore"
            spec = None
            if gi.is_file():
                try:
                    lines = gi.read_text(encoding="utf-8", errors="replace").splitlines()
                    spec = pathspec.GitIgnoreSpec.from_lines(lines)
                except OSError:
                    spec = None
            self._specs[folder] = spec
        return self._specs[folder]

    def ignored(self, path: Path, is_dir: bool) -> bool:
        rel = path.relative_to(self.root).as_posix()
        suffix = "/" if is_dir else ""
        if self.exclude is not None and self.exclude.match_file(rel + suffix):
            return True
        # Each .gitignore applies to paths relative to its own folder.
        folder = path.parent
        chain = []
        while True:
            chain.append(folder)
            if folder == self.root or self.root not in folder.parents:
                break
            folder = folder.parent
        for base in reversed(chain):
            spec = self._spec_for(base)
            if spec is not None and spec.match_file(path.relative_to(base).as_posix() + suffix):
                return True
        return False


def walk(
    root: Path, exclude: Sequence[str] = (), skip_paths: Sequence[Path] = ()
) -> Iterator[Candidate | Skipped]:
    """Yield every file under `root` as a Candidate, or as Skipped with the reason.

    Ignored folders and files (gitignore, excludes, tool folders, temp files) are silently
    pruned: they were never the user's content. Files we looked at and refused are reported.
    """
    root = root.resolve()
    rules = IgnoreRules(root, exclude)
    skip_resolved = {p.resolve() for p in skip_paths}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        kept = []
        for d in sorted(dirnames):
            full = here / d
            if is_skipped_dir(d) or full in skip_resolved or full.is_symlink():
                continue
            if rules.ignored(full, is_dir=True):
                continue
            kept.append(d)
        dirnames[:] = kept
        for name in sorted(filenames):
            full = here / name
            if is_temp_file(name) or name == "mempalace.toml":
                continue
            if rules.ignored(full, is_dir=False):
                continue
            rel = full.relative_to(root).as_posix()
            if full.is_symlink():
                target = full.resolve()
                if root not in target.parents:
                    yield Skipped(rel, "symlink pointing outside the mined folder")
                    continue
                if not target.is_file():
                    yield Skipped(rel, "symlink to something that is not a file")
                    continue
            yield Candidate(full, rel)
