"""answers: retrieve the top K for each query, then judge the generated answers' claims against it and attribute
every failure to retrieval or generation (labeller.answers), with the gate of the config's [answers] section."""

from __future__ import annotations

from labeller.answers.inputs import answers_from, file_rows, passages_from_run, read_expectations
from labeller.answers.models import AnswerInputs, AnswerOptions, Thresholds
from labeller.answers.report import markdown, summary_lines
from labeller.answers.report_html import html_page
from labeller.answers.run import judge_answers
from labeller.errors import ConfigError
from labeller.io.writing import write_text
from labeller.labelling.models import LabelOptions
from labeller.pipelines.config import PipelineConfig
from labeller.pipelines.result import PipelineResult
from labeller.pipelines.steps import load_inputs, retrieve
from labeller.reports.ci import Check


def run_answers(cfg: PipelineConfig, config_path: str) -> PipelineResult:
    if cfg.inputs.answers is None:
        raise ConfigError("the answers pipeline needs inputs.answers: the generated answers to judge",
                          path=config_path, field="inputs.answers")
    if cfg.label.ray is not None:
        raise ConfigError("label.ray applies to relevance labels, not the answers pipeline yet; remove it",
                          path=config_path, field="label.ray")
    if cfg.label.grade_probs:  # the claim tasks have no grade to read a probability of
        raise ConfigError("label.grade_probs applies to relevance labels, not the answers pipeline (samples_auto "
                          "does: more verdicts only where a claim's first disagree); remove it", path=config_path,
                          field="label")
    out = cfg.output.dir
    queries, corpus = load_inputs(cfg)
    questions = {qid: q.text for qid, q in queries.items()}
    entries = retrieve(cfg.retriever.name, queries, corpus, cfg.retriever.depth, out / "run.trec")
    inputs = AnswerInputs(questions=questions, answers=answers_from(*file_rows(cfg.inputs.answers), questions),
                          passages=passages_from_run(entries, corpus, cfg.retriever.depth),
                          **read_expectations(questions, required=cfg.inputs.required, facts=cfg.inputs.facts,
                                              outcomes=cfg.inputs.outcomes))
    gate = cfg.answers.model_dump(exclude={"claim_rubric"})
    options = AnswerOptions(judge=cfg.judge.spec, base_url=cfg.judge.base_url, output_mode=cfg.judge.output_mode,
                            temperature=cfg.judge.temperature, store=str(cfg.cache_dir),
                            claim_rubric=None if cfg.answers.claim_rubric is None else str(cfg.answers.claim_rubric),
                            prices=None if cfg.judge.prices is None else str(cfg.judge.prices),
                            labelling=LabelOptions(concurrency=cfg.judge.concurrency, max_cost=cfg.judge.max_cost,
                                                   samples=cfg.label.samples, adaptive=cfg.label.samples_auto),
                            thresholds=Thresholds(**gate))
    report = judge_answers(inputs, options)
    html = write_text(out / "answers.html", html_page(report))
    md = write_text(out / "answers.md", markdown(report))
    write_text(out / "answers.json", report.model_dump_json(indent=2))
    requests = sum(stats.requests for stats in report.stats.values())
    checks = [Check(suite="answers", name=c.name, status="pass" if c.passed else "fail", message=c.detail)
              for c in report.checks]
    return PipelineResult(pipeline="answers", config=config_path, status="passed" if report.passed else "failed",
                          summary=[*summary_lines(report), f"Judge requests sent: {requests}."],
                          reports={"answer evaluation": str(html), "markdown": str(md)},
                          judge_requests=requests, checks=checks,
                          figures={"answers": len(report.answers), "claims": report.claims,
                                   "mean_groundedness": report.mean_groundedness, "failures": len(report.failures),
                                   **{f"attribution.{k}": v for k, v in report.counts.items()}})
