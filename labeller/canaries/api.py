"""The canary commands as library calls: read the files, plant or probe, return the result."""

from __future__ import annotations

from pathlib import Path

from labeller.canaries.judgecheck import JudgeCheck, judge_canaries
from labeller.canaries.model import Canary, load_canaries
from labeller.canaries.plant import PlantResult, check_output, plant
from labeller.acceptance.ranking import ranked_from_run
from labeller.canaries.probe import ProbeReport, check_planted, probe, retrieve
from labeller.errors import BadInputError
from labeller.io.inputs import read_corpus
from labeller.io.outputs import check_outputs
from labeller.labelling.faults import run_labelling
from labeller.io.tables import read_rows, require, write_text
from labeller.io.trec import read_run
from labeller.retrieval.base import Retriever


def plant_files(*, corpus: str | Path, canaries: str | Path, out: str | Path, separate: bool = False,
                queries_out: str | Path | None = None) -> PlantResult:
    check_output(Path(corpus), Path(out))  # the test-copy name rule first: it says what a good name is
    # plant() refuses the corpus as an output in its own words; the canary file is checked here
    check_outputs(inputs=[canaries], files={"--out": out, "--queries-out": queries_out})
    return plant(corpus, load_canaries(canaries), out, separate=separate, queries_out=queries_out)


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


def read_answers(path: str | Path, known: set[str]) -> dict[str, str]:
    """Rows {canary_id (or query_id), answer}: an agent's answer text to each canary question."""
    path = Path(path)
    out: dict[str, str] = {}
    for line, row in read_rows(path):
        key = "canary_id" if "canary_id" in row else "query_id"
        cid = require(row, key, path, line)
        if cid not in known:
            raise BadInputError(f"unknown canary '{cid}'; expected an id from the canary file",
                                path=str(path), line=line, field=key)
        answer = row.get("answer")
        if not isinstance(answer, str):
            raise BadInputError("missing; expected the answer text", path=str(path), line=line, field="answer")
        out[cid] = answer
    return out


def probe_files(*, canaries: str | Path, corpus: str | Path, retriever: str | Retriever | None = None,
                run: str | Path | None = None, k: int = 10, depth: int | None = None,
                answers: str | Path | None = None, judge: str | None = None, rubric: str | None = "general",
                cache_dir: str | Path = ".labeller-cache") -> ProbeReport:
    """Probe a retriever (a name for labeller.retrieval.make_retriever, or a Retriever) or a stored run."""
    if (retriever is None) == (run is None):
        raise BadInputError("give exactly one of a retriever or a run to probe")
    items = load_canaries(canaries)
    docs = read_corpus(corpus)
    check_planted(items, docs)
    known = {c.canary_id for c in items}
    answer_texts = read_answers(answers, known) if answers is not None else None
    depth = max(k, depth or k)
    judge_obj = rubric_obj = None
    if judge is not None:  # a bad judge name, rubric or missing key fails before any work is done
        from labeller.judges.registry import make_judge
        from labeller.rubric import load_rubric

        rubric_obj, judge_obj = load_rubric(rubric), make_judge(judge)
        check_outputs(dirs={"--cache": cache_dir})
    latency = None
    texts: dict[str, str] = {}
    if run is not None:
        entries = read_run(run)
        ranked = ranked_from_run(entries)
        if not known & set(ranked):
            raise BadInputError("the run has no entries for any canary; expected query ids equal to canary ids "
                                "(see `labeller canaries plant --queries-out`)", path=str(run))
        source = str(run)
    else:
        if isinstance(retriever, str):
            from labeller.retrieval import make_retriever

            retriever = make_retriever(retriever, list(docs.values()))
        ranked, texts, latency = retrieve(items, retriever, depth)
        source = f"retriever {retriever.name}"
    check = None
    if judge_obj is not None and rubric_obj is not None:
        check = run_labelling(lambda sender: _judge(items, docs, sender, rubric_obj, cache_dir), judge_obj, cache_dir)
    return probe(items, docs, ranked, k=k, source=source, hit_texts=texts, answers=answer_texts,
                 judge_check=check, latency=latency, judge=judge_obj.name if judge_obj else None,
                 rubric=f"{rubric_obj.name}@{rubric_obj.version}" if rubric_obj else None, depth=depth)


async def _judge(items, docs, judge, rubric, cache_dir) -> JudgeCheck:
    from labeller.cache import VerdictCache

    try:
        with VerdictCache(cache_dir) as cache:
            return await judge_canaries(items, docs, judge, rubric, cache)
    finally:
        await judge.aclose()
