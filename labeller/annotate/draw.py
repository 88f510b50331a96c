"""`labeller annotate sample`: draw and freeze the pairs people will grade, from exactly one source of pairs."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from labeller.annotate.sample import Sample, freeze, thin_gold_warning
from labeller.errors import BadInputError
from labeller.io.memory import Input


class SampleOptions(BaseModel):
    """What a sample is drawn from and how: exactly one of `pairs`, `run` (its top `depth`) or `labels` (a judge's
    labels, which the stratified plans draw within); `plan` as annotate.plans parses it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    out: Path
    pairs: Input | None = None  # a path, or from Python a frame in memory (labeller.io.memory)
    run: Input | None = None
    labels: Input | None = None
    depth: int = 10
    size: int = 60
    plan: str = "stratified"
    seed: int = 0
    queries: Input | None = None  # ids checked against these
    corpus: Input | None = None
    rubric: str | None = None  # the rubric people grade against (default: the labels'); its examples are left out
    top_runs: list[Input] = Field(default_factory=list)  # plan top:K: the runs whose top K is drawn with certainty
    from_scale: str | None = None  # the labels' own scale (sources.from_labels)


def draw_sample(options: SampleOptions) -> tuple[Sample, int]:
    """The frozen sample and how many candidate pairs it was drawn from."""
    from labeller.annotate import sources
    from labeller.annotate.plans import parse_plan
    from labeller.io.inputs import read_corpus, read_queries
    from labeller.io.outputs import check_outputs

    out, pairs, run, labels, queries, corpus = (options.out, options.pairs, options.run, options.labels,
                                                options.queries, options.corpus)
    rubric, top_runs, plan = options.rubric, options.top_runs, options.plan
    given = [name for name, value in (("--pairs", pairs), ("--run", run), ("--labels", labels)) if value is not None]
    if len(given) != 1:
        raise BadInputError("give exactly one source of pairs: --pairs FILE, --run FILE or --labels FILE"
                            + (f" (got {', '.join(given)})" if given else ""))
    name, top_depth = parse_plan(plan)
    if name == "top" and labels is None:
        raise BadInputError(f"plan '{plan}' draws the rest of the pool within the judge's grades: give --labels (the "
                            "judge's labels of the pool `labeller evaluate --gold` will correct)", field="labels")
    if name == "top" and not top_runs:
        raise BadInputError(f"plan '{plan}' grades the top {top_depth} of each run whose MRR and hit rate are to be "
                            "corrected: give them with --top-run RUN (repeatable)", field="top_run")
    if top_runs and name != "top":
        raise BadInputError("--top-run names the runs whose top K plan top:K grades whole; give --plan top:K",
                            field="top_run")
    check_outputs(inputs=[pairs, run, labels, queries, corpus, *top_runs], files={"--out": out})
    query_map = read_queries(queries) if queries else None
    doc_map = read_corpus(corpus) if corpus else None
    if labels is not None:
        candidates = sources.from_labels(labels, query_map, doc_map, options.from_scale)
    elif run is not None:
        candidates = sources.from_run(run, options.depth, query_map, doc_map)
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
    top = {(c.query_id, c.doc_id) for path in top_runs for c in sources.from_run(path, top_depth or 1, query_map,
                                                                                        doc_map)}
    frozen = freeze(kept, out, size=options.size, plan=plan, seed=options.seed, rubric=rubric, rubric_version=version,
                    top=top)
    thin = thin_gold_warning(frozen, len({c.query_id for c in kept}), len(kept))
    return frozen.model_copy(update={"left_out_examples": len(candidates) - len(kept),
                                     "warnings": [thin] if thin else []}), len(kept)
