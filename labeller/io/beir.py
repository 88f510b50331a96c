"""The BEIR layout, read where it lies: `DIR/corpus.jsonl` (_id, title, text), `DIR/queries.jsonl`
(_id, text) and `DIR/qrels/<split>.tsv` (a header row, then query-id, corpus-id, score).

Nothing is converted: the paths go to the ordinary readers, whose per-role column aliases read
`_id` as the doc id in the corpus and as the query id in the queries, and `query-id`/`corpus-id`/
`score` as a qrels table (on TREC's 0-3 scale unless --from-scale says otherwise; binary BEIR
qrels, score 0/1, then grade relevant from 2: pass --relevant-from 2). A corpus `title` stays a
field a rubric may show.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from labeller.errors import BadInputError


@dataclass(frozen=True)
class BeirDataset:
    root: Path
    corpus: Path
    queries: Path
    qrels: Path | None  # None when asked for a dataset without judgments (labelling only)


def beir_dataset(root: str | Path, split: str = "test", *, need_qrels: bool = True) -> BeirDataset:
    """The files of a BEIR dataset directory, each checked to exist, with a clear error otherwise."""
    root = Path(root)
    if not root.is_dir():
        raise BadInputError("not a directory; expected a BEIR dataset folder with corpus.jsonl, queries.jsonl "
                            "and qrels/", path=str(root), field="beir")
    corpus, queries = root / "corpus.jsonl", root / "queries.jsonl"
    for path in (corpus, queries):
        if not path.is_file():
            raise BadInputError(f"{path.name} not found; expected the BEIR layout (corpus.jsonl, queries.jsonl, "
                                "qrels/<split>.tsv)", path=str(root), field="beir")
    qrels = root / "qrels" / f"{split}.tsv"
    if not qrels.is_file():
        if need_qrels:
            found = sorted(p.stem for p in (root / "qrels").glob("*.tsv")) if (root / "qrels").is_dir() else []
            have = f"; it has {', '.join(found)} (choose with --beir-split)" if found else ""
            raise BadInputError(f"qrels/{split}.tsv not found{have}; expected the judgments of split '{split}'",
                                path=str(root), field="beir")
        qrels = None
    return BeirDataset(root=root, corpus=corpus, queries=queries, qrels=qrels)
