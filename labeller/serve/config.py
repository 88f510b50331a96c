"""The `labeller serve` configuration: which retrievers the API can test, and the judge it grades with.

A TOML file; relative paths are relative to the file, and the file's directory is put on the import
path so a team's module next to it can be named::

    [server]
    judge = "offline:lexical"          # default judge of POST /judge
    judges = ["openai:gpt-4.1-mini"]   # other judges a request may name (each spends the operator's key)
    rubric = "general"                 # default rubric of POST /judge
    cache = ".labeller-cache"          # verdict cache directory
    max_body_bytes = 1000000           # larger request bodies get 413
    token = "..."                      # bearer token callers must send; better: LABELLER_SERVE_TOKEN
    project_keys = ["..."]             # retrieval-test `project_key` values accepted for every agent
    require_project_key = true         # false: a request may leave project_key out (when its agent has no keys)

    [retrievers.bm25]                  # one of labeller's own retrievers over a corpus
    builtin = "bm25"
    corpus = "corpus.jsonl"

    [retrievers.ours]                  # a team's retriever: "package.module:function"
    callable = "our_search:build"      # returns a Retriever (name + search(query, k) -> list[Hit])
    corpus = "corpus.jsonl"            # optional: then called as build(corpus_docs, **args)
    args = { index = "mirror" }        # keyword arguments
    score_normalisation = "max"        # or "none" when it already scores a 0..1 similarity (scores.py)
    project_keys = ["..."]             # keys accepted for this agent only (besides [server] project_keys)

    [retrievers.frozen]                # a stored run: answers only the queries it holds
    run = "runs/bm25.trec"
    queries = "queries.jsonl"          # maps the posted query text to the run's query ids
    corpus = "corpus.jsonl"            # gives the passages' text
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from labeller.errors import ConfigError
from labeller.io.inputs import read_corpus, read_queries
from labeller.io.tomlfile import read_toml
from labeller.io.validation import validation_error
from labeller.io.trec import read_run
from labeller.records import Doc
from labeller.retrieval.base import Hit, Retriever
from labeller.serve.guard import MIN_TOKEN_LENGTH
from labeller.serve.runretriever import RunRetriever
from labeller.serve.scores import Normalisation


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


ProjectKey = Annotated[str, Field(min_length=1)]
SECRET_FIELDS = {"token", "project_keys"}


class RetrieverSpec(_Strict):
    builtin: str | None = None
    callable: str | None = Field(default=None, pattern=r"^[\w.]+:[\w.]+$")
    run: str | None = None
    corpus: str | None = None
    queries: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    project_keys: list[ProjectKey] = Field(default_factory=list, repr=False)
    score_normalisation: Normalisation = "max"

    @model_validator(mode="after")
    def _one_source(self) -> RetrieverSpec:
        given = [k for k in ("builtin", "callable", "run") if getattr(self, k)]
        if len(given) != 1:
            raise ValueError("set exactly one of builtin, callable or run")
        if self.builtin and not self.corpus:
            raise ValueError("a builtin retriever needs a corpus")
        if self.run and not (self.corpus and self.queries):
            raise ValueError("a run retriever needs a corpus (passage text) and queries (query text -> id)")
        return self


class ServerSection(_Strict):
    judge: str = "offline:lexical"
    judges: list[str] = Field(default_factory=list)  # besides `judge`; a request naming any other is refused
    rubric: str = "general"
    cache: str | None = None  # a directory or a postgresql:// URL; None: $LABELLER_CACHE, else .labeller-cache
    max_body_bytes: int = Field(1_000_000, ge=1)
    token: str | None = Field(default=None, min_length=MIN_TOKEN_LENGTH, repr=False)
    project_keys: list[ProjectKey] = Field(default_factory=list, repr=False)  # for every agent
    require_project_key: bool = True  # the contract requires it; false lets a request leave it out

    @property
    def allowed_judges(self) -> list[str]:
        return [self.judge, *(j for j in self.judges if j != self.judge)]


class ServeConfig(_Strict):
    server: ServerSection = Field(default_factory=ServerSection)
    retrievers: dict[str, RetrieverSpec] = Field(min_length=1)
    base_dir: str = "."

    def project_keys(self, agent_id: str) -> list[str]:
        """The `project_key` values a retrieval test of this agent accepts; empty: any value, or none."""
        return [*self.server.project_keys, *self.retrievers[agent_id].project_keys]


def load_config(path: str | Path) -> ServeConfig:
    path = Path(path)
    data = read_toml(path, ConfigError)
    if "base_dir" in data:
        raise ConfigError("unknown key", path=str(path), field="base_dir")
    try:
        return ServeConfig(**data, base_dir=str(path.resolve().parent))
    except ValidationError as exc:
        err = exc.errors()[0]
        if SECRET_FIELDS & set(map(str, err["loc"])):  # never quote a token or key back, even a malformed one
            raise ConfigError(f"{err['msg']} (the value is not shown: it is a secret)", path=str(path),
                              field=".".join(map(str, err["loc"]))) from None
        raise validation_error(exc, path=str(path), error=ConfigError) from None


def resolve(config: ServeConfig, value: str) -> Path:
    path = Path(value)
    return path if path.is_absolute() else Path(config.base_dir) / path


def build_retrievers(config: ServeConfig) -> dict[str, Retriever]:
    """Build every configured retriever now, so a broken one fails at start-up, not on a request."""
    return {rid: build_retriever(config, rid, spec) for rid, spec in config.retrievers.items()}


def build_retriever(config: ServeConfig, rid: str, spec: RetrieverSpec) -> Retriever:
    field = f"retrievers.{rid}"
    corpus = read_corpus(resolve(config, spec.corpus)) if spec.corpus else None
    if spec.run:
        queries = read_queries(resolve(config, spec.queries or ""))
        return RunRetriever(rid, read_run(resolve(config, spec.run)), queries, corpus or {})
    if spec.builtin:
        from labeller.retrieval import make_retriever

        retriever = make_retriever(spec.builtin, list((corpus or {}).values()), **spec.args)
    else:
        retriever = _call(config, spec, corpus, field)
    if not isinstance(retriever, Retriever):
        raise ConfigError(f"'{spec.callable or spec.builtin}' returned {type(retriever).__name__}; expected a "
                          "Retriever (an object with `name` and `search(query, k)`)", field=field)
    return WithCorpusText(retriever, corpus) if corpus else retriever


class WithCorpusText:
    """Fills in a hit's text from the corpus when the retriever returns ids only: matching needs text."""

    def __init__(self, inner: Retriever, corpus: dict[str, Doc]) -> None:
        self.inner, self.corpus, self.name = inner, corpus, inner.name

    def search(self, query: str, k: int) -> list[Hit]:
        return [h if h.text or h.doc_id not in self.corpus else h.model_copy(update={"text": self.corpus[h.doc_id].text})
                for h in self.inner.search(query, k)]


def _call(config: ServeConfig, spec: RetrieverSpec, corpus: dict[str, Doc] | None, field: str) -> Any:
    module_name, _, attr = (spec.callable or "").partition(":")
    if config.base_dir not in sys.path:
        sys.path.insert(0, config.base_dir)
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot load '{spec.callable}': {exc}", field=f"{field}.callable") from None
    if not callable(target):
        raise ConfigError(f"'{spec.callable}' is not callable", field=f"{field}.callable")
    return target(list(corpus.values()), **spec.args) if corpus is not None else target(**spec.args)
