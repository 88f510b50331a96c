"""The jobs users bring labeller, as pipelines driven by small TOML configs.

    from labeller.pipelines import run_pipeline
    result = run_pipeline("pipelines/regression.toml")

`labeller run CONFIG` and `labeller demo` call these.
"""

from __future__ import annotations

from pathlib import Path

from labeller.io.columns import column_mapping
from labeller.io.outputs import check_outputs, existing_files, guard_inputs
from labeller.judges.registry import require_api_key
from labeller.pipelines.config import PipelineConfig, check_rubrics, load_config
from labeller.pipelines.result import PipelineResult


def run_pipeline(config_path: str | Path, *, overrides: list[str] | None = None, out_dir: str | Path | None = None,
                 judge: str | None = None, base_url: str | None = None, promote: bool = False) -> PipelineResult:
    """Run one pipeline config. `judge`/`base_url` replace the config's judge (e.g. a real LLM)."""
    cfg = pipeline_config(config_path, overrides=overrides, out_dir=out_dir, judge=judge, base_url=base_url)
    check_rubrics(cfg, config_path)
    require_api_key(cfg.judge.spec, cfg.judge.base_url)  # before anything is retrieved or written
    inputs = existing_files([config_path, cfg.inputs.queries, cfg.inputs.corpus, cfg.inputs.gold, cfg.baseline.run,
                             cfg.retriever.run, cfg.judge.prices, cfg.judge.rubric, cfg.old_rubric, cfg.new_rubric,
                             cfg.inputs.answers, cfg.inputs.required, cfg.inputs.facts, cfg.inputs.outcomes,
                             cfg.answers.claim_rubric])
    check_outputs(inputs=inputs, dirs={"--out" if out_dir is not None else "output.dir": cfg.output.dir,
                                       "the cache (output.cache)": cfg.cache_dir})
    cfg.output.dir.mkdir(parents=True, exist_ok=True)
    # the files a pipeline writes deep inside must never replace one of its inputs; [inputs] columns as --columns
    with guard_inputs(inputs), column_mapping(cfg.inputs.columns):
        return _run(cfg, str(config_path), promote)


def pipeline_config(config_path: str | Path, *, overrides: list[str] | None = None, out_dir: str | Path | None = None,
                    judge: str | None = None, base_url: str | None = None) -> PipelineConfig:
    """The config `run_pipeline` runs with these arguments (`labeller run` reads its [export] before the run)."""
    extra = list(overrides or [])
    if judge:
        extra.append(f"judge.spec={judge}")
    if base_url:
        extra.append(f"judge.base_url={base_url}")
    return load_config(config_path, extra, out_dir)


def _run(cfg: PipelineConfig, config_path: str, promote: bool) -> PipelineResult:
    if cfg.pipeline == "label_slice":
        from labeller.pipelines.label_slice import run_label_slice

        return run_label_slice(cfg, config_path)
    if cfg.pipeline == "answers":
        from labeller.pipelines.answers import run_answers

        return run_answers(cfg, config_path)
    if cfg.pipeline == "validate_prompt":
        from labeller.pipelines.validate_prompt import run_validate_prompt

        return run_validate_prompt(cfg, config_path)
    from labeller.pipelines.regression import run_regression

    return run_regression(cfg, config_path, promote=promote)


__all__ = ["PipelineConfig", "PipelineResult", "load_config", "pipeline_config", "run_pipeline"]
