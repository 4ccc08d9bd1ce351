"""Walk a folder for mineable files: honour .gitignore (nested ones too), skip what is never
worth mining, never follow a symlink out of the folder, and say why anything was skipped."""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import pathspec

from mempalace_cli.miners.paths import is_storable, storable
from mempalace_cli.miners.secrets import credential_folder_reason

# Folders that hold tools' state, dependencies or build output, never notes.
SKIP_DIRS = frozenset(
    """.git .hg .svn .bzr node_modules __pycache__ .venv venv env .env .tox .nox .mypy_cache
    .pytest_cache .ruff_cache .cache .idea .vscode .gradle .terraform build dist target out
    .next .nuxt .parcel-cache coverage htmlcov site-packages .eggs .ipynb_checkpoints
    .mempalace .DS_Store""".split()
)
SKIP_DIR_SUFFIXES = (".egg-info", ".dist-info")

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
# Folders opened ahead of their turn during a walk (each relative to its parent): bounded, so
# a folder with thousands of sub-folders never runs out of file descriptors.
MAX_OPEN_AHEAD = 64
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class Candidate:
    path: Path  # absolute, inside the root (the name on disk, undecodable bytes and all)
    rel: str  # posix path relative to the root, as shown (see miners.paths.storable)

    @property
    def source(self) -> str:
        """The path as stored in the palace (`source_file`): valid UTF-8 text."""
        return storable(str(self.path))


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


_Chain = tuple[tuple[str, pathspec.GitIgnoreSpec], ...]


class IgnoreRules:
    """The .gitignore files from the root down to one folder, plus the project's excludes.

    Each folder's chain of .gitignore specs is built once from its parent's, and paths are cut
    relative to each .gitignore's folder by string slicing: asking about a path costs its
    length times the number of .gitignore files above it, never its depth squared.
    """

    def __init__(self, root: Path, exclude: Sequence[str] = ()) -> None:
        self.root = root
        self._root_str = str(root)
        self.exclude = pathspec.GitIgnoreSpec.from_lines(list(exclude)) if exclude else None
        self._specs: dict[Path, pathspec.GitIgnoreSpec | None] = {}
        self._chains: dict[Path, _Chain] = {}
        self._dirs: dict[Path, bool] = {}

    def _spec_for(self, folder: Path) -> pathspec.GitIgnoreSpec | None:
        if folder not in self._specs:
            gi = folder / ".gitignore"
            spec = None
            try:
                if gi.is_file():
                    lines = gi.read_text(encoding="utf-8", errors="replace").splitlines()
                    spec = pathspec.GitIgnoreSpec.from_lines(lines)
            except (OSError, ValueError):  # unreadable, or a pattern pathspec rejects
                spec = None
            self._specs[folder] = spec
        return self._specs[folder]

    def preload(self, folder: Path, spec: pathspec.GitIgnoreSpec | None) -> None:
        """The walk read `folder`'s .gitignore itself (or saw there is none): no stat needed."""
        self._specs.setdefault(folder, spec)

    def _inside(self, folder: Path) -> bool:
        text = str(folder)
        return text == self._root_str or text.startswith(self._root_str.rstrip(os.sep) + os.sep)

    def _chain(self, folder: Path) -> _Chain:
        """(folder, spec) for every .gitignore from the root down to `folder`."""
        todo: list[Path] = []
        here = folder
        while here not in self._chains:
            todo.append(here)
            if here == self.root or not self._inside(here.parent) or here.parent == here:
                break
            here = here.parent
        for f in reversed(todo):
            above = self._chains.get(f.parent, ()) if f != self.root else ()
            spec = self._spec_for(f)
            self._chains[f] = above + ((str(f), spec),) if spec is not None else above
        return self._chains[folder]

    def ignored(self, path: Path, is_dir: bool) -> bool:
        text = str(path)
        if not self._inside(path) or text == self._root_str:
            return False
        suffix = "/" if is_dir else ""
        rel = text[len(self._root_str.rstrip(os.sep)) + 1 :]
        if self.exclude is not None and self.exclude.match_file(rel + suffix):
            return True
        # Each .gitignore applies to paths relative to its own folder.
        for base, spec in self._chain(path.parent):
            if spec.match_file(text[len(base.rstrip(os.sep)) + 1 :] + suffix):
                return True
        return False

    def folder_ignored(self, folder: Path) -> bool:
        """True when `folder` or any folder between it and the root is ignored (cached)."""
        todo: list[Path] = []
        here = folder
        while here not in self._dirs:
            if here == self.root or not self._inside(here):
                self._dirs[here] = False
                break
            todo.append(here)
            here = here.parent
        for f in reversed(todo):
            self._dirs[f] = self._dirs[f.parent] or self.ignored(f, is_dir=True)
        return self._dirs[folder]


def symlink_problem(link: Path, root: Path) -> str | None:
    """Why a symlink found under `root` can't be mined, or None when it leads to a file
    inside `root`. A loop (a -> b -> a) or a dangling link is a reason, never an exception."""
    try:
        target = Path(os.path.realpath(link, strict=True))
    except (OSError, RuntimeError) as exc:
        if isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == errno.ELOOP:
            return "symlink loop (the link leads back to itself); fix or remove the link"
        return f"broken symlink ({getattr(exc, 'strerror', None) or exc}); fix or remove it"
    if root not in target.parents:
        return "symlink pointing outside the mined folder"
    if not target.is_file():
        return "symlink to something that is not a file"
    return None


def _entry_is_dir(entry: os.DirEntry[str]) -> bool:
    """A real folder (not a symlink to one)."""
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _entry_is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file(follow_symlinks=False)
    except OSError:
        return False


def _links_to_dir(path: Path) -> bool:
    try:
        return os.path.isdir(path)
    except (OSError, ValueError):
        return False


def _open_dir(name: str | Path, dir_fd: int | None = None) -> int:
    return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


def _list_dir(here: Path, fd: int | None) -> tuple[list[os.DirEntry[str]], int]:
    """The folder's entries by name, and an open descriptor for it (the caller closes it)."""
    if fd is None:
        fd = _open_dir(here)
    try:
        with os.scandir(fd) as it:
            return sorted(it, key=lambda e: e.name), fd
    except OSError:
        os.close(fd)
        raise


def _read_gitignore(fd: int) -> pathspec.GitIgnoreSpec | None:
    try:
        gi = os.open(".gitignore", os.O_RDONLY | os.O_CLOEXEC, dir_fd=fd)
        with os.fdopen(gi, "rb") as fh:
            lines = fh.read().decode("utf-8", errors="replace").splitlines()
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except (OSError, ValueError):
        return None


def walk(
    root: Path,
    exclude: Sequence[str] = (),
    skip_paths: Sequence[Path] = (),
    keep_secrets: bool = False,
) -> Iterator[Candidate | Skipped]:
    """Yield every file under `root` as a Candidate, or as Skipped with the reason.

    Ignored folders and files (gitignore, excludes, tool folders, temp files) are silently
    pruned: they were never the user's content. Files we looked at and refused are reported,
    and so are folders of credentials (miners/secrets.py), unless `keep_secrets`. The walk
    keeps its own stack (no recursion: any depth works) and visits each folder once:
    symlinked folders are never entered, so a symlink loop can't trap it. Each folder is
    opened relative to its parent's descriptor, so the kernel never re-resolves a long path:
    a 1,500-deep chain costs 1,500 opens, not 1,500 x 1,500 path lookups.
    """
    root = root.resolve()
    rules = IgnoreRules(root, exclude)
    skip_resolved = {Path(os.path.realpath(p)) for p in skip_paths}
    root_prefix = len(str(root).rstrip(os.sep)) + 1
    stack: list[tuple[Path, int | None]] = [(root, None)]
    held = 0  # descriptors opened ahead for folders still on the stack
    try:
        while stack:
            here, fd = stack.pop()
            held -= fd is not None
            try:
                entries, fd = _list_dir(here, fd)
            except OSError as exc:
                if here == root:
                    raise
                rel = storable(str(here)[root_prefix:])
                yield Skipped(
                    rel + "/",
                    f"folder unreadable ({exc.strerror or exc}); its files were not mined",
                )
                continue
            try:
                names = {e.name for e in entries}
                # A keyring, a password store or browser profiles: reported once, not entered.
                why = None
                if here != root and not keep_secrets:
                    why = credential_folder_reason(here, names)
                if why:
                    yield Skipped(storable(str(here)[root_prefix:]) + "/", why)
                    continue
                rules.preload(here, _read_gitignore(fd) if ".gitignore" in names else None)
                subdirs: list[tuple[Path, int | None]] = []
                for entry in entries:
                    name = entry.name
                    full = here / name
                    if _entry_is_dir(entry):
                        if is_skipped_dir(name) or full in skip_resolved:
                            continue
                        if not rules.ignored(full, is_dir=True):
                            child: int | None = None
                            if held < MAX_OPEN_AHEAD:
                                with suppress(OSError):  # else: opened by path when popped
                                    child = _open_dir(name, fd)
                                    held += 1
                            subdirs.append((full, child))
                        continue
                    if entry.is_symlink() and _links_to_dir(full):
                        continue  # a symlinked folder: never entered (see the docstring)
                    if is_temp_file(name) or name == "mempalace.toml":
                        continue
                    if rules.ignored(full, is_dir=False):
                        continue
                    rel = storable(str(full)[root_prefix:])
                    if not is_storable(name) and storable(name) in names:
                        yield Skipped(
                            rel,
                            f"its name is not valid UTF-8 and its readable form "
                            f"{storable(name)!r} is the name of another file here; "
                            "rename one of them",
                        )
                        continue
                    if entry.is_symlink():
                        problem = symlink_problem(full, root)
                        if problem:
                            yield Skipped(rel, problem)
                            continue
                    elif not _entry_is_file(entry):  # a FIFO would wait for a writer forever
                        yield Skipped(rel, "not a regular file (a pipe, socket or device)")
                        continue
                    yield Candidate(full, rel)
            finally:
                os.close(fd)
            stack.extend(reversed(subdirs))
    finally:  # the caller may stop early (--limit): close what was opened ahead
        for _, fd in stack:
            if fd is not None:
                os.close(fd)
