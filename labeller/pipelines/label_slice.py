"""label_slice: label the top K of a retriever over a corpus slice, with a cost preview and a summary."""

from __future__ import annotations

from collections import Counter

from labeller.errors import ConfigError
from labeller.io.writing import write_text
from labeller.pipelines.config import PipelineConfig
from labeller.pipelines.result import PipelineResult
from labeller.pipelines.steps import (cost_text, failure_lines, label, load_inputs, pairs_of, retrieve,
                                     save_run, write_pairs)
from labeller.pipelines.slice_report import rubric_name, slice_page
from labeller.reports import display_path


def run_label_slice(cfg: PipelineConfig, config_path: str) -> PipelineResult:
    out = cfg.output.dir
    queries, corpus = load_inputs(cfg)
    entries = retrieve(cfg.retriever.name, queries, corpus, cfg.retriever.depth, None)
    if not entries:  # said against the config, not as "pairs.jsonl is empty" about a file labeller wrote
        raise ConfigError(f"retriever '{cfg.retriever.name}' returned nothing for any of the {len(queries)} queries "
                          f"of {cfg.inputs.queries}: nothing to label", path=config_path, field="retriever.name")
    save_run(entries, out / "run.trec", cfg.retriever.name)
    pairs_path = write_pairs(pairs_of(entries, depth=cfg.retriever.depth), out / "pairs.jsonl")

    preview = label(cfg, pairs_path, out / "labels.jsonl", dry_run=True).stats
    run = label(cfg, pairs_path, out / "labels.jsonl")
    s = run.stats
    grades = Counter(label.grade for label in run.labels)
    summary = [
        f"Preview: {preview.new} new pairs and {preview.cached} cached, estimated cost "
        f"{cost_text(preview.estimated_cost_usd)} ({preview.estimated_input_tokens or 0} input tokens).",
        f"Labelled {len(run.labels)} pairs of {len(queries)} queries (top {cfg.retriever.depth} of "
        f"{cfg.retriever.name}) with {cfg.judge.spec}: {s.new} new, {s.cached} from the cache, {s.failed} failed.",
        f"Judge requests sent: {s.requests}; cost {cost_text(s.cost_usd)}; "
        f"tokens in/out {s.input_tokens}/{s.output_tokens}.",
        "Grade distribution: " + ", ".join(f"{g}: {grades.get(g, 0)}" for g in range(1, 6)) + ".",
        *failure_lines(run),
    ]
    html = slice_page(f"label_slice: {cfg.retriever.name} top {cfg.retriever.depth}", summary, run.labels,
                      len(run.failures), queries, corpus,
                      subtitle=f"rubric {rubric_name(run.labels, cfg.judge.rubric)} · judge {cfg.judge.spec} · "
                               f"config {display_path(config_path)}")
    report = write_text(out / "report.html", html)
    return PipelineResult(pipeline="label_slice", config=config_path, status="failed" if run.failures else "passed",
                          summary=summary,
                          reports={"label slice": str(report), "labels": run.out_path or ""},
                          judge_requests=s.requests,
                          figures={"labelled": len(run.labels), "new": s.new, "cached": s.cached, "failed": s.failed,
                                   "cost_usd": s.cost_usd}).with_labelling_check(len(run.failures), s.requested)

