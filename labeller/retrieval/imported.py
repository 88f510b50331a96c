"""Your own retriever, named by import path: `retriever.name = "mysearch.client:search"`.

The object at that path is one of:
- a function `search(query_text, k)` returning the top k as (doc_id, score) pairs, Hits, or dicts
  with doc_id and score, best first (the usual shape of a client for a search service);
- a Retriever: an object with `search(query_text, k) -> list[Hit]` (and a `name`);
- a factory taking the corpus, `make(corpus) -> Retriever` (a class or a function whose first
  parameter is named `corpus`), for a retriever labeller should build over the configured corpus.
Keyword parameters from the config (`[retriever.params]`-style overrides) are passed to a factory.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable
from typing import Any

from labeller.errors import ConfigError
from labeller.retrieval.base import Hit, Retriever

_IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def is_import_path(name: str) -> bool:
    return bool(_IMPORT_PATH.match(name or ""))


def load_object(spec: str) -> Any:
    """'package.module:attr.sub' -> the object, or ConfigError saying which part was not found."""
    if not is_import_path(spec):
        raise ConfigError(f"retriever '{spec}' is not an import path 'package.module:function'", field="retriever")
    module_name, _, attribute = spec.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"retriever '{spec}': cannot import module '{module_name}' ({exc}); is it installed, "
                          "or on PYTHONPATH?", field="retriever") from None
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ConfigError(f"retriever '{spec}': module '{module_name}' has no '{attribute}'", field="retriever")
        target = getattr(target, part)
    if not callable(target) and not hasattr(target, "search"):
        raise ConfigError(f"retriever '{spec}' is a {type(target).__name__}; expected a search function, a "
                          "retriever (with .search) or a factory taking the corpus", field="retriever")
    return target


def check_import_path(spec: str) -> None:
    load_object(spec)


def _is_factory(target: Any) -> bool:
    if inspect.isclass(target):
        return True
    try:
        first = next(iter(inspect.signature(target).parameters), None)
    except (TypeError, ValueError):
        return False
    return first == "corpus"


class FunctionRetriever:
    """A search function as a Retriever; every answer is checked, so a bad one names the retriever."""

    def __init__(self, name: str, search: Callable[[str, int], Any]) -> None:
        self.name, self._search = name, search

    def search(self, query: str, k: int) -> list[Hit]:
        answer = self._search(query, k)
        try:
            return [_hit(item) for item in list(answer)[:k]]
        except (TypeError, ValueError, KeyError) as exc:
            raise ConfigError(f"retriever '{self.name}' answered {type(answer).__name__} ({exc}) for query "
                              f"{query[:60]!r}; expected (doc_id, score) pairs, Hits or dicts with doc_id and "
                              "score", field="retriever") from None


def _hit(item: Any) -> Hit:
    if isinstance(item, Hit):
        return item
    if isinstance(item, dict):
        return Hit(doc_id=str(item["doc_id"]), score=float(item["score"]), text=str(item.get("text", "")))
    doc_id, score = item
    return Hit(doc_id=str(doc_id), score=float(score))


def imported_retriever(spec: str, corpus: Any, **params: Any) -> Retriever:
    """The retriever an import path names (see the module docstring)."""
    target = load_object(spec)
    if hasattr(target, "search") and not inspect.isclass(target):
        return target
    if _is_factory(target):
        built = target(corpus, **params)
        if not hasattr(built, "search"):
            raise ConfigError(f"retriever factory '{spec}' returned a {type(built).__name__} without .search",
                              field="retriever")
        if not getattr(built, "name", None):
            built.name = spec
        return built
    if params:
        raise ConfigError(f"retriever '{spec}' is a search function; it takes no parameters ({', '.join(params)})",
                          field="retriever")
    return FunctionRetriever(spec, target)
