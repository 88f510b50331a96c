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
    canaries: Annotated[Path, typer.Option(help="Canary file (.toml with [[canary]] tables, or .jsonl).")],
    corpus: Annotated[Optional[Path], typer.Option(help="The corpus to copy (.jsonl/.csv/.parquet with doc_id and text).")] = None,
    out: Annotated[Optional[Path], typer.Option(help="The test copy to write; its name must contain .test. or .canary.")] = None,
    separate: Annotated[bool, typer.Option("--separate", help="Write the canary documents only, not the corpus.")] = False,
    queries_out: Annotated[Optional[Path], typer.Option(help="Also write the canary questions as a queries file.")] = None,
    store_corpus: Annotated[Optional[list[str]], typer.Option(
        metavar="STORE=PATH", help="One store's own corpus file (repeatable; with --store-out, instead of --corpus/--out): "
                                   "each store's canary documents go into a test copy of its own file.")] = None,
    store_out: Annotated[Optional[list[str]], typer.Option(
        metavar="STORE=PATH", help="The test copy of that store's corpus (repeatable).")] = None,
) -> None:
    """Write a test copy of the corpus (or of each store's corpus) with the canary documents added. Never writes a real corpus."""
    from labeller.canaries.api import plant_requested

    results = plant_requested(canaries=canaries, corpus=corpus, out=out, separate=separate, queries_out=queries_out,
                              store_corpus=store_corpus, store_out=store_out)
    for result in results:
        where = f"store {result.store}: " if result.store else ""
        print(f"{where}planted {result.canary_docs} documents of {result.canaries} canaries into {result.out}"
              f" ({result.corpus_docs} corpus documents copied)", file=sys.stderr)
    if queries_out is not None:
        print(f"canary questions: {queries_out}", file=sys.stderr)


@canaries_app.command("probe")
def probe(
    canaries: Annotated[Path, typer.Option(help="The canary file that was planted.")],
    corpus: Annotated[Optional[list[Path]], typer.Option(
        help="The planted test copy; repeat it for one file per store. Needed to rank and for --judge.")] = None,
    retriever: Annotated[Optional[str], typer.Option(help="A labeller retriever to run live (e.g. bm25).")] = None,
    run: Annotated[Optional[Path], typer.Option(help="A run (TREC or table) whose query ids are canary ids.")] = None,
    k: Annotated[int, typer.Option(min=1, help="Fact recall is scored on the top K passages.")] = 10,
    depth: Annotated[Optional[int], typer.Option(min=1, help="Retrieve this deep to report ranks past K.")] = None,
    answers: Annotated[Optional[Path], typer.Option(help="The system's answers: rows {canary_id, answer[, tool_calls]}.")] = None,
    output: Annotated[Optional[Path], typer.Option(
        help="A whole workflow's output (a log or answer blob, text): every canary is scored on it, no run needed.")] = None,
    judge: Annotated[Optional[str], typer.Option(help="Also check the judge gives each canary document grade 5.")] = None,
    rubric: Annotated[str, typer.Option(help="Rubric for the judge check.")] = "general",
    cache: Annotated[Optional[str], typer.Option(help="For the judge check: " + STORE_HELP)] = None,
    min_mean_score: Annotated[Optional[float], typer.Option(
        help="Suite criterion: the canaries' mean score must reach this (overrides [suite] mean_score).")] = None,
    score_floor: Annotated[Optional[float], typer.Option(
        help="Suite criterion: every canary's score must reach this (overrides [suite] score_floor).")] = None,
    floor: Annotated[Optional[list[str]], typer.Option(
        metavar="CANARY=SCORE", help="Suite criterion: this canary's score must reach SCORE (repeatable).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the full report as JSON.")] = False,
) -> None:
    """A canary probe: where each canary ranked, fact recall of what came back and of the answers, each
    canary's score; exits 1 when the suite's criteria fail (by default: any canary fails).

    For judge bias probes (length, stuffing, injection, near-duplicates) see `labeller probe`."""
    from labeller.canaries import CanaryProbeOptions, probe_files
    from labeller.canaries.api import suite_criteria
    from labeller.errors import GateFailedError

    report = probe_files(CanaryProbeOptions(
        canaries=canaries, corpus=corpus or None, retriever=retriever, run=run, k=k, depth=depth, answers=answers,
        output=output, judge=judge, rubric=rubric, cache_dir=cache,
        criteria=suite_criteria(min_mean_score, score_floor, floor)))
    if as_json:
        print(json.dumps(report.model_dump(), indent=2))
    else:
        _print(report)
    if not report.passed:
        failed = [c for c in report.suite.criteria if not c.passed]
        raise GateFailedError(f"canary probe failed: {'; '.join(_criterion(c) for c in failed)}")


def _criterion(c) -> str:
    if c.name == "all_pass":
        return f"{int(c.required - c.actual)} of {int(c.required)} canaries failed"
    return f"{c.name} {c.actual:.3f} below {c.required:.3f}"


def _print(report) -> None:
    ranked = "" if report.canaries and all(c.passages is None for c in report.canaries) else f": top {report.k}"
    print(f"canary probe of {report.source}{ranked}")
    for c in report.canaries:
        ranks = ", ".join(f"{d} rank {r if r is not None else '-'}" for d, r in c.ranks.items()) or "no document"
        parts = [f"{ranks}; fact recall {c.passages.score:.2f}"] if c.passages is not None else []
        if c.answer is not None:
            parts.append(f"answer {c.answer.score:.2f}")
        if c.checked is not None:
            parts.append("check shown" if c.checked else "check NOT shown")
        if c.judge_grades:
            parts.append("judge " + ", ".join(f"{g if g is not None else 'failed'}" for g in c.judge_grades.values()))
        parts.append(f"score {c.score:.2f}")
        line = f"  {'PASS' if c.passed else 'FAIL'} {c.canary_id} ({c.kind}): " + "; ".join(parts)
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
    suite = report.suite
    print(f"suite: mean score {suite.mean_score:.3f}, lowest {suite.lowest_score:.3f}")
    for c in suite.criteria:
        if c.name != "all_pass":
            print(f"  {'PASS' if c.passed else 'FAIL'} {c.name}: {c.actual:.3f} (required {c.required:.3f})")
    print(f"{report.n_passed} of {report.n_canaries} canaries passed: {'PASS' if report.passed else 'FAIL'}")
