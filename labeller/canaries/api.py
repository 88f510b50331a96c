"""The canary commands as library calls: read the files, plant or probe, return the result."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from labeller.acceptance.ranking import ranked_from_run
from labeller.canaries.answers import output_answers, read_answers, read_output
from labeller.canaries.judgecheck import JudgeCheck, judge_canaries
from labeller.canaries.model import Canary, load_canaries
from labeller.canaries.plant import PlantResult, StoreFiles, check_output, plant, plant_stores
from labeller.canaries.suite import SuiteCriteria, check_floors, load_criteria
from labeller.canaries.probe import ProbeReport, check_planted, probe, retrieve
from labeller.errors import BadInputError
from labeller.io.inputs import read_corpus
from labeller.io.outputs import check_outputs
from labeller.labelling.faults import run_labelling
from labeller.io.writing import write_text
from labeller.records import Doc
from labeller.io.trec import read_run
from labeller.retrieval.base import Retriever


def plant_files(*, corpus: str | Path, canaries: str | Path, out: str | Path, separate: bool = False,
                queries_out: str | Path | None = None) -> PlantResult:
    check_output(Path(corpus), Path(out))  # the test-copy name rule first: it says what a good name is
    # plant() refuses the corpus as an output in its own words; the canary file is checked here
    check_outputs(inputs=[canaries], files={"--out": out, "--queries-out": queries_out})
    return plant(corpus, load_canaries(canaries), out, separate=separate, queries_out=queries_out)


def plant_store_files(*, canaries: str | Path, stores: Mapping[str, StoreFiles],
                      queries_out: str | Path | None = None) -> list[PlantResult]:
    """Plant into one test copy per store (plant.plant_stores), every output checked before any is written."""
    for files in stores.values():
        check_output(files.corpus, files.out)
    check_outputs(inputs=[canaries, *(f.corpus for f in stores.values())],
                  files={**{f"--store-out {name}": f.out for name, f in stores.items()}, "--queries-out": queries_out})
    return plant_stores(load_canaries(canaries), stores, queries_out=queries_out)


def plant_requested(*, canaries: str | Path, corpus: str | Path | None, out: str | Path | None, separate: bool,
                    queries_out: str | Path | None, store_corpus: Sequence[str] | None,
                    store_out: Sequence[str] | None) -> list[PlantResult]:
    """`labeller canaries plant`: one test copy for every store (--corpus/--out), or one per store
    (--store-corpus/--store-out NAME=PATH)."""
    if store_corpus or store_out:
        if corpus is not None or out is not None or separate:
            raise BadInputError("give --corpus/--out (one file for every store) or --store-corpus/--store-out "
                                "(one file per store), not both; --separate applies to --out only")
        return plant_store_files(canaries=canaries, stores=store_files(store_corpus, store_out),
                                 queries_out=queries_out)
    if corpus is None or out is None:
        raise BadInputError("missing --corpus and --out (or --store-corpus and --store-out per store)",
                            field="--out" if corpus is not None else "--corpus")
    return [plant_files(corpus=corpus, canaries=canaries, out=out, separate=separate, queries_out=queries_out)]


def named_values(items: Sequence[str] | None, option: str, what: str = "PATH") -> dict[str, str]:
    """`NAME=VALUE` items of a repeatable option as a dict; a malformed or repeated NAME is refused."""
    out: dict[str, str] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise BadInputError(f"'{item}' is not NAME={what}", field=option)
        if name in out:
            raise BadInputError(f"'{name}' is given twice", field=option)
        out[name] = value
    return out


def suite_criteria(mean_score: float | None, score_floor: float | None,
                   floors: Sequence[str] | None) -> SuiteCriteria | None:
    """The command line's suite criteria (only those given), or None."""
    given: dict = {k: v for k, v in (("mean_score", mean_score), ("score_floor", score_floor)) if v is not None}
    if floors:
        values = named_values(floors, "--floor", "SCORE")
        try:
            given["floors"] = {cid: float(v) for cid, v in values.items()}
        except ValueError:
            raise BadInputError("a floor is not a number; expected CANARY=SCORE, e.g. kite-consignment=0.8",
                                field="--floor") from None
    if not given:
        return None
    try:
        return SuiteCriteria.model_validate(given)
    except ValidationError as exc:
        err = exc.errors()[0]
        option = {"mean_score": "--min-mean-score", "score_floor": "--score-floor"}.get(str(err["loc"][0]), "--floor")
        raise BadInputError(f"{err['msg']}; a criterion of 0 could never fail", field=option) from None


def store_files(corpora: Sequence[str] | None, outs: Sequence[str] | None) -> dict[str, StoreFiles]:
    """--store-corpus NAME=PATH and --store-out NAME=PATH, paired by store name."""
    given, written = named_values(corpora, "--store-corpus"), named_values(outs, "--store-out")
    if set(given) != set(written):
        odd = sorted(set(given) ^ set(written))
        raise BadInputError(f"store(s) {', '.join(odd)} need both --store-corpus and --store-out", field="--store-out")
    return {name: StoreFiles(corpus=Path(given[name]), out=Path(written[name])) for name in given}


def read_corpora(paths: Sequence[str | Path]) -> dict[str, Doc]:
    """Several corpus files (one per store) as one corpus; a doc id in two of them is ambiguous and refused."""
    docs: dict[str, Doc] = {}
    origin: dict[str, str] = {}
    for path in paths:
        for doc_id, doc in read_corpus(path).items():
            if doc_id in docs:
                raise BadInputError(f"document '{doc_id}' is also in {origin[doc_id]}; expected each document id "
                                    "in one store's file only", path=str(path), field="doc_id")
            docs[doc_id], origin[doc_id] = doc, str(path)
    return docs


def new_canaries_file(*, corpus: str | Path, out: str | Path, count: int = 3, seed: str = "labeller",
                      planted_at: str | None = None) -> list[Canary]:
    """Write a starter canary file with deterministic facts that do not occur in the corpus."""
    from datetime import datetime, timezone

    from labeller.canaries.generate import starter_file

    if count < 1:
        raise BadInputError(f"count must be at least 1, got {count}")
    out = Path(out)
    if out.exists():
        raise BadInputError("refusing to overwrite an existing canary file", path=str(out))
    if out.suffix.lower() != ".toml":
        raise BadInputError("expected a .toml output file", path=str(out))
    check_outputs(files={"--out": out})
    stamp = planted_at or datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    texts = [" ".join([d.text, *(str(v) for v in d.fields.values())]) for d in read_corpus(corpus).values()]
    write_text(out, starter_file(count, seed, texts, stamp))
    return load_canaries(out)


class CanaryProbeOptions(BaseModel):
    """What `labeller canaries probe` probes, and how: the canary file; a retriever (a name for
    labeller.retrieval.make_retriever, or a Retriever) or a stored run, and/or the system's answers (an answers
    file, or a whole workflow's `output`). `corpus`: the planted test copy, or one file per store; needed to rank and
    for the judge check, not to score answers alone. `criteria` add to (and override) the canary file's `[suite]`
    table."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)
    canaries: Path
    corpus: Path | list[Path] | None = None
    retriever: str | Retriever | None = None
    run: Path | None = None
    k: int = 10
    depth: int | None = None  # how deep a retriever is asked (at least k)
    answers: Path | None = None
    output: Path | None = None
    judge: str | None = None  # also grade each canary document (the judge check)
    rubric: str | None = "general"
    cache_dir: Path | None = None
    criteria: SuiteCriteria | None = None


def probe_files(options: CanaryProbeOptions) -> ProbeReport:
    """Probe a retriever or a run, and/or score the system's answers, as CanaryProbeOptions says."""
    _check_probe(options)
    items = load_canaries(options.canaries)
    known = [c.canary_id for c in items]
    suite = load_criteria(options.canaries).merged(options.criteria)
    check_floors(suite, known, str(options.canaries))
    corpus = options.corpus
    docs = read_corpora([corpus] if isinstance(corpus, Path) else corpus) if corpus is not None else None
    if docs is not None:
        check_planted(items, docs)
    answers, output = options.answers, options.output
    given = (read_answers(answers, set(known)) if answers is not None else
             output_answers(read_output(output), known) if output is not None else None)
    depth = max(options.k, options.depth or options.k)
    judge = rubric = None
    if options.judge is not None:  # a bad judge name, rubric or missing key fails before any work is done
        from labeller.judges.registry import make_judge
        from labeller.rubric import load_rubric

        rubric, judge = load_rubric(options.rubric), make_judge(options.judge)
        check_outputs(dirs={"--cache": options.cache_dir})
    latency = None
    texts: dict[str, str] = {}
    ranked = None
    source = f"answers {answers}" if answers is not None else f"workflow output {output}"
    if options.run is not None:
        ranked = ranked_from_run(read_run(options.run))
        if not set(known) & set(ranked):
            raise BadInputError("the run has no entries for any canary; expected query ids equal to canary ids "
                                "(see `labeller canaries plant --queries-out`)", path=str(options.run))
        source = str(options.run)
    elif options.retriever is not None:
        retriever = options.retriever
        if isinstance(retriever, str):
            from labeller.retrieval import make_retriever

            retriever = make_retriever(retriever, list((docs or {}).values()))
        ranked, texts, latency = retrieve(items, retriever, depth)
        source = f"retriever {retriever.name}"
    check = None
    if judge is not None and rubric is not None:
        check = run_labelling(lambda sender: _judge(items, docs, sender, rubric, options.cache_dir), judge,
                              options.cache_dir)
    return probe(items, docs, ranked, k=options.k, source=source, hit_texts=texts, answers=given,
                 judge_check=check, latency=latency, judge=judge.name if judge else None,
                 rubric=f"{rubric.name}@{rubric.version}" if rubric else None, depth=depth, criteria=suite)


def _check_probe(options: CanaryProbeOptions) -> None:
    """Refuse a probe that names two things to probe, or nothing, or ranks without a corpus."""
    if options.retriever is not None and options.run is not None:
        raise BadInputError("give one of a retriever or a run to probe, not both")
    if options.answers is not None and options.output is not None:
        raise BadInputError("give one of an answers file or a workflow output, not both")
    ranking = options.retriever is not None or options.run is not None
    if not ranking and options.answers is None and options.output is None:
        raise BadInputError("nothing to probe: give a retriever or a run, and/or the system's answers "
                            "(an answers file, or a workflow's whole output)")
    if options.corpus is None and (ranking or options.judge is not None):
        raise BadInputError("a corpus is needed to rank canaries or check the judge: give the planted test copy "
                            "(or one file per store)", field="corpus")


async def _judge(items, docs, judge, rubric, cache_dir) -> JudgeCheck:
    from labeller.store import open_store

    try:
        with open_store(cache_dir) as cache:
            return await judge_canaries(items, docs, judge, rubric, cache)
    finally:
        await judge.aclose()
