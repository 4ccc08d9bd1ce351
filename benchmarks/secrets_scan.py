"""What screening for secrets costs mining, and what it catches (mempalace_cli/miners/secrets.py).

    python benchmarks/secrets_scan.py [--package rich] [--mine]

Measured:
- import: a fresh process importing detect-secrets and building the detectors (what the
  first mined or filed text pays, once per process), median of 5;
- scan speed, seconds per MB: `redact` over examples/notes (typical notes, repeated to 2 MB)
  and over an installed package's source (code), and over both as mining reads them:
  `read_text_file` alone against `read_screened` (name rules, content rules, redaction);
- with --mine: `mempalace mine` of examples/notes into a fresh palace, with and without
  --keep-secrets (which skips screening), wall seconds (noisy on a shared machine);
- the table: every kind in tests/secret_samples.py, caught or missed by detect-secrets 1.5.0
  alone (`detect-secrets scan` on a .md file, default plugins and filters, high-entropy
  plugins included) and by mempalace (the library's regexes + ours).

Writes benchmarks/results/secrets_scan.json and secrets_scan.md.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mempalace_cli.miners import secrets  # noqa: E402
from tests.secret_samples import samples  # noqa: E402

NOTES = REPO / "examples" / "notes"
RESULTS = REPO / "benchmarks" / "results"
TEXT = {".md", ".txt", ".json", ".jsonl", ".py", ".rst", ".toml", ".yaml", ".yml"}


def corpus(root: Path) -> list[tuple[Path, str]]:
    files = []
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.suffix in TEXT:
            try:
                files.append((p, p.read_text(encoding="utf-8")))
            except (UnicodeDecodeError, OSError):
                continue
    return files


def import_seconds() -> float:
    probe = (
        "import time; t = time.perf_counter(); "
        "from mempalace_cli.miners import secrets; secrets.preload(); "
        "print(time.perf_counter() - t)"
    )
    runs = []
    for _ in range(5):
        out = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO
        )
        runs.append(float(out.stdout.strip()))
    return statistics.median(runs)


def redact_speed(files: list[tuple[Path, str]], target_mb: float = 2.0) -> dict[str, Any]:
    size = sum(len(t.encode()) for _, t in files)
    reps = max(1, round(target_mb * 1e6 / size))
    secrets.preload()
    found = 0
    t0 = time.perf_counter()
    for _ in range(reps):
        for path, text in files:
            found += secrets.redact(text, path.name).count
    seconds = time.perf_counter() - t0
    mb = size * reps / 1e6
    return {
        "files": len(files),
        "mb": round(mb, 2),
        "seconds": round(seconds, 3),
        "s_per_mb": round(seconds / mb, 3),
        "findings_per_pass": found // reps,
    }


class _Report:
    keep_secrets = False

    def __init__(self) -> None:
        self.secrets: dict[str, Any] = {}


def read_overhead(files: list[tuple[Path, str]]) -> dict[str, Any]:
    """Mining's read step over the same files: plain, then screened (best of 3 each)."""
    from mempalace_cli.miners.project import read_text_file

    secrets.preload()
    limit = 5_000_000

    def plain() -> None:
        for path, _ in files:
            read_text_file(path, limit)

    def screened() -> None:
        report = _Report()
        for path, _ in files:
            secrets.read_screened(path, path.name, limit, report)

    def best(fn: Any) -> float:
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - t0)
        return min(runs)

    size = sum(len(t.encode()) for _, t in files)
    a, b = best(plain), best(screened)
    return {
        "files": len(files),
        "mb": round(size / 1e6, 3),
        "read_seconds": round(a, 4),
        "read_screened_seconds": round(b, 4),
        "screening_s_per_mb": round((b - a) / (size / 1e6), 3),
    }


def mine_seconds(folder: Path, keep: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "MEMPALACE_HOME": str(Path(tmp) / "home")}
        cmd = [sys.executable, "-m", "mempalace_cli", "--palace", str(Path(tmp) / "palace")]
        cmd += ["mine", str(folder), "--json", *(["--keep-secrets"] if keep else [])]
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, capture_output=True, stdin=subprocess.DEVNULL)
        return time.perf_counter() - t0


def library_alone(line: str, value: str) -> str:
    """What `detect-secrets scan` (defaults) finds for a note holding `line`."""
    from detect_secrets.core.scan import scan_file
    from detect_secrets.settings import default_settings

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "note.md"
        path.write_text(line + "\n", encoding="utf-8")
        with default_settings():
            found = [s.secret_value or "" for s in scan_file(str(path))]
    if any(value in v for v in found):
        return "caught"
    if any(v and v in value for v in found):
        return "partly"
    return "missed"


def table() -> list[dict[str, str]]:
    rows = []
    for s in samples():
        ours = secrets.redact(s.line)
        if s.value not in ours.text:
            verdict = "caught"
        elif ours.findings:
            verdict = "partly"
        else:
            verdict = "missed"
        rows.append(
            {
                "kind": s.kind,
                "detect_secrets": library_alone(s.line, s.value),
                "mempalace": verdict,
                "how": s.how,
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--package", default="rich", help="installed package used as code corpus")
    ap.add_argument("--mine", action="store_true", help="also time `mempalace mine` both ways")
    args = ap.parse_args()
    spec = importlib.util.find_spec(args.package)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"package {args.package} is not installed")
    code_dir = Path(next(iter(spec.submodule_search_locations)))
    notes, code = corpus(NOTES), corpus(code_dir)
    result: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}",
        "detect_secrets": importlib.metadata.version("detect-secrets"),
        "import_seconds": round(import_seconds(), 3),
        "redact_notes": redact_speed(notes),
        "redact_code": redact_speed(code),
        "read_step": read_overhead(notes + code),
        "table": table(),
    }
    if args.mine:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "notes"
            shutil.copytree(NOTES, folder, ignore=shutil.ignore_patterns("mempalace.toml"))
            result["mine_notes"] = {
                "screened_seconds": round(mine_seconds(folder, keep=False), 2),
                "keep_secrets_seconds": round(mine_seconds(folder, keep=True), 2),
            }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "secrets_scan.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "secrets_scan.md").write_text(render(result, args.package))
    print(render(result, args.package))


def render(r: dict[str, Any], package: str) -> str:
    n, c, rs = r["redact_notes"], r["redact_code"], r["read_step"]
    lines = [
        f"# Secret screening cost and coverage ({time.strftime('%Y-%m-%d')}, {r['machine']})",
        "",
        f"detect-secrets {r['detect_secrets']}.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| import detect-secrets + build detectors (once per process) | {r['import_seconds']} s |",
        f"| redact, examples/notes ({n['files']} files, {n['mb']} MB scanned) | "
        f"{n['s_per_mb']} s/MB |",
        f"| redact, `{package}` source ({c['files']} files, {c['mb']} MB scanned) | "
        f"{c['s_per_mb']} s/MB |",
        f"| mining's read step, both corpora ({rs['mb']} MB): plain / screened | "
        f"{rs['read_seconds']} s / {rs['read_screened_seconds']} s "
        f"({rs['screening_s_per_mb']} s/MB) |",
    ]
    if "mine_notes" in r:
        m = r["mine_notes"]
        lines.append(
            f"| `mempalace mine examples/notes`, screened / --keep-secrets | "
            f"{m['screened_seconds']} s / {m['keep_secrets_seconds']} s |"
        )
    lines += [
        "",
        "| secret kind | detect-secrets alone | mempalace | how |",
        "|---|---|---|---|",
    ]
    for row in r["table"]:
        lines.append(
            f"| {row['kind']} | {row['detect_secrets']} | {row['mempalace']} | {row['how']} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
