"""`labeller annotate`: freeze a sample of pairs, then grade it blind in a local web page."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from labeller.cli.app import app

annotate_app = typer.Typer(help="Build a gold set: freeze a sample of pairs (sample), grade it blind with several "
                                "people in a local web page (serve), check progress and agreement (status).",
                           no_args_is_help=True)
app.add_typer(annotate_app, name="annotate")

Queries = Annotated[Path, typer.Option("--queries", help="Queries file (query_id, text, fields).")]
Corpus = Annotated[Path, typer.Option("--corpus", help="Corpus file (doc_id, text, fields).")]
SampleOpt = Annotated[Path, typer.Option("--sample", help="Frozen sample (from `labeller annotate sample`).")]
GoldOpt = Annotated[Path, typer.Option("--gold", help="Gold file the grades go to (JSONL); created if missing, "
                                                      "resumed if it exists.")]
Annotators = Annotated[str, typer.Option("--annotators", help="Comma-separated names of the people grading, "
                                                              "e.g. alice,bob.")]
Overlap = Annotated[float, typer.Option("--overlap", help="Share of pairs graded by two people (0-1).")]
LabelsScale = Annotated[Optional[str], typer.Option("--from-scale", metavar="LOW-HIGH", help="The --labels file's "
                                                   "own scale, shifted onto 1.. as `evaluate --from-scale` does "
                                                   "(TREC qrels: 0-3 unless given; tables: 1-5 unless given, e.g. "
                                                   "0-3 for a 0-based table).")]


@annotate_app.command("sample", help="Freeze a sample of pairs to grade, from exactly one of --pairs, --run (its "
                                     "top --depth) or --labels (a judge's labels; needed to stratify by judge "
                                     "grade or to take the most uncertain pairs first).")
def sample(
    out: Annotated[Path, typer.Option("--out", help="Sample file to write (.jsonl); never overwritten.")],
    pairs: Annotated[Optional[Path], typer.Option("--pairs", help="Pairs file (query_id, doc_id).")] = None,
    run: Annotated[Optional[Path], typer.Option("--run", help="A retriever's run (TREC or table).")] = None,
    labels: Annotated[Optional[Path], typer.Option("--labels", help="A judge's labels: `labeller label` output, or "
                                                   "any grades `evaluate --labels` reads (TREC qrels, ranx JSON, "
                                                   "a table with query_id, doc_id, grade); an `uncertainty`, "
                                                   "`grade_entropy`, `sample_agreement` or `sample_grades` column "
                                                   "feeds --plan uncertain.")] = None,
    from_scale: LabelsScale = None,
    depth: Annotated[int, typer.Option("--depth", help="With --run: the top k of each query.")] = 10,
    size: Annotated[int, typer.Option("--size", help="How many pairs.")] = 60,
    plan: Annotated[str, typer.Option("--plan", help="stratified (by judge grade and query), uniform, "
                                                     "uncertain (most uncertain first), or narrow (with --labels: "
                                                     "the pairs that narrow `evaluate --gold`'s corrected "
                                                     "intervals most for --size), or top:K (with --labels and "
                                                     "--top-run: every judged pair in the top K of those runs, "
                                                     "then narrow for the rest of --size; corrects MRR@k and hit "
                                                     "rate@k, k <= K), or queries:N (N whole random "
                                                     "queries, every candidate pair of each; plain `queries` "
                                                     "takes N from --size: the query design of `evaluate "
                                                     "--gold`).")] = "stratified",
    top_run: Annotated[Optional[list[Path]], typer.Option("--top-run", help="With --plan top:K: a run (TREC or "
                                                          "table) whose top K people grade whole (repeatable).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the draw.")] = 0,
    queries: Annotated[Optional[Path], typer.Option("--queries", help="Check ids against this queries file.")] = None,
    corpus: Annotated[Optional[Path], typer.Option("--corpus", help="Check ids against this corpus file.")] = None,
    rubric: Annotated[Optional[str], typer.Option("--rubric", help="Rubric people will grade against (name or "
                                                                   "path); default: the labels' rubric.")] = None,
) -> None:
    from labeller.annotate import SampleOptions, draw_sample

    frozen, pool = draw_sample(SampleOptions(out=out, pairs=pairs, run=run, labels=labels, depth=depth, size=size,
                                             plan=plan, seed=seed, queries=queries, corpus=corpus, rubric=rubric,
                                             top_runs=top_run or [], from_scale=from_scale))
    queries_n = len({r.query_id for r in frozen.rows})
    typer.echo(f"froze sample {frozen.sample_id}: {len(frozen.rows)} pairs over {queries_n} queries "
               f"({frozen.plan}) in {out}")
    if frozen.left_out_examples:
        typer.echo(f"left out {frozen.left_out_examples} pairs that are worked examples of the rubric (the judge "
                   "is shown them; they belong in a tuning file, not the gold set)")
    if frozen.plan == "top":
        typer.echo(top_split(frozen, pool))
    for warning in frozen.warnings:
        typer.echo(f"labeller: warning: {warning}", err=True)
    if len(frozen.rows) < size and frozen.plan != "queries":  # plan queries: the size only sets how many queries
        typer.echo(f"labeller: warning: only {len(frozen.rows)} candidate pairs; the sample holds all of them",
                   err=True)


def top_split(frozen, pool: int) -> str:
    """Plan top:K: how the sample splits into certain and random pairs, and how many random ones NDCG's interval
    needs (labeller.evaluation.corrected_spread)."""
    from labeller.annotate.plans import CERTAIN_STRATUM
    from labeller.evaluation.corrected_pool import recommended_random

    certain = sum(1 for r in frozen.rows if r.stratum and r.stratum.startswith(CERTAIN_STRATUM))
    drawn, rest = len(frozen.rows) - certain, pool - certain
    advice = recommended_random(rest)
    line = (f"{certain} pairs drawn with certainty (the --top-run runs' top positions) and {drawn} at random from the "
            f"other {rest} pool pairs")
    if drawn >= advice:
        return line
    return (line + f"; NDCG's and recall's intervals lean on the random ones, and below about {advice} "
            f"({advice / rest:.0%} of the rest) they are wide: --size {certain + advice} draws them")


@annotate_app.command("serve", help="Start the grading page on 127.0.0.1: each person picks their name and grades "
                                    "their pairs blind (keys 1-5, c can't judge, l later); every grade is saved "
                                    "to --gold at once. Agreement and adjudication views on the same page.")
def serve(
    sample_path: SampleOpt, gold: GoldOpt, queries: Queries, corpus: Corpus, annotators: Annotators,
    overlap: Overlap = 0.2,
    rubric: Annotated[Optional[str], typer.Option("--rubric", help="Rubric to show (default: the sample's).")] = None,
    labels: Annotated[Optional[Path], typer.Option("--labels", help="Judge labels for the adjudication view "
                                                                    "(never shown while grading): any file "
                                                                    "`annotate sample --labels` takes.")] = None,
    from_scale: LabelsScale = None,
    note_required: Annotated[Optional[str], typer.Option("--note-required", help="Grades that need a note: all, "
                                                         "none or e.g. 1,2 (default: the rubric's note_required, "
                                                         "else all).")] = None,
    open_review: Annotated[bool, typer.Option("--open-review", help="Show disagreements and adjudication before "
                                                                    "the blind pass is finished.")] = False,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port (0: any free port).")] = 8765,
) -> None:
    from labeller.annotate import Session
    from labeller.annotate.server import AnnotationServer
    from labeller.errors import BadInputError

    session = Session(sample=sample_path, gold=gold, queries=queries, corpus=corpus,
                      annotators=annotators.split(","), overlap=overlap, rubric=rubric, labels=labels,
                      note_required=note_required, open_review=open_review, from_scale=from_scale)
    try:
        server = AnnotationServer(session, host, port)
    except OSError as exc:
        raise BadInputError(f"cannot listen on {host}:{port} ({exc.strerror}); choose another --port") from None
    for warning in session.warnings + session.label_warnings:
        typer.echo(f"labeller: warning: {warning}", err=True)
    print(f"labeller annotate: {server.url} serving sample {session.sample.sample_id} "
          f"({len(session.sample.rows)} pairs) to {', '.join(session.assignment)}; grades go to {gold}. "
          "Ctrl+C stops; nothing is lost.", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:  # the usual way to stop a local server, not an error
        print(f"labeller annotate: stopped; every grade given is in {gold}", file=sys.stderr)
    finally:
        server.server_close()


@annotate_app.command("status", help="Print progress per annotator and human-human agreement of a gold file "
                                     "being built (the page's agreement view, for scripts).")
def status(
    sample_path: SampleOpt, gold: GoldOpt, queries: Queries, corpus: Corpus, annotators: Annotators,
    overlap: Overlap = 0.2,
    rubric: Annotated[Optional[str], typer.Option("--rubric", help="Rubric (default: the sample's).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    from labeller.annotate import Session
    from labeller.errors import BadInputError

    if not gold.exists():
        raise BadInputError("file not found; expected the gold file `labeller annotate serve` writes", path=str(gold))
    view = Session(sample=sample_path, gold=gold, queries=queries, corpus=corpus, annotators=annotators.split(","),
                   overlap=overlap, rubric=rubric).agreement()
    if as_json:
        typer.echo(json.dumps(view))
        return
    for p in view["progress"]:
        typer.echo(f"{p['annotator']}: {p['graded'] + p['cant_judge']}/{p['assigned']} done "
                   f"({p['graded']} graded, {p['cant_judge']} can't judge, {p['later']} later)")
    if view["enough"]:
        typer.echo(f"shared pairs: {view['shared_pairs']}; kappa {view['kappa']:.3f}, quadratic kappa "
                   f"{view['kappa_quadratic']:.3f}, ordinal alpha {view['alpha_ordinal']:.3f}")
    else:
        typer.echo(f"not enough overlap yet: {view['shared_pairs']} shared pairs (figures from {view['min_shared']})")


@annotate_app.command("claims", help="Judge the claims of an `answers judge` report blind in a local web page (the "
                                     "judge's verdicts are never shown); each judgment is appended to --gold, which "
                                     "`labeller answers agree` reads. A gold file that exists is resumed.")
def claims(
    report: Annotated[Path, typer.Option("--report", help="answers.json written by `labeller answers judge`.")],
    gold: GoldOpt,
    annotator: Annotated[str, typer.Option("--annotator", help="The name of the person judging.")],
    host: Annotated[str, typer.Option(help="Address to bind (keep 127.0.0.1 unless you mean to share it).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port (0: any free one).")] = 8766,
) -> None:
    from labeller.annotate.claims import ClaimSession, load_report
    from labeller.annotate.claims_server import ClaimServer

    server = ClaimServer(ClaimSession(load_report(report), gold, annotator), host, port)
    print(f"judging claims at {server.url} (Ctrl-C to stop; judgments go to {gold})", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
