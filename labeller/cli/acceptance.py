"""`labeller acceptance`: the release gate (`run`), the decision record (`decide`), side-by-side `compare`,
and, as before, the metrics report when called with --queries (no thresholds, so it cannot fail)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from labeller.cli.app import app

acceptance_app = typer.Typer(help="Acceptance test that can block a release: run a suite, decide, compare.",
                             invoke_without_command=True)
app.add_typer(acceptance_app, name="acceptance")


@acceptance_app.callback()
def acceptance(
    ctx: typer.Context,
    queries: Annotated[Optional[Path], typer.Option(help="Metrics report only: queries file with query_id and text.")] = None,
    run: Annotated[Optional[Path], typer.Option(help="A run (TREC or table) to score.")] = None,
    retriever: Annotated[Optional[str], typer.Option(help="A labeller retriever to call live (records latency).")] = None,
    corpus: Annotated[Optional[Path], typer.Option(help="Corpus for --retriever.")] = None,
    evidence: Annotated[Optional[Path], typer.Option(help="Required evidence: rows {query_id, doc_id[, evidence_id]}.")] = None,
    outcomes: Annotated[Optional[Path], typer.Option(help="Expected outcomes: rows {query_id, outcome}.")] = None,
    answers: Annotated[Optional[Path], typer.Option(help="Abstentions: rows {query_id, abstained}; without it, a query with no result abstains.")] = None,
    k: Annotated[int, typer.Option(min=1, help="Evidence must be in the top K.")] = 10,
    min_score: Annotated[Optional[float], typer.Option(help="Results scoring below this count as abstaining.")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Live calls in flight while timing latency.")] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Acceptance test. `labeller acceptance run --suite ...` is the release gate (exit 1 on any blocking
    failure); `labeller acceptance --queries ...` is the older metrics report, which has no thresholds."""
    if ctx.invoked_subcommand is not None:
        return
    if queries is None:
        print(ctx.get_help())
        raise typer.Exit(0)
    from labeller.acceptance import acceptance_test

    report = acceptance_test(queries=queries, run=run, retriever=retriever, corpus=corpus, evidence=evidence,
                             outcomes=outcomes, answers=answers, k=k, min_score=min_score, concurrency=concurrency)
    for warning in report.warnings:
        print(f"labeller: warning: {warning}", file=sys.stderr)
    print("labeller: note: this metrics report has no thresholds and cannot fail; the release gate is "
          "`labeller acceptance run --suite suite.toml --candidate candidate.toml` (docs/acceptance.md)",
          file=sys.stderr)
    if as_json:
        print(json.dumps(report.model_dump(), indent=2))
        return
    print(f"acceptance test of {report.source}: {report.n_queries} queries, "
          f"{len(report.answerable_queries)} answerable (relevance metrics use only these)")
    if report.coverage is not None:
        c = report.coverage
        print(f"required-evidence coverage@{c.k}: {c.mean_coverage:.3f} over {c.n_queries} queries "
              f"({c.fully_covered} fully covered)")
    if report.outcomes is not None:
        for o in report.outcomes.outcomes:
            rate = "n/a" if o.rate is None else f"{o.rate:.3f}"
            rule = "answered" if o.outcome == "answerable" else "abstained"
            print(f"  {o.outcome}: {o.correct}/{o.n} {rule} correctly ({rate})")
    if report.latency is not None:
        lat = report.latency
        print(f"latency: p50 {lat.p50_ms:.2f} ms, p95 {lat.p95_ms:.2f} ms (n={lat.n}, concurrency {lat.concurrency})")


def _finish(results) -> None:
    from labeller.acceptance.report import markdown
    from labeller.errors import GateFailedError

    print(markdown(results))
    failed = [r.candidate["name"] for r in results if not r.passed]
    if failed:
        raise GateFailedError(f"acceptance test failed for {', '.join(failed)} (see Failures above)")


@acceptance_app.command("run")
def run_command(
    suite: Annotated[Path, typer.Option(help="The suite file (TOML): cases, thresholds, conditions.")],
    candidate: Annotated[list[Path], typer.Option(help="A candidate file (TOML); repeat for a bake-off.")],
    out: Annotated[Optional[Path], typer.Option(help="Write the results as JSON (for decide and compare).")] = None,
    md: Annotated[Optional[Path], typer.Option(help="Write the report as Markdown.")] = None,
    html: Annotated[Optional[Path], typer.Option(help="Write the report as HTML.")] = None,
    triage: Annotated[Optional[Path], typer.Option(help="Triage file kept across reruns (created if absent).")] = None,
    redact: Annotated[bool, typer.Option(help="Keep no raw query text in any output.")] = False,
    grounding: Annotated[Optional[str], typer.Option(help="Answer judge 'package.module:function' for the grounding gate.")] = None,
    cache: Annotated[Optional[str], typer.Option(help="Verdict store of the suite's [grounding] answer judge "
                                                      "(directory or postgresql:// URL).")] = None,
) -> None:
    """Run a suite against one or more candidates; exit 1 on any blocking failure, 0 only when every gate holds."""
    from labeller.acceptance.job import ReportPaths, acceptance_run
    from labeller.acceptance.runner import RunOptions

    grounder = None
    if grounding is not None:
        from labeller.errors import BadInputError, ConfigError
        from labeller.retrieval.imported import load_object

        try:
            grounder = load_object(grounding)
        except ConfigError as exc:
            raise BadInputError(exc.detail.replace("retriever ", "answer judge ", 1), field="--grounding") from None
    results = acceptance_run(RunOptions(suite=suite, candidates=candidate, triage=triage, redact=redact,
                                        grounding=grounder, store=cache), ReportPaths(json=out, md=md, html=html))
    _finish(results)


@acceptance_app.command("compare")
def compare_command(
    results: Annotated[list[Path], typer.Argument(help="Results files of `acceptance run --out`.")],
    out: Annotated[Optional[Path], typer.Option(help="Write the side-by-side results as JSON.")] = None,
    md: Annotated[Optional[Path], typer.Option(help="Write the report as Markdown.")] = None,
    html: Annotated[Optional[Path], typer.Option(help="Write the report as HTML.")] = None,
) -> None:
    """Candidates from separate runs side by side; refused when their comparison conditions differ."""
    from labeller.acceptance.job import ReportPaths, compare_results

    _finish(compare_results(results, ReportPaths(json=out, md=md, html=html)))


@acceptance_app.command("decide")
def decide_command(
    results: Annotated[Path, typer.Option(help="The results file of `acceptance run --out`.")],
    decisions: Annotated[Path, typer.Option(help="The decision log (JSON lines, appended to).")],
    by: Annotated[str, typer.Option(help="Who decides.")],
    decision: Annotated[str, typer.Option(help="release, block or release_with_exceptions.")],
    disposition: Annotated[str, typer.Option(help="The reviewer's disposition (required to release with exceptions).")] = "",
) -> None:
    """Record the release decision beside the results, append-only."""
    from labeller.acceptance.decide import record_decision
    from labeller.errors import BadInputError

    if decision not in ("release", "block", "release_with_exceptions"):
        raise BadInputError(f"unknown decision '{decision}'; expected release, block or release_with_exceptions",
                            field="--decision")
    record = record_decision(results, decisions, by, decision, disposition)
    print(f"recorded: {record.decision} by {record.decided_by} at {record.decided_at} (results {record.verdict}, "
          f"suite {record.suite_digest})")
