"""validate_prompt: label the gold pairs with the old and the new rubric, compare both with gold, gate.

With `inputs.sample` (a sample frozen by `labeller annotate sample`), the pairs labelled are the
sample's, the same every time the rubric or model changes; the gold file is then usually the one
the annotation page wrote for that sample.
"""

from __future__ import annotations

from labeller.errors import ConfigError
from labeller.io.gold import read_grades
from labeller.io.inputs import read_corpus, read_queries
from labeller.io.writing import write_text
from labeller.pipelines.config import PipelineConfig, gold_scale
from labeller.pipelines.result import PipelineResult
from labeller.pipelines.prompt_report import prompt_page
from labeller.pipelines.slice_report import rubric_name
from labeller.pipelines.steps import failure_lines, label, write_pairs
from labeller.records import Pair
from labeller.reports import display_path
from labeller.reports.ci import prompt_gate_check


def run_validate_prompt(cfg: PipelineConfig, config_path: str) -> PipelineResult:
    from labeller.agreement import AgreeOptions, agree

    if not (cfg.old_rubric and cfg.new_rubric and cfg.inputs.gold):
        raise ConfigError("validate_prompt needs old_rubric, new_rubric and inputs.gold", path=config_path)
    out = cfg.output.dir
    scale = gold_scale(cfg)
    if cfg.inputs.sample is not None:
        from labeller.annotate import read_sample

        pairs = [Pair(query_id=r.query_id, doc_id=r.doc_id) for r in read_sample(cfg.inputs.sample).rows]
    else:  # every gold format `agree` reads: gold tables, TREC qrels, a BEIR qrels/<split>.tsv, ranx JSON
        gold = read_grades(cfg.inputs.gold, role="gold", from_scale=scale).rows
        pairs = list({(g.query_id, g.doc_id): Pair(query_id=g.query_id, doc_id=g.doc_id) for g in gold}.values())
    pairs_path = write_pairs(pairs, out / "gold-pairs.jsonl")
    old = label(cfg, pairs_path, out / "labels-old.jsonl", rubric=cfg.old_rubric)
    new = label(cfg, pairs_path, out / "labels-new.jsonl", rubric=cfg.new_rubric)
    result = agree(AgreeOptions(labels=new.out_path, gold=cfg.inputs.gold, baseline=old.out_path,
                                queries=cfg.inputs.queries, corpus=cfg.inputs.corpus, rubric=cfg.new_rubric,
                                from_scale=scale, relevant_from=cfg.gate.relevant_from, min_kappa=cfg.gate.min_kappa,
                                max_drop=cfg.gate.max_drop, report_dir=out / "agreement"))
    gate = result.gate
    ci = gate.ci
    summary = [
        f"Judge {cfg.judge.spec} on {result.n} gold pairs: kappa old {gate.old:.3f} → new {gate.new:.3f} "
        f"(difference {gate.difference:+.3f}, 95% CI {ci.low:+.3f} to {ci.high:+.3f}, queries resampled).",
        f"The change fixed {len(gate.fixed)} pairs and broke {len(gate.broken)}; verdict: {gate.verdict.upper()} "
        f"({gate.change}).",
        *gate.reasons,
        *result.warnings,
        f"Judge requests sent: {old.stats.requests + new.stats.requests}.",
        *failure_lines(old, new),
    ]
    old_result = agree(AgreeOptions(labels=old.out_path, gold=cfg.inputs.gold, from_scale=scale,
                                    relevant_from=cfg.gate.relevant_from))  # old's intervals
    queries = read_queries(cfg.inputs.queries) if cfg.inputs.queries else None
    corpus = read_corpus(cfg.inputs.corpus) if cfg.inputs.corpus else None
    html = prompt_page(result=result, old_result=old_result, old_name=rubric_name(old.labels, cfg.old_rubric),
                       new_name=rubric_name(new.labels, cfg.new_rubric), summary=summary, new_labels=new.labels,
                       queries=queries, corpus=corpus,
                       subtitle=f"judge {cfg.judge.spec} · gold {display_path(cfg.inputs.gold)} · config "
                                f"{display_path(config_path)}")
    report = write_text(out / "report.html", html)
    return PipelineResult(pipeline="validate_prompt", config=config_path,
                          status="passed" if gate.verdict == "pass" and not (old.failures or new.failures)
                          else "failed", summary=summary,
                          reports={"prompt change": str(report), "agreement": str(out / "agreement" / "agreement.html")},
                          judge_requests=old.stats.requests + new.stats.requests,
                          figures={"kappa_old": gate.old, "kappa_new": gate.new, "n": result.n,
                                   "fixed": len(gate.fixed), "broken": len(gate.broken)},
                          checks=[prompt_gate_check(gate)]).with_labelling_check(
        len(old.failures) + len(new.failures), old.stats.requested + new.stats.requested)

