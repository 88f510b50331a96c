"""Build a gold set: a frozen sample of pairs, a blind grading page for several people with overlap,
human-human agreement, and adjudication against the judge. See gold/README.md for the whole loop."""

from __future__ import annotations

from pathlib import Path

from labeller.annotate.sample import Sample, freeze, read_sample
from labeller.annotate.session import Session
from labeller.errors import BadInputError


def make_sample(out: str | Path, *, pairs: str | Path | None = None, run: str | Path | None = None,
                labels: str | Path | None = None, depth: int = 10, size: int = 60, plan: str = "stratified",
                seed: int = 0, queries: str | Path | None = None, corpus: str | Path | None = None,
                rubric: str | None = None) -> Sample:
    """Freeze a sample drawn from exactly one of a pairs file, a run's top `depth`, or a judge's labels."""
    from labeller.annotate import sources
    from labeller.io.inputs import read_corpus, read_queries

    given = [name for name, value in (("--pairs", pairs), ("--run", run), ("--labels", labels)) if value is not None]
    if len(given) != 1:
        raise BadInputError("give exactly one source of pairs: --pairs FILE, --run FILE or --labels FILE"
                            + (f" (got {', '.join(given)})" if given else ""))
    from labeller.io.outputs import check_outputs

    check_outputs(inputs=[pairs, run, labels, queries, corpus], files={"--out": out})
    query_map = read_queries(queries) if queries else None
    doc_map = read_corpus(corpus) if corpus else None
    if labels is not None:
        candidates = sources.from_labels(labels, query_map, doc_map)
    elif run is not None:
        candidates = sources.from_run(run, depth, query_map, doc_map)
    else:
        candidates = sources.from_pairs(pairs, query_map, doc_map)  # type: ignore[arg-type]
    version, examples = None, set()
    named = rubric if rubric is not None else next((c.rubric for c in candidates if c.rubric), None)
    if named is not None:
        from labeller.errors import ConfigError
        from labeller.rubric import load_rubric

        try:
            loaded = load_rubric(named)
        except ConfigError:
            if rubric is not None:
                raise
            loaded = None  # the labels name a rubric file that is not here: nothing to check against
        if loaded is not None:
            examples = {(e.query_id, e.doc_id) for e in loaded.examples if e.query_id and e.doc_id}
            if rubric is not None:
                rubric, version = str(rubric), loaded.version
    # The rubric's worked examples are shown to the judge: graded by people they would flatter the judge.
    kept = [c for c in candidates if (c.query_id, c.doc_id) not in examples]
    frozen = freeze(kept, out, size=size, plan=plan, seed=seed, rubric=rubric, rubric_version=version)
    return frozen.model_copy(update={"left_out_examples": len(candidates) - len(kept)})


__all__ = ["Sample", "Session", "make_sample", "read_sample"]
