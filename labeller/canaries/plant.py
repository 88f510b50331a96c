"""Plant canary documents into a test copy of a corpus.

Planting never touches a real corpus: the output must be *marked as a test copy* by its file name,
which has to contain `.test.` or `.canary.` (corpus.test.jsonl, ledger.canary.csv), and it may not
be the input corpus. Planting is deterministic: the same corpus and canary file give the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from labeller.canaries.factrecall import token_text
from labeller.canaries.model import Canary
from labeller.errors import BadInputError
from labeller.io.inputs import read_corpus
from labeller.io.outputs import same_file
from labeller.io.tables import table_format
from labeller.io.writing import write_rows
from labeller.records import Doc

TEST_COPY_MARKERS = (".test.", ".canary.")


class PlantResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    out: str
    corpus_docs: int  # documents copied from the corpus (0 with separate=True)
    canary_docs: int
    canaries: int
    queries_out: str | None = None
    store: str | None = None  # the store planted, when each store has its own file (plant_stores)


def is_test_copy(path: str | Path) -> bool:
    name = Path(path).name.lower()
    return any(marker in name for marker in TEST_COPY_MARKERS)


def check_output(corpus: Path, out: Path) -> None:
    if not is_test_copy(out):
        raise BadInputError(
            "refusing to write canaries into a file not marked as a test copy; the output name must contain "
            "'.test.' or '.canary.' (for example corpus.test.jsonl)", path=str(out))
    if same_file(out, corpus):
        raise BadInputError("refusing to overwrite the input corpus; write the test copy to another file",
                            path=str(out))
    table_format(out)


def canary_rows(canaries: list[Canary]) -> list[dict[str, Any]]:
    """The corpus rows of the canary documents; extra columns say what they are and when they were planted."""
    rows = []
    for canary in canaries:
        for doc in canary.documents():
            rows.append({"doc_id": doc.doc_id, "text": doc.text, **doc.fields, "store": doc.store,
                         "canary_id": canary.canary_id, "planted_at": canary.planted_at})
    return rows


def check_against_corpus(canaries: list[Canary], corpus: dict[str, Doc], path: Path) -> None:
    """Canary doc ids must be new, and no fact may already occur in the corpus: else a probe proves nothing."""
    for row in canary_rows(canaries):
        if row["doc_id"] in corpus:
            raise BadInputError(f"the corpus already has a document '{row['doc_id']}'; plant into the original "
                                "corpus, not into a copy that already holds canaries", path=str(path))
    # One joined string keeps the check linear in corpus size; a token_text holds no newline, so a form
    # matches inside one document only, and as whole tokens ("ref 73514" does not block planting 7351).
    joined = "\n".join(_doc_text(doc) for doc in corpus.values())
    for canary in canaries:
        for facts in canary.facts_by_store().values():
            for fact in facts:
                for form in fact.forms():
                    needle = token_text(form)
                    if needle in joined:
                        where = next(d.doc_id for d in corpus.values() if needle in _doc_text(d))
                        raise BadInputError(
                            f"fact '{form}' of canary '{canary.canary_id}' already occurs in corpus document "
                            f"'{where}'; expected a globally unique fact (e.g. X9-KITE-42)", path=str(path))


def _doc_text(doc: Doc) -> str:
    return token_text(" ".join([doc.text, *(str(v) for v in doc.fields.values())]))


def plant(corpus_path: str | Path, canaries: list[Canary], out: str | Path, *, separate: bool = False,
          queries_out: str | Path | None = None) -> PlantResult:
    """Write `out`: the corpus plus the canary documents (or, with separate=True, the canary documents only).

    With `queries_out`, also write the canary questions as a queries file (query_id = canary id), the
    input a team's own system needs to produce a run the probe can read.
    """
    corpus_path, out = Path(corpus_path), Path(out)
    check_output(corpus_path, out)
    corpus = read_corpus(corpus_path)
    check_against_corpus(canaries, corpus, corpus_path)
    planted = canary_rows(canaries)
    copied = [] if separate else [{"doc_id": d.doc_id, "text": d.text, **d.fields} for d in corpus.values()]
    if queries_out is not None:
        if same_file(queries_out, corpus_path) or same_file(queries_out, out):
            raise BadInputError("--queries-out must be a new file, not the corpus or the test copy",
                                path=str(queries_out))
        write_rows(queries_out, [{"query_id": c.canary_id, "text": c.question} for c in canaries])
    write_rows(out, copied + planted)
    return PlantResult(out=str(out), corpus_docs=len(copied), canary_docs=len(planted), canaries=len(canaries),
                       queries_out=str(queries_out) if queries_out is not None else None)


class StoreFiles(BaseModel):
    """One store's corpus file and the test copy its canary documents are planted into."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    corpus: Path
    out: Path


def plant_stores(canaries: list[Canary], stores: Mapping[str, StoreFiles], *,
                 queries_out: str | Path | None = None) -> list[PlantResult]:
    """Plant each store's canary documents into a test copy of that store's own corpus file.

    A cross-source canary whose chat half lives in chat.jsonl and whose ledger half lives in
    ledger.jsonl gets one document in each test copy. Every store the canaries name needs its files,
    and every store given must hold a canary document. No fact may occur in any of the corpora (a
    passage of another store would find it), and nothing is written until every store is checked.
    """
    named = {doc.store for c in canaries for doc in c.documents()}
    if named - set(stores):
        raise BadInputError(f"no corpus given for store(s) {', '.join(sorted(named - set(stores)))} of the canary "
                            "file; expected one corpus and one test copy per store", field="store")
    if set(stores) - named:
        raise BadInputError(f"store(s) {', '.join(sorted(set(stores) - named))} hold no canary document; expected "
                            f"the canary file's stores: {', '.join(sorted(named))}", field="store")
    outs = [files.out for files in stores.values()]
    if any(same_file(a, b) for i, a in enumerate(outs) for b in outs[i + 1:]):
        raise BadInputError("two stores name the same test copy; expected one file per store", field="store")
    corpora = {}
    for name, files in sorted(stores.items()):
        check_output(files.corpus, files.out)
        corpora[name] = read_corpus(files.corpus)
    for name, files in sorted(stores.items()):
        check_against_corpus(canaries, corpora[name], files.corpus)
    results = []
    for name, files in sorted(stores.items()):
        rows = [r for r in canary_rows(canaries) if r["store"] == name]
        copied = [{"doc_id": d.doc_id, "text": d.text, **d.fields} for d in corpora[name].values()]
        write_rows(files.out, copied + rows)
        results.append(PlantResult(out=str(files.out), corpus_docs=len(copied), canary_docs=len(rows),
                                   canaries=len({r["canary_id"] for r in rows}), store=name))
    if queries_out is not None:
        write_rows(queries_out, [{"query_id": c.canary_id, "text": c.question} for c in canaries])
    return results
