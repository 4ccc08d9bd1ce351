"""Search, status and re-mine at 10k / 100k / 1M drawers: does the cost grow with the palace?

    python benchmarks/scale.py                       # 10k, 100k and 1M drawers
    python benchmarks/scale.py --sizes 10000,100000  # a subset

For each size the script builds a palace in a temporary folder (or --work DIR) and measures:
- build: drawers/s, and the seconds spent writing Chroma against writing the catalogue;
- first search after the build (it builds the on-disk vector index, vector_index.py);
- fresh-process CLI search (`mempalace search ... --json`, process start to exit): p50/p95 and
  peak RSS over --queries queries;
- warm in-process search (one long-lived process that calls `Palace.stay_warm()` as the MCP
  server does, `Palace.search`): a first pass over the queries, reported apart (it reads the
  vector codes and common words' postings it then keeps), then three passes: p50/p95;
- `mempalace status --json` in a fresh process;
- `mempalace mine` of the palace's mined corpus again with nothing changed (fresh process);
- palace size on disk, split into Chroma / catalogue / vector index, and bytes per drawer;
- recall@10 of the index path (int8 candidates, exact rescoring) against exact cosine ranking
  over every vector, for --recall-queries held-out queries.

The text is real conversation: user and assistant turns of the LongMemEval-S dev haystack
(../shared/bench, read at run time, never stored here) recombined into 400-800 character
exchanges; without that file a synthetic generator takes its place. THE SHORTCUT: embedding
one million chunks with a real model on two cores takes hours, so the drawers' vectors come
from a cheap deterministic stand-in embedder (a hashed bag-of-words random projection, unit
length, as many floats as the default model's vectors: 512 for use-multilingual-v3, which the
palace records as a new user's palace does), passed in place of the model on the service's
own write paths (`Palace.add_drawers` for 90% of the drawers, `Palace.mine` of generated
files for the other 10%, which is also what the re-mine reads). Searches from the CLI embed
the query with the palace's real model, as a user's search does, with the model cache warm
(this run's own cache folder, emptied before each size's first search, which is reported
apart); the recall measurement uses stand-in query vectors so that queries and drawers share
a space. Writes benchmarks/results/scale.json and scale.md.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from perf import dist  # noqa: E402

from mempalace_cli.embedders import DEFAULT_MODEL, MODELS  # noqa: E402

BENCH = REPO.parent / "shared" / "bench"  # ../shared/bench, beside the checkout
LME_FILE = "longmemeval_s_dev50.json.xz"
# The stand-in vectors have the size of the default model's (a new palace records that model,
# and the CLI embeds its queries with it), so the palace is what a user's new palace would be.
MODEL = DEFAULT_MODEL
DIM = MODELS[MODEL].dimension
QUERIES = [
    "gentle exercises to improve flexibility at home",
    "how do I fix a leaking kitchen faucet",
    "recommend a science fiction novel",
    "budget for a trip to Japan",
    "what should I feed a new puppy",
    "tips for a job interview",
    "best way to learn a new language",
    "how to make sourdough bread",
    "planning a birthday party for kids",
    "improve my sleep schedule",
    "cheap healthy dinner ideas",
    "which camera for travel photography",
]
MINED_SHARE = 0.10  # of the drawers filed by mining generated files (what re-mine reads)
PER_FILE = 40  # exchanges per generated transcript file


# -- text ---------------------------------------------------------------------------------------
class TurnPool:
    """User and assistant turns to recombine into exchanges."""

    def __init__(self, data_dir: Path) -> None:
        self.user: list[str] = []
        self.assistant: list[str] = []
        path = data_dir / LME_FILE
        if path.exists():
            with lzma.open(path, "rt", encoding="utf-8") as f:
                for item in json.load(f):
                    for session in item["haystack_sessions"]:
                        for turn in session:
                            text = " ".join(turn["content"].split())
                            if len(text) >= 40:
                                (self.user if turn["role"] == "user" else self.assistant).append(
                                    text
                                )
            self.user, self.assistant = sorted(set(self.user)), sorted(set(self.assistant))
            self.source = f"{LME_FILE} haystack turns ({len(self.user)} user, "
            self.source += f"{len(self.assistant)} assistant)"
        else:
            self.source = "synthetic (no LongMemEval file found)"
            print(f"warning: {path} not found; using synthetic text", file=sys.stderr)
            rng = random.Random(1)
            words = "plan garden travel budget recipe camera puppy novel sleep interview".split()
            words += "project deadline python server backup weekend music guitar coffee".split()
            for _ in range(5000):
                self.user.append(" ".join(rng.choice(words) for _ in range(30)))
                self.assistant.append(" ".join(rng.choice(words) for _ in range(120)))

    def exchanges(self, n: int, seed: int) -> list[str]:
        """n distinct exchanges of 400-800 characters: a user turn and a window of an
        assistant turn, paired at random."""
        rng = random.Random(seed)
        seen: set[tuple[int, int, int]] = set()
        out: list[str] = []
        while len(out) < n:
            u, a = rng.randrange(len(self.user)), rng.randrange(len(self.assistant))
            answer = self.assistant[a]
            start = rng.randrange(max(1, len(answer) - 300))
            key = (u, a, start)
            if key in seen:
                continue
            seen.add(key)
            length = rng.randint(400, 800)
            user = self.user[u][:300]
            out.append(f"User: {user}\nAssistant: {answer[start : start + length - len(user)]}")
        return out


# -- the stand-in embedder (the documented shortcut) --------------------------------------------
class StandInEmbedder:
    """Hashed bag-of-words random projection: deterministic, ~100x faster than MiniLM, and
    drawers that share words get similar vectors (so nearest-neighbour structure is real)."""

    BUCKETS = 1 << 15
    name = "stand-in"

    def __init__(self, dimension: int = DIM) -> None:
        import numpy as np

        self.np, self.dimension = np, dimension
        self.table = np.random.default_rng(7).standard_normal((self.BUCKETS, dimension), np.float32)
        self._word = re.compile(r"\w+")
        self._bucket: dict[str, int] = {}

    def bucket(self, word: str) -> int:
        b = self._bucket.get(word)
        if b is None:
            b = self._bucket[word] = zlib.crc32(word.encode("utf-8")) % self.BUCKETS
        return b

    def ensure_loaded(self) -> None:
        pass

    def embed(self, texts: list[str], batch_size: int = 0) -> Any:
        np = self.np
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            idx = [self.bucket(w) for w in self._word.findall(text.lower())]
            if idx:
                out[i] = self.table[idx].sum(axis=0)
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    def embed_query(self, text: str) -> Any:
        return self.embed([text])[0]


def stand_in_palace(palace: Path, home: Path, timers: dict[str, float]) -> Any:
    """A Palace whose embedder is the stand-in, with the Chroma and catalogue writes timed."""
    from mempalace_cli.common.config import resolve_settings
    from mempalace_cli.service import Palace

    stand_in = StandInEmbedder()

    class StandInPalace(Palace):
        @property
        def embedder(self) -> Any:  # type: ignore[override]
            return stand_in

    p = StandInPalace(resolve_settings(str(palace), home=home))
    store_upsert, catalog_upsert = p.store.upsert, p.catalog.upsert_drawers

    def timed(name: str, fn: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                timers[name] = timers.get(name, 0.0) + time.perf_counter() - t0

        return call

    p.store.upsert = timed("chroma_write_s", store_upsert)  # type: ignore[method-assign]
    p.catalog.upsert_drawers = timed("catalog_write_s", catalog_upsert)  # type: ignore[method-assign]
    return p, stand_in


# -- building -----------------------------------------------------------------------------------
def write_corpus(corpus: Path, texts: list[str]) -> int:
    """Transcript files of PER_FILE exchanges each (what `mine --mode convos` reads)."""
    corpus.mkdir(parents=True, exist_ok=True)
    files = 0
    for start in range(0, len(texts), PER_FILE):
        lines = []
        for text in texts[start : start + PER_FILE]:
            user, _, answer = text.partition("\nAssistant: ")
            lines.append(f"> {user.removeprefix('User: ')}\n{answer}\n")
        (corpus / f"chat_{start // PER_FILE:06d}.txt").write_text("\n".join(lines), "utf-8")
        files += 1
    return files


def build(size: int, pool: TurnPool, work: Path, batch: int) -> dict[str, Any]:
    palace, home, corpus = work / "palace", work / "home", work / "corpus"
    home.mkdir(parents=True, exist_ok=True)
    timers: dict[str, float] = {}
    p, stand_in = stand_in_palace(palace, home, timers)
    mined = int(size * MINED_SHARE)
    t0 = time.perf_counter()
    files = write_corpus(corpus, pool.exchanges(mined, seed=size + 1))
    report = p.mine(str(corpus), wing="chats", mode="convos")
    mined_drawers = (report.get("drawers") or {}).get("added")
    t_mine = time.perf_counter() - t0
    rng = random.Random(size)
    rooms = [f"topic_{i:02d}" for i in range(24)]
    wings = ["notes", "work", "home", "research"]
    added = 0
    t1 = time.perf_counter()
    remaining = size - p.catalog.count()
    seed = size * 7
    while remaining > 0:
        n = min(batch, remaining)
        seed += 1
        texts = pool.exchanges(n, seed=seed)
        drawers = [
            {"wing": rng.choice(wings), "room": rng.choice(rooms), "content": t} for t in texts
        ]
        got = p.add_drawers(drawers, added_by="scale-bench")
        added += got["added"]
        remaining = size - p.catalog.count()
        done = size - remaining
        rate = done / max(time.perf_counter() - t0, 1e-9)
        print(
            f"  {done:,}/{size:,} drawers, {rate:,.0f}/s, ETA {remaining / max(rate, 1e-9):,.0f} s",
            file=sys.stderr,
            flush=True,
        )
    t_add = time.perf_counter() - t1
    total = p.catalog.count()
    # The first search: re-stamps the catalogue after Chroma was opened, builds the index.
    t2 = time.perf_counter()
    p.search(QUERIES[0], mode="vector")
    first_search = time.perf_counter() - t2
    p.close()
    build_s = t_mine + t_add
    return {
        "drawers": total,
        "mined_files": files,
        "mined_drawers": mined_drawers,
        "build_s": round(build_s, 1),
        "build_drawers_per_s": round(total / build_s, 1),
        "chroma_write_s": round(timers.get("chroma_write_s", 0.0), 1),
        "catalog_write_s": round(timers.get("catalog_write_s", 0.0), 1),
        "first_search_s": round(first_search, 2),
    }


def recall_at_10(p: Any, queries: Any) -> dict[str, Any]:
    """The index path's top 10 against exact cosine over every catalogue vector."""
    import numpy as np

    index = p.searching.vector_index()
    exact_scores = np.full((len(queries), 0), 0, dtype=np.float32)
    ids: list[str] = []
    q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    best: list[list[tuple[float, str]]] = [[] for _ in range(len(q))]
    cur = p.catalog.conn.execute("SELECT id, embedding FROM drawers ORDER BY rowid")
    while rows := cur.fetchmany(20000):
        mat = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        mat = mat / np.linalg.norm(mat, axis=1, keepdims=True)
        sims = q @ mat.T
        for i in range(len(q)):
            top = np.argpartition(-sims[i], 10)[:10]
            best[i] = sorted(best[i] + [(-float(sims[i, j]), rows[j][0]) for j in top])[:10]
    del exact_scores, ids
    t0 = time.perf_counter()
    hits = 0
    for i in range(len(q)):
        got = {d for d, _ in index.nearest(q[i], 10)}
        hits += len(got & {d for _, d in best[i]})
    per_query = (time.perf_counter() - t0) / len(q)
    return {"recall": round(hits / (10 * len(q)), 4), "queries": len(q), "s_per_query": per_query}


# -- measuring ----------------------------------------------------------------------------------
# The measured child reports its own peak RSS: VmHWM of its own address space, read at exit.
# The rusage that wait4 returns is not that: Linux carries the high-water RSS of the address
# space a process replaces at exec into its ru_maxrss, and subprocess starts children with
# vfork, so every child's ru_maxrss was at least this (large, palace-building) parent's peak.
HWM_WRAPPER = """
import atexit, os, runpy, sys
def _hwm():
    with open("/proc/self/status", encoding="ascii") as f:
        kib = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    with open(os.environ["SCALE_HWM_FILE"], "w", encoding="ascii") as out:
        out.write(str(kib))
atexit.register(_hwm)
kind, target, *rest = sys.argv[1:]
if kind == "-m":
    sys.argv = [target, *rest]
    runpy.run_module(target, run_name="__main__", alter_sys=True)
else:
    sys.argv = ["-c", *rest]
    exec(compile(target, "<string>", "exec"), {"__name__": "__main__"})
"""


def run_with_rss(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run a Python command (`python -m module ...` or `python -c code ...`): wall seconds,
    CPU seconds (user + system, the child's own rusage: what to compare on a machine other
    jobs are loading) and peak RSS in MiB (the child's own VmHWM, see HWM_WRAPPER)."""
    assert cmd[0] == sys.executable and cmd[1] in ("-m", "-c"), cmd
    fd, hwm_file = tempfile.mkstemp(prefix="scale-hwm-")
    os.close(fd)
    env = {**env, "SCALE_HWM_FILE": hwm_file}
    cmd = [sys.executable, "-c", HWM_WRAPPER, *cmd[1:]]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
    )
    chunks: dict[str, bytes] = {}
    threads = [
        threading.Thread(target=lambda n=n, s=s: chunks.__setitem__(n, s.read()))
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
    try:
        hwm_kib = int(Path(hwm_file).read_text(encoding="ascii") or 0)
    finally:
        os.unlink(hwm_file)
    if proc.returncode != 0 or not hwm_kib:
        err = chunks.get("err", b"").decode("utf-8", "replace")
        raise RuntimeError(f"{' '.join(cmd[3:])} failed ({proc.returncode}):\n{err[-2000:]}")
    return {
        "seconds": round(seconds, 3),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
        "peak_rss_mib": round(hwm_kib / 1024, 1),
        "stdout": out,
    }


def timing(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        **dist([r["seconds"] for r in runs]),
        "cpu": dist([r["cpu_s"] for r in runs]),
        "peak_rss_mib": max(r["peak_rss_mib"] for r in runs),
    }


def cli(palace: Path, home: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "mempalace_cli", "--palace", str(palace), *args]


def cli_env(home: Path) -> dict[str, str]:
    """The CLI's environment: the palace's home, and a model cache of this run's own (next to
    the palaces), so that its state is known: empty before a size's first search, warm after."""
    cache = home.parent.parent / "model-cache"
    env = {**os.environ, "MEMPALACE_HOME": str(home), "MEMPALACE_CACHE_DIR": str(cache)}
    # A user's install has its modules' bytecode (pip compiles it; see compile_package); a
    # PYTHONDONTWRITEBYTECODE inherited from a CI or sandbox shell would make every measured
    # process compile this package's sources again.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def compile_package() -> None:
    """Write this package's bytecode, as `pip install` does for an installed package (an
    editable install, this checkout, never gets it while PYTHONDONTWRITEBYTECODE is set)."""
    import compileall

    compileall.compile_dir(str(REPO / "mempalace_cli"), quiet=1)


WARM_SCRIPT = """
import json, sys, time
from mempalace_cli.service import open_palace
p = open_palace(sys.argv[1])
queries = json.loads(sys.argv[2])
p.stay_warm()  # as the MCP server does: codes and common words' postings kept
p.searching.vector_index().keep_in_memory()
first = []
for q in queries:  # the first pass reads what is kept: timed, reported apart
    t0 = time.perf_counter()
    p.search(q)
    first.append(time.perf_counter() - t0)
wall, cpu = [], []
for _ in range(3):
    for q in queries:
        t0, c0 = time.perf_counter(), time.process_time()
        p.search(q)
        wall.append(time.perf_counter() - t0); cpu.append(time.process_time() - c0)
print(json.dumps({"first": first, "wall": wall, "cpu": cpu}))
"""


def measure(work: Path, n_queries: int, pool: TurnPool, size: int) -> dict[str, Any]:
    palace, home, corpus = work / "palace", work / "home", work / "corpus"
    env = cli_env(home)
    queries = (QUERIES * 10)[:n_queries]
    model = palace_model(palace)
    if model != MODEL:
        raise RuntimeError(f"the palace records {model!r}, not the default model {MODEL!r}")
    # A user's first search after installing: the model cache is empty (this run's own cache
    # folder, emptied here), so the model loads from its package and fills the cache. Every
    # later search (the ones measured below) is a user's second search: the cache is warm.
    shutil.rmtree(env["MEMPALACE_CACHE_DIR"], ignore_errors=True)
    cold_cache = run_with_rss(cli(palace, home, "search", QUERIES[1], "--json"), env)
    # The index built from scratch by a fresh search (after the catalogue was rebuilt, or the
    # first search after an upgrade); later writes only append to it.
    shutil.rmtree(palace / "vector_index", ignore_errors=True)
    first = run_with_rss(cli(palace, home, "search", QUERIES[0], "--json"), env)
    fresh = [run_with_rss(cli(palace, home, "search", q, "--json"), env) for q in queries]
    # The same searches ranked the way they were before the index: every catalogue vector read.
    old_env = {**env, "MEMPALACE_VECTOR_INDEX": "0"}
    old = [run_with_rss(cli(palace, home, "search", q, "--json"), old_env) for q in queries]
    warm = run_with_rss([sys.executable, "-c", WARM_SCRIPT, str(palace), json.dumps(QUERIES)], env)
    status = [run_with_rss(cli(palace, home, "status", "--json"), env) for _ in range(3)]
    remine = run_with_rss(
        cli(palace, home, "mine", str(corpus), "--wing", "chats", "--mode", "convos", "--json"),
        env,
    )
    p, stand_in = stand_in_palace(palace, home, {})
    recall = recall_at_10(p, stand_in.embed(pool.exchanges(200, seed=size * 13)))
    p.close()
    return {
        "model": model,
        "first_search_empty_model_cache": timing([cold_cache]),
        "index_build_search": timing([first]),
        "recall_at_10": recall,
        "fresh_search": timing(fresh),
        "fresh_search_without_index": timing(old),
        "warm_search": {
            **dist(json.loads(warm["stdout"])["wall"]),
            "cpu": dist(json.loads(warm["stdout"])["cpu"]),
            "first_pass": dist(json.loads(warm["stdout"])["first"]),
            "process_rss_mib": warm["peak_rss_mib"],
        },
        "status": timing(status),
        "remine_unchanged": timing([remine]),
        "disk": disk(palace),
    }


def palace_model(palace: Path) -> str | None:
    from mempalace_cli.service.models import MODEL_META
    from mempalace_cli.storage.catalog import Catalog

    catalog = Catalog(palace)
    try:
        return catalog.get_meta(MODEL_META)
    finally:
        catalog.close()


def disk(palace: Path) -> dict[str, Any]:
    def size(paths: list[Path]) -> int:
        total = 0
        for p in paths:
            if p.is_file():
                total += p.stat().st_size
            elif p.is_dir():
                total += sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
        return total

    everything = list(palace.iterdir())
    catalogue = [p for p in everything if p.name.startswith("mempalace_index.sqlite3")]
    index = [palace / "vector_index"]
    chroma = [p for p in everything if p not in catalogue and p not in index]
    return {
        "chroma": size(chroma),
        "catalogue": size(catalogue),
        "vector_index": size(index),
        "total": size(everything),
    }


def reusable(work: Path, size: int, results_file: Path) -> dict[str, Any] | None:
    """The build report of a palace a previous run left in `work` (--reuse), if complete."""
    if (work / "build.json").exists():
        return json.loads((work / "build.json").read_text(encoding="utf-8"))
    if (work / "palace").exists() and results_file.exists():  # a run from before build.json
        for entry in json.loads(results_file.read_text(encoding="utf-8"))["sizes"]:
            if entry["drawers"] == size:
                return entry["build"]
    return None


VECTOR_ONLY_SCRIPT = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np
from pathlib import Path
from mempalace_cli.storage.catalog import Catalog
from mempalace_cli.storage.vector_index import VectorIndex
palace, mode = Path(sys.argv[1]), sys.argv[2]
index = VectorIndex(palace, Catalog(palace).conn)
q = np.random.default_rng(int(sys.argv[3])).standard_normal(int(sys.argv[4])).astype(np.float32)
if mode == "warm":
    index.keep_in_memory()
    index.nearest(q, 50)
    times, cpu = [], []
    for i in range(10):
        t, c = time.perf_counter(), time.process_time()
        index.nearest(q + i, 50)
        times.append(time.perf_counter() - t); cpu.append(time.process_time() - c)
    print(json.dumps({"warm": times, "warm_cpu": cpu}))
else:
    t1, c1 = time.perf_counter(), time.process_time()
    index.nearest(q, 50)
    t2 = time.perf_counter()
    print(json.dumps({"process_s": t2 - t0, "nearest_s": t2 - t1,
                      "nearest_cpu_s": time.process_time() - c1,
                      "process_cpu_s": time.process_time(),
                      "peak_rss_mib": next(int(l.split()[1]) for l in open("/proc/self/status")
                                           if l.startswith("VmHWM:")) / 1024}))
"""


def vector_only(size: int, work: Path) -> dict[str, Any]:
    """The vector side of a fresh search at `size` drawers, measured on a catalogue holding
    only ids, wing/room and vectors (no Chroma, no text): what the index costs, alone."""
    import numpy as np

    from mempalace_cli.storage.catalog import Catalog

    palace = work / f"vector-only-{size}"
    shutil.rmtree(palace, ignore_errors=True)
    catalog = Catalog(palace)
    rng = np.random.default_rng(size)
    t0 = time.perf_counter()
    with catalog.transaction() as conn:
        for start in range(0, size, 20000):
            n = min(20000, size - start)
            vecs = rng.standard_normal((n, DIM), dtype=np.float32)
            conn.executemany(
                "INSERT INTO drawers(id, wing, room, embedding) VALUES (?, ?, ?, ?)",
                [
                    (f"d{start + i}", f"w{(start + i) % 4}", f"r{(start + i) % 24}", v.tobytes())
                    for i, v in enumerate(vecs)
                ],
            )
    fill = time.perf_counter() - t0
    catalog.close()
    env = dict(os.environ)
    t1 = time.perf_counter()
    built = run_with_rss(
        [sys.executable, "-c", VECTOR_ONLY_SCRIPT, str(palace), "fresh", "0", str(DIM)], env
    )
    build_s = time.perf_counter() - t1
    fresh = [
        json.loads(
            run_with_rss(
                [sys.executable, "-c", VECTOR_ONLY_SCRIPT, str(palace), "fresh", str(i), str(DIM)],
                env,
            )["stdout"]
        )
        for i in range(1, 6)
    ]
    warm = json.loads(
        run_with_rss(
            [sys.executable, "-c", VECTOR_ONLY_SCRIPT, str(palace), "warm", "9", str(DIM)], env
        )["stdout"]
    )
    index_bytes = sum(f.stat().st_size for f in (palace / "vector_index").iterdir())
    shutil.rmtree(palace, ignore_errors=True)
    return {
        "drawers": size,
        "fill_catalogue_s": round(fill, 1),
        "first_search_builds_index_s": round(build_s, 1),
        "first_search_peak_rss_mib": built["peak_rss_mib"],
        "fresh_nearest": dist([f["nearest_s"] for f in fresh]),
        "fresh_nearest_cpu": dist([f["nearest_cpu_s"] for f in fresh]),
        "fresh_process_cpu": dist([f["process_cpu_s"] for f in fresh]),
        "warm_nearest_cpu": dist(warm["warm_cpu"]),
        "fresh_process": dist([f["process_s"] for f in fresh]),
        "fresh_peak_rss_mib": max(f["peak_rss_mib"] for f in fresh),
        "warm_nearest": dist(warm["warm"]),
        "index_bytes_per_drawer": round(index_bytes / size, 1),
        "load": load(),
    }


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f} / {five:.1f} / {fifteen:.1f}"


# -- report -------------------------------------------------------------------------------------
def markdown(results: dict[str, Any]) -> str:
    sizes = results["sizes"]
    head = "| | " + " | ".join(f"{s['drawers']:,} drawers" for s in sizes) + " |"
    lines = [head, "|---" * (len(sizes) + 1) + "|"]

    def row(label: str, fn: Any) -> None:
        cells = []
        for s in sizes:
            try:
                cells.append(fn(s))
            except (KeyError, TypeError):
                cells.append("-")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    def cpu(s: dict[str, Any], key: str) -> float:
        return s[key]["cpu"]["p50"]

    row("palace's model (query embedding)", lambda s: f"{s['model']}")
    row("build: drawers/s (stand-in vectors)", lambda s: f"{s['build']['build_drawers_per_s']:,}")
    row(
        "build: Chroma write s / catalogue write s",
        lambda s: f"{s['build']['chroma_write_s']} / {s['build']['catalog_write_s']}",
    )
    row(
        "first search, model cache empty: wall s / CPU s / peak RSS MiB",
        lambda s: (
            f"{s['first_search_empty_model_cache']['p50']:.2f} / "
            f"{cpu(s, 'first_search_empty_model_cache'):.2f} / "
            f"{s['first_search_empty_model_cache']['peak_rss_mib']:.0f}"
        ),
    )
    row(
        "fresh search that builds the index from scratch: wall s / CPU s / peak RSS MiB",
        lambda s: (
            f"{s['index_build_search']['p50']:.1f} / {cpu(s, 'index_build_search'):.1f} / "
            f"{s['index_build_search']['peak_rss_mib']:.0f}"
        ),
    )
    row(
        "**fresh CLI search (model cache warm), wall s p50 / p95**",
        lambda s: f"**{s['fresh_search']['p50']:.2f}** / {s['fresh_search']['p95']:.2f}",
    )
    row(
        "**fresh CLI search, CPU s p50 / p95** (what load does not inflate)",
        lambda s: f"**{cpu(s, 'fresh_search'):.2f}** / {s['fresh_search']['cpu']['p95']:.2f}",
    )
    row("fresh CLI search peak RSS MiB", lambda s: f"{s['fresh_search']['peak_rss_mib']:.0f}")
    row(
        "same searches without the index (every vector read): wall / CPU s p50, peak RSS MiB",
        lambda s: (
            f"{s['fresh_search_without_index']['p50']:.2f} / "
            f"{cpu(s, 'fresh_search_without_index'):.2f}, "
            f"{s['fresh_search_without_index']['peak_rss_mib']:.0f}"
        ),
    )
    row(
        "ratio index / without: CPU p50, peak RSS",
        lambda s: (
            f"{cpu(s, 'fresh_search') / cpu(s, 'fresh_search_without_index'):.2f}, "
            f"{s['fresh_search']['peak_rss_mib'] / s['fresh_search_without_index']['peak_rss_mib']:.2f}"  # noqa: E501
        ),
    )
    row(
        "warm search ms, wall p50 / p95; CPU p50 / p95",
        lambda s: (
            f"{s['warm_search']['p50'] * 1000:.0f} / {s['warm_search']['p95'] * 1000:.0f}; "
            f"{s['warm_search']['cpu']['p50'] * 1000:.0f} / "
            f"{s['warm_search']['cpu']['p95'] * 1000:.0f}"
        ),
    )
    row(
        "warm search, first pass over the queries (reads codes and postings): ms p50 / p95",
        lambda s: (
            f"{s['warm_search']['first_pass']['p50'] * 1000:.0f} / "
            f"{s['warm_search']['first_pass']['p95'] * 1000:.0f}"
            if "first_pass" in s["warm_search"]
            else "-"
        ),
    )
    row("warm process peak RSS MiB", lambda s: f"{s['warm_search']['process_rss_mib']:.0f}")
    row(
        "`status`: wall s / CPU s p50",
        lambda s: f"{s['status']['p50']:.2f} / {cpu(s, 'status'):.2f}",
    )
    row(
        "re-mine, nothing changed: wall s / CPU s",
        lambda s: f"{s['remine_unchanged']['p50']:.2f} / {cpu(s, 'remine_unchanged'):.2f}",
    )
    row(
        "recall@10, index vs exact",
        lambda s: f"{s['recall_at_10']['recall']:.4f}",
    )
    row(
        "on disk MB: total (Chroma / catalogue / index)",
        lambda s: (
            f"{s['disk']['total'] / 1e6:,.0f} ({s['disk']['chroma'] / 1e6:,.0f} / "
            f"{s['disk']['catalogue'] / 1e6:,.0f} / {s['disk']['vector_index'] / 1e6:,.0f})"
        ),
    )
    row(
        "bytes per drawer: total (Chroma / catalogue / index)",
        lambda s: (
            f"{s['disk']['total'] / s['drawers']:,.0f} ({s['disk']['chroma'] / s['drawers']:,.0f}"
            f" / {s['disk']['catalogue'] / s['drawers']:,.0f} / "
            f"{s['disk']['vector_index'] / s['drawers']:,.0f})"
        ),
    )
    row("load average during measurement", lambda s: s["load"])
    out = [
        f"Machine: {results['machine']}. Date: {results['date']}. "
        f"Wall time: {results['wall_s'] / 60:.1f} min. Text: {results['text_source']}.",
        "",
        *(lines if sizes else []),
    ]
    if results.get("vector_only"):
        out += [
            "",
            "The vector index alone (a catalogue of ids, wing/room and random vectors; no Chroma,",
            "no text; `--vector-only`): a fresh process ranking the top 50 by the index.",
            "",
            "| drawers | first search (builds index) s | fresh: nearest wall / CPU s p50 | fresh: "
            "whole process wall / CPU s p50 | fresh peak RSS MiB | warm nearest wall / CPU ms p50 "
            "| index bytes/drawer |",
            "|---|---|---|---|---|---|---|",
        ]
        for v in results["vector_only"]:
            out.append(
                f"| {v['drawers']:,} | {v['first_search_builds_index_s']} | "
                f"{v['fresh_nearest']['p50']:.3f} / {v['fresh_nearest_cpu']['p50']:.3f} | "
                f"{v['fresh_process']['p50']:.2f} / {v['fresh_process_cpu']['p50']:.2f} | "
                f"{v['fresh_peak_rss_mib']:.0f} | {v['warm_nearest']['p50'] * 1000:.0f} / "
                f"{v['warm_nearest_cpu']['p50'] * 1000:.0f} | "
                f"{v['index_bytes_per_drawer']} |"
            )
    if results.get("not_run"):
        out += ["", f"Not run: {results['not_run']}"]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--queries", type=int, default=12, help="fresh-process searches per size")
    ap.add_argument("--batch", type=int, default=5000, help="drawers per add_drawers call")
    ap.add_argument("--data", type=Path, default=BENCH)
    ap.add_argument("--work", type=Path, help="keep the palaces here (default: a temp dir)")
    ap.add_argument(
        "--reuse", action="store_true", help="measure palaces a previous --work run left"
    )
    ap.add_argument("--not-run", default="", help="sizes not built, and why (for the report)")
    ap.add_argument(
        "--vector-only",
        default="",
        help="sizes at which to measure the vector index alone (no Chroma, no text)",
    )
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "scale.json")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    compile_package()
    pool = TurnPool(args.data)
    work_root = args.work or Path(tempfile.mkdtemp(prefix="mp-scale-"))
    results: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, {platform.system()}",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "text_source": pool.source,
        "sizes": [],
        "not_run": args.not_run,
    }
    try:
        for size in [int(s) for s in args.sizes.split(",") if s]:
            work = work_root / f"s{size}"
            built = reusable(work, size, args.out) if args.reuse else None
            if built is None:
                if work.exists():
                    shutil.rmtree(work)
                print(f"building {size:,} drawers in {work} ...", file=sys.stderr, flush=True)
                built = build(size, pool, work, args.batch)
                (work / "build.json").write_text(json.dumps(built), encoding="utf-8")
            print(f"measuring {size:,} ...", file=sys.stderr, flush=True)
            measured = measure(work, args.queries, pool, size)
            results["sizes"].append(
                {"drawers": built["drawers"], "build": built, **measured, "load": load()}
            )
            save(results, args.out, started)
            if not args.work:
                shutil.rmtree(work, ignore_errors=True)
        for size in [int(s) for s in args.vector_only.split(",") if s]:
            print(f"vector index alone at {size:,} drawers ...", file=sys.stderr, flush=True)
            results.setdefault("vector_only", []).append(vector_only(size, work_root))
            print(json.dumps(results["vector_only"][-1]), file=sys.stderr, flush=True)
            save(results, args.out, started)
    finally:
        if not args.work:
            shutil.rmtree(work_root, ignore_errors=True)
    save(results, args.out, started)
    print(markdown(results))
    return 0


def save(results: dict[str, Any], out: Path, started: float) -> None:
    results["wall_s"] = round(time.perf_counter() - started, 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(results), encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
