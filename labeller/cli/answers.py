"""`labeller answers judge`: are an answer's claims supported by what was retrieved, and whose fault a failure is."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from labeller.cli.app import STORE_HELP, app
from labeller.cli.exporting import ExperimentOpt, ExportOpt, prepared_exports, stderr
from labeller.cli.judging import (BaseUrlOpt, ConcurrencyOpt, MaxCostOpt, OutputModeOpt, PricesOpt, RpmOpt,
                                  TemperatureOpt, TimeoutOpt, TpmOpt)

answers_app = typer.Typer(help="Judge generated answers: claims against the retrieved evidence, attribution of "
                               "failures to retrieval or generation.", no_args_is_help=True)
app.add_typer(answers_app, name="answers")

_HELP = ("Split each answer into atomic claims and judge every claim against the passages retrieved for its query "
         "(supported, contradicted, not_supported), then attribute each query: missing_evidence, "
         "unsupported_generation, both, correct_without_evidence, ignored_context or ok. Claims and verdicts are "
         "cached by content: a rerun pays nothing. Exit 1 when a --min-*/--max-* threshold fails. See docs/answers.md.")


@answers_app.command("judge", help=_HELP, short_help="Judge answers' claims against the retrieved passages.")
def judge(
    queries: Annotated[Path, typer.Option(help="Queries file with query_id and text.")],
    answers: Annotated[Path, typer.Option(help="Answers table {query_id, answer, citations?, abstained?}.")],
    run: Annotated[Optional[Path], typer.Option(help="The retriever's run (TREC or a table); its top --depth "
                                                     "documents per query are the passages.")] = None,
    corpus: Annotated[Optional[Path], typer.Option(help="Corpus with doc_id and text (with --run).")] = None,
    contexts: Annotated[Optional[Path], typer.Option(help="Instead of --run: the passages themselves "
                                                          "{query_id, text, doc_id?, rank?}.")] = None,
    depth: Annotated[int, typer.Option(help="Top K documents of the run shown to the judge.")] = 5,
    required: Annotated[Optional[Path], typer.Option(help="Required evidence {query_id, doc_id}.")] = None,
    facts: Annotated[Optional[Path], typer.Option(help="Expected facts {query_id, facts, forbidden?} "
                                                       "(the canary fact form).")] = None,
    outcomes: Annotated[Optional[Path], typer.Option(help="Expected outcomes {query_id, outcome: answerable | "
                                                          "no_answer | access_denied}.")] = None,
    judge_spec: Annotated[str, typer.Option("--judge", help="openai:<model>, anthropic:<model> or "
                                                            "offline:lexical.")] = "offline:lexical",
    jury: Annotated[Optional[list[str]], typer.Option("--jury", help="Another judge of every claim (repeat for "
                                                      "more): the majority verdict wins, a tie not_supported.")] = None,
    escalate_to: Annotated[Optional[str], typer.Option(help="Claims --judge does not find supported are asked of "
                                                            "this judge, whose verdict wins.")] = None,
    claim_rubric: Annotated[Optional[Path], typer.Option(help="Claim rubric file (default: the shipped "
                                                              "rubrics/claims/claims.md).")] = None,
    min_groundedness: Annotated[Optional[float], typer.Option(help="Gate: mean groundedness at least this.")] = None,
    max_unsupported: Annotated[Optional[float], typer.Option(
        "--max-unsupported-rate", help="Gate: share of answers unsupported_generation or both at most this.")] = None,
    max_missing: Annotated[Optional[float], typer.Option(
        "--max-missing-evidence-rate", help="Gate: share missing_evidence, both or correct_without_evidence.")] = None,
    max_ignored: Annotated[Optional[float], typer.Option("--max-ignored-context-rate", help="Gate: share "
                                                                                           "ignored_context.")] = None,
    max_contradicted: Annotated[Optional[int], typer.Option(help="Gate: contradicted claims at most this.")] = None,
    min_fact_recall: Annotated[Optional[float], typer.Option(help="Gate: mean fact recall at least this.")] = None,
    max_forbidden: Annotated[Optional[int], typer.Option("--max-forbidden-hits", help="Gate: forbidden strings "
                                                                                      "found at most this.")] = None,
    min_abstention: Annotated[Optional[float], typer.Option("--min-abstention-accuracy", help="Gate: share of "
                                                            "answers abstaining exactly when expected.")] = None,
    max_failures: Annotated[int, typer.Option(help="Gate: claims/splits the judge could not give.")] = 0,
    report: Annotated[Optional[Path], typer.Option("--report", "--out", help="Directory for answers.md, "
                                                                            "answers.html and answers.json.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the full report as JSON.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Estimate requests, tokens and cost; "
                                                            "send nothing.")] = False,
    samples: Annotated[str, typer.Option(help="Verdicts per claim (majority; needs --temperature > 0); auto:N: two "
                                              "per claim, more only while they disagree, at most N.")] = "1",
    batch: Annotated[bool, typer.Option("--batch", help="Send the splits and claims through the provider's batch "
                                                        "API (half price, results within 24 h).")] = False,
    poll_interval: Annotated[float, typer.Option(min=0.01, help="With --batch: seconds between polls of a batch "
                                                                "in flight.")] = 30.0,
    temperature: TemperatureOpt = None,
    output_mode: OutputModeOpt = None,
    cache: Annotated[Optional[str], typer.Option(help=STORE_HELP)] = None,
    concurrency: ConcurrencyOpt = 16,
    max_cost: MaxCostOpt = None,
    base_url: BaseUrlOpt = None,
    rpm: RpmOpt = None,
    tpm: TpmOpt = None,
    prices: PricesOpt = None,
    timeout: TimeoutOpt = 60.0,
    export: ExportOpt = None,
    export_experiment: ExperimentOpt = None,
) -> None:
    from labeller.answers.job import AnswerFiles, answers_job

    from labeller.labelling.adaptive import parse_samples

    exports = prepared_exports(export, export_experiment)
    samples_max, adaptive = parse_samples(samples)

    options = _options(
        dict(judge=judge_spec, jury=jury or [], escalate_to=escalate_to,
             claim_rubric=None if claim_rubric is None else str(claim_rubric), store=cache,
             base_url=base_url, timeout=timeout, temperature=temperature, output_mode=output_mode,
             prices=None if prices is None else str(prices)),
        dict(concurrency=concurrency, max_cost=max_cost, requests_per_minute=rpm, tokens_per_minute=tpm,
             dry_run=dry_run, samples=samples_max, adaptive=adaptive, batch=batch, poll_interval=poll_interval),
        dict(min_groundedness=min_groundedness, max_unsupported_generation_rate=max_unsupported,
             max_missing_evidence_rate=max_missing, max_ignored_context_rate=max_ignored,
             max_contradicted=max_contradicted, min_fact_recall=min_fact_recall, max_forbidden_hits=max_forbidden,
             min_abstention_accuracy=min_abstention, max_failures=max_failures))
    files = AnswerFiles(queries=queries, answers=answers, corpus=corpus, run=run, depth=depth, contexts=contexts,
                        required=required, facts=facts, outcomes=outcomes)
    result, written = answers_job(files, options, report)

    def push(failed: bool) -> None:
        if exports and not dry_run:
            from labeller.evaluation.runs import run_name
            from labeller.exporters import finish
            from labeller.exporters.batches import answers_batch
            from labeller.tasks.claims import load_claim_rubric

            finish(exports, lambda: answers_batch(
                result, retriever=run_name(run) if run else "", rubric_version=load_claim_rubric(options.claim_rubric)
                .version, files=[queries, answers, run or contexts, required, facts, outcomes],
                reports=[p for p in written if p.suffix in (".html", ".md")]), stderr, job_failed=failed)

    _show(result, written, as_json, dry_run, push)


def _options(answer: dict, labelling: dict, thresholds: dict):
    """The one typed options object; a value out of range (a threshold above 1, a negative --max-cost) is named."""
    from pydantic import ValidationError

    from labeller.answers.models import AnswerOptions, Thresholds
    from labeller.io.validation import validation_error
    from labeller.labelling import LabelOptions

    try:
        return AnswerOptions(**answer, labelling=LabelOptions(**labelling), thresholds=Thresholds(**thresholds))
    except ValidationError as exc:
        raise validation_error(exc) from None


def _show(result, written, as_json: bool, dry_run: bool, push=lambda failed: None) -> None:
    from labeller.answers.report import summary_lines
    from labeller.errors import GateFailedError

    if as_json:
        print(result.model_dump_json(indent=2))
    elif dry_run:
        for step, stats in result.stats.items():
            cost = "unknown (no price)" if stats.estimated_cost_usd is None else f"${stats.estimated_cost_usd:.4f}"
            print(f"dry run, {step}: {stats.new} to send, {stats.cached} cached; estimated cost {cost}")
            for note in stats.estimate_notes:
                print(f"  {note}")
    else:
        for line in summary_lines(result):
            print(line)
        for path in written:
            print(f"wrote {path}")
    stopped = [stats for stats in result.stats.values() if stats.stopped_by or stats.budget_stopped]
    push(bool(stopped) or not result.passed)  # after the local outputs, before the exit code
    if stopped and not dry_run:  # the reports are written; what was judged is in the store
        from labeller.errors import BudgetExceededError, JudgeError

        if stopped[0].stopped_by:
            raise JudgeError(f"{stopped[0].stopped_by}; {len(result.failures)} claims or splits not judged")
        spent = sum(stats.cost_usd or 0 for stats in result.stats.values())
        raise BudgetExceededError(f"--max-cost reached after ${spent:.4f}; {len(result.failures)} claims or splits "
                                  "not sent (rerun with a larger budget: what was judged is cached)")
    if not dry_run and not result.passed:
        failed = [c.name for c in result.checks if not c.passed]
        raise GateFailedError(f"answer gate failed: {', '.join(failed)}")


@answers_app.command("agree", short_help="The answer judge against people: kappa, P/R/F1 of unsupported claims.",
                     help="Compare the claim verdicts of an `answers judge` report (answers.json) with a gold file "
                          "of claim verdicts {query_id, claim_id or claim, verdict} or answer labels {query_id, "
                          "grounded}: Cohen's kappa, accuracy, the confusion matrix, precision/recall/F1 of "
                          "unsupported-claim detection, and every disagreement with both sides' words. Exit 1 "
                          "below --min-kappa or --min-f1.")
def agree(
    report: Annotated[Path, typer.Option("--report", help="answers.json written by `labeller answers judge`.")],
    gold: Annotated[Path, typer.Option(help="Gold claim verdicts or answer labels.")],
    min_kappa: Annotated[Optional[float], typer.Option(help="Gate: kappa at least this.")] = None,
    min_f1: Annotated[Optional[float], typer.Option(help="Gate: F1 of unsupported-claim detection.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the full result as JSON.")] = False,
) -> None:
    from labeller.answers.agreement import agree_files
    from labeller.errors import GateFailedError

    result, lines, failed = agree_files(report, gold, min_kappa=min_kappa, min_f1=min_f1)
    print(result.model_dump_json(indent=2) if as_json else "\n".join(lines))
    if failed:
        raise GateFailedError(f"answer judge agreement below the bar: {', '.join(failed)}")
