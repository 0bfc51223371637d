"""Text embeddings for the index: a model shipped inside a package, or one litellm reaches.

An :class:`Embedder` turns texts into L2-normalized ``float32`` rows and names its model by
``model_id``; the index keeps each model's vectors apart under that id.

- :class:`WordLlamaEmbedder` (the default): the static token embeddings that the ``wordllama``
  wheel carries (``l2_supercat_256``), mean-pooled as wordllama does. Nothing is downloaded:
  the weights and tokenizer are read from the installed package's own files, without
  importing the ``wordllama`` package (whose import alone costs about 0.3 s, and whose loader
  looks for the tokenizer in the wrong folder and then tries to download it).
- :class:`LiteLLMEmbedder`: any embedding model litellm reaches, when the user sets
  ``PERCENT_AGENT_EMBED_MODEL`` (``openai/text-embedding-3-small``, ``ollama/nomic-embed-text``).
  litellm is imported only when it embeds.

:func:`embedder_from_env` chooses. Both load lazily: constructing one costs nothing.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from jupyter_percent_agent.errors import Kind, PercentAgentError
from jupyter_percent_agent.trust import NO_KEY

if TYPE_CHECKING:
    import numpy as np

ENV_MODEL = "PERCENT_AGENT_EMBED_MODEL"
ENV_API_BASE = "PERCENT_AGENT_EMBED_API_BASE"
ENV_API_KEY = "PERCENT_AGENT_EMBED_API_KEY"
DEFAULT_MODEL = "wordllama"
NO_MODEL = ("none", "off", "0", "lexical")

WORDLLAMA_CONFIG = "l2_supercat"
WORDLLAMA_DIM = 256

EMBED_CHARS = 100_000
"""How much of a text the bundled model embeds: its first 100,000 characters (a document of
some fifty pages). Its vector is the mean of its tokens' vectors, which more text hardly
moves, and the tokens of a whole log pasted into a SOP folder took a thousand times its
size in memory (a 30 MB file had ``tce sop search`` killed for lack of it). Terms index the
whole text."""


class EmbeddingError(PercentAgentError, RuntimeError):
    """The embedding model could not be loaded or did not answer."""

    error_kind = Kind.MODEL


class Embedder(Protocol):
    """Turns texts into unit vectors; ``model_id`` names the model (and so its vectors)."""

    model_id: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A ``(len(texts), dim)`` float32 array of L2-normalized rows."""
        ...


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (a zero row stays zero)."""
    import numpy as np

    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)


def wordllama_files() -> tuple[Path, Path]:
    """The weights and tokenizer files inside the installed ``wordllama`` package."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError("the wordllama package is not installed (pip install wordllama)")
    root = Path(next(iter(spec.submodule_search_locations)))
    weights = root / "weights" / f"{WORDLLAMA_CONFIG}_{WORDLLAMA_DIM}.safetensors"
    tokenizer = root / "tokenizers" / f"{WORDLLAMA_CONFIG}_tokenizer_config.json"
    for path in (weights, tokenizer):
        if not path.is_file():
            raise EmbeddingError(f"wordllama's bundled model file is missing: {path}")
    return weights, tokenizer


def load_table(path: Path, key: str = "embedding.weight") -> np.ndarray:
    """A 2-D tensor of a safetensors file, memory-mapped (read-only, nothing copied).

    The format: an 8-byte little-endian header length, a JSON header naming each tensor's
    dtype, shape and byte range, then the data. Only the rows a text uses are ever read.
    """
    import json

    import numpy as np

    dtypes = {"F16": np.float16, "F32": np.float32, "BF16": None}
    size = path.stat().st_size
    with path.open("rb") as f:
        length = int.from_bytes(f.read(8), "little")
        if not 0 < length < min(size, 1 << 24):
            raise EmbeddingError(f"{path}: not a safetensors file")
        header = json.loads(f.read(length))
    info = header.get(key) if isinstance(header, dict) else None
    if not isinstance(info, dict):
        raise EmbeddingError(f"{path}: no tensor {key!r}")
    dtype = dtypes.get(info.get("dtype"))
    shape = info.get("shape")
    begin, end = info.get("data_offsets", (0, 0))
    if (dtype is None or not isinstance(shape, list) or len(shape) != 2
            or end - begin != shape[0] * shape[1] * np.dtype(dtype).itemsize
            or 8 + length + end > size):
        raise EmbeddingError(f"{path}: tensor {key!r} is not a 2-D float16/float32 table")
    return np.memmap(path, dtype=dtype, mode="r", offset=8 + length + begin,
                     shape=(shape[0], shape[1]))


class WordLlamaEmbedder:
    """WordLlama's bundled static embeddings, loaded on first use (about 0.1 s: the
    tokenizer; the weights are memory-mapped)."""

    model_id = f"wordllama/{WORDLLAMA_CONFIG}_{WORDLLAMA_DIM}"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._table: Any = None
        self._tokenizer: Any = None

    def _load(self) -> None:
        with self._lock:
            if self._table is not None:
                return
            weights, tokenizer_file = wordllama_files()
            try:
                from tokenizers import Tokenizer

                tokenizer = Tokenizer.from_file(str(tokenizer_file))
                tokenizer.no_truncation()
                tokenizer.no_padding()
                table = load_table(weights)
            except EmbeddingError:
                raise
            except Exception as exc:  # a broken install: say so, the index falls back
                raise EmbeddingError(f"cannot load wordllama's model: {exc}") from exc
            self._tokenizer, self._table = tokenizer, table

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        self._load()
        table = self._table
        out = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
        encodings = self._tokenizer.encode_batch([t[:EMBED_CHARS] for t in texts],
                                                 add_special_tokens=False)
        for i, enc in enumerate(encodings):
            ids = np.asarray(enc.ids, dtype=np.int64)
            if ids.size:
                np.clip(ids, 0, table.shape[0] - 1, out=ids)
                out[i] = table[ids].astype(np.float32).mean(axis=0)
        return normalize_rows(out)


class LiteLLMEmbedder:
    """An embedding model reached through litellm's ``embedding()``."""

    def __init__(self, model: str, *, api_base: str | None = None,
                 api_key: str | None = None, timeout: float = 60.0,
                 batch_size: int = 128) -> None:
        self.model = model
        self.api_base = api_base
        self._api_key = api_key
        self.timeout = timeout
        self.batch_size = batch_size
        where = f"@{_public_base(api_base)}" if api_base else ""
        self.model_id = f"litellm/{model}{where}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        from jupyter_percent_agent.litellm_setup import import_litellm, one_line

        litellm = import_litellm()
        key = self._api_key
        if key is None and self.api_base:
            # no key was tied to this endpoint: send none of the user's (litellm would fall
            # back to the provider's key from the environment, e.g. OPENAI_API_KEY)
            key = NO_KEY
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = [t if t.strip() else " " for t in texts[start:start + self.batch_size]]
            try:
                response = litellm.embedding(
                    model=self.model, input=batch, api_base=self.api_base, api_key=key,
                    timeout=self.timeout, max_retries=0)
                data = sorted(response.data, key=lambda d: _field(d, "index"))
                rows.extend(_field(d, "embedding") for d in data)
            except Exception as exc:
                raise EmbeddingError(f"{self.model}: {one_line(exc)[:300]}") from exc
        if len(rows) != len(texts):
            raise EmbeddingError(f"{self.model}: {len(rows)} vectors for {len(texts)} texts")
        return normalize_rows(np.asarray(rows, dtype=np.float32).reshape(len(texts), -1))


def _field(item: Any, name: str) -> Any:
    return item[name] if isinstance(item, dict) else getattr(item, name)


def _public_base(api_base: str) -> str:
    """An api_base without credentials or query (it names vectors in a file that is shared)."""
    from urllib.parse import urlsplit

    parts = urlsplit(api_base)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}".rstrip("/")


def embedder_from_env(env: Mapping[str, str] | None = None) -> Embedder | None:
    """The embedder the user configured: ``PERCENT_AGENT_EMBED_MODEL`` (a litellm model name;
    ``wordllama`` or unset for the bundled model; ``none`` for lexical ranking only).

    The endpoint is ``PERCENT_AGENT_EMBED_API_BASE``, else ``PERCENT_AGENT_API_BASE``; the key
    is ``PERCENT_AGENT_EMBED_API_KEY``, or ``PERCENT_AGENT_API_KEY`` only when the endpoint is
    ``PERCENT_AGENT_API_BASE`` (a key goes only to the endpoint it was set for).
    """
    env = os.environ if env is None else env
    model = (env.get(ENV_MODEL) or DEFAULT_MODEL).strip()
    if model.lower() in NO_MODEL:
        return None
    if model.lower() in (DEFAULT_MODEL, WordLlamaEmbedder.model_id):
        return WordLlamaEmbedder()
    base = env.get(ENV_API_BASE) or None
    key = env.get(ENV_API_KEY) or None
    if base is None:
        base = env.get("PERCENT_AGENT_API_BASE") or None
        key = key or env.get("PERCENT_AGENT_API_KEY") or None
    return LiteLLMEmbedder(model, api_base=base, api_key=key)


_shared: dict[str, Embedder | None] = {}
_shared_lock = threading.Lock()


def shared_embedder(env: Mapping[str, str] | None = None) -> Embedder | None:
    """The environment's embedder, one per process (the model is loaded once)."""
    env = os.environ if env is None else env
    key = "\0".join(env.get(k, "") for k in (ENV_MODEL, ENV_API_BASE, ENV_API_KEY,
                                             "PERCENT_AGENT_API_BASE", "PERCENT_AGENT_API_KEY"))
    with _shared_lock:
        if key not in _shared:
            _shared[key] = embedder_from_env(env)
        return _shared[key]
