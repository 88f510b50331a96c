"""`labeller canaries plant|probe`: plant canary facts into a test copy of a corpus, then probe with them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from labeller.cli.app import STORE_HELP, app

canaries_app = typer.Typer(help="Plant canary facts into a test copy of a corpus and probe retrievers with them.",
                           no_args_is_help=True)
app.add_typer(canaries_app, name="canaries")


@canaries_app.command("new")
def new(
    corpus: Annotated[Path, typer.Option(help="The corpus the facts must not already occur in.")],
    out: Annotated[Path, typer.Option(help="The canary file to write (.toml); never overwritten.")],
    count: Annotated[int, typer.Option(min=1, help="How many canaries.")] = 3,
    seed: Annotated[str, typer.Option(help="Seed for the fact codes: the same seed gives the same codes.")] = "labeller",
) -> None:
    """Write a starter canary file with deterministic, corpus-unique facts (like X9-KITE-42) to edit."""
    from labeller.canaries import new_canaries_file

    canaries = new_canaries_file(corpus=corpus, out=out, count=count, seed=seed)
    facts = ", ".join(f.value for c in canaries for f in c.facts)
    print(f"wrote {len(canaries)} canaries to {out} (facts: {facts}); reword their questions and payloads",
          file=sys.stderr)


@canaries_app.command("plant")
def plant(
    corpus: Annotated[Path, typer.Option(help="The corpus to copy (.jsonl/.csv/.parquet with doc_id and text).")],
    canaries: Annotated[Path, typer.Option(help="Canary file (.toml with [[canary]] tables, or .jsonl).")],
    out: Annotated[Path, typer.Option(help="The test copy to write; its name must contain .test. or .canary.")],
    separate: Annotated[bool, typer.Option("--separate", help="Write the canary documents only, not the corpus.")] = False,
    queries_out: Annotated[Optional[Path], typer.Option(help="Also write the canary questions as a queries file.")] = None,
) -> None:
    """Write a test copy of the corpus with the canary documents added. Never writes a real corpus."""
    from labeller.canaries import plant_files

    result = plant_files(corpus=corpus, canaries=canaries, out=out, separate=separate, queries_out=queries_out)
    print(f"planted {result.canary_docs} documents of {result.canaries} canaries into {result.out}"
          f" ({result.corpus_docs} corpus documents copied)", file=sys.stderr)
    if result.queries_out:
        print(f"canary questions: {result.queries_out}", file=sys.stderr)


@canaries_app.command("probe")
def probe(
    canaries: Annotated[Path, typer.Option(help="The canary file that was planted.")],
    corpus: Annotated[Path, typer.Option(help="The planted test copy of the corpus.")],
    retriever: Annotated[Optional[str], typer.Option(help="A labeller retriever to run live (e.g. bm25).")] = None,
    run: Annotated[Optional[Path], typer.Option(help="A run (TREC or table) whose query ids are canary ids.")] = None,
    k: Annotated[int, typer.Option(min=1, help="Fact recall is scored on the top K passages.")] = 10,
    depth: Annotated[Optional[int], typer.Option(min=1, help="Retrieve this deep to report ranks past K.")] = None,
    answers: Annotated[Optional[Path], typer.Option(help="An agent's answers: rows {canary_id, answer}.")] = None,
    judge: Annotated[Optional[str], typer.Option(help="Also check the judge gives each canary document grade 5.")] = None,
    rubric: Annotated[str, typer.Option(help="Rubric for the judge check.")] = "general",
    cache: Annotated[Optional[str], typer.Option(help="For the judge check: " + STORE_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the full report as JSON.")] = False,
) -> None:
    """A retriever probe: where each canary ranked and the fact recall of what came back; exits 1 when any canary fails.

    For judge bias probes (length, stuffing, injection, near-duplicates) see `labeller probe`."""
    from labeller.canaries import probe_files
    from labeller.errors import GateFailedError

    report = probe_files(canaries=canaries, corpus=corpus, retriever=retriever, run=run, k=k, depth=depth,
                         answers=answers, judge=judge, rubric=rubric, cache_dir=cache)
    if as_json:
        print(json.dumps(report.model_dump(), indent=2))
    else:
        _print(report)
    if not report.passed:
        raise GateFailedError(f"canary probe failed: {report.n_canaries - report.n_passed} of "
                              f"{report.n_canaries} canaries failed")


def _print(report) -> None:
    print(f"canary probe of {report.source}: top {report.k}")
    for c in report.canaries:
        ranks = ", ".join(f"{d} rank {r if r is not None else '-'}" for d, r in c.ranks.items()) or "no document"
        line = f"  {'PASS' if c.passed else 'FAIL'} {c.canary_id} ({c.kind}): {ranks}; fact recall {c.passages.score:.2f}"
        if c.answer is not None:
            line += f"; answer {c.answer.score:.2f}"
        if c.judge_grades:
            line += "; judge " + ", ".join(f"{g if g is not None else 'failed'}" for g in c.judge_grades.values())
        print(line)
        for reason in c.reasons:
            print(f"      {reason}")
    if report.judge_check is not None:
        check = report.judge_check
        print(f"judge check ({report.judge}, rubric {report.rubric}): {check.new} graded now, "
              f"{check.cached} from the cache")
    if report.latency is not None:
        lat = report.latency
        print(f"latency: p50 {lat.p50_ms:.1f} ms, p95 {lat.p95_ms:.1f} ms (n={lat.n}, concurrency {lat.concurrency})")
    print(f"{report.n_passed} of {report.n_canaries} canaries passed: {'PASS' if report.passed else 'FAIL'}")
