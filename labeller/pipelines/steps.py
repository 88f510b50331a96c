"""Steps the pipelines share: retrieve a run, label pairs through the cache, write pairs files."""

from __future__ import annotations

from pathlib import Path

from labeller.errors import ConfigError, LabellingFailedError
from labeller.io.inputs import read_corpus, read_queries
from labeller.io.trec import format_run, top_k
from labeller.io.writing import write_rows, write_text
from labeller.labelling import LabelInputs, LabelOptions, LabelRun, label_job
from labeller.pipelines.config import PipelineConfig
from labeller.records import Doc, Pair, Query, RunEntry


def load_inputs(cfg: PipelineConfig) -> tuple[dict[str, Query], dict[str, Doc]]:
    return read_queries(cfg.inputs.queries), read_corpus(cfg.inputs.corpus)


def retrieve(name: str, queries: dict[str, Query], corpus: dict[str, Doc], depth: int,
             path: Path | None) -> list[RunEntry]:
    """Run the named retriever over every query and save the run in TREC format (unless `path` is None)."""
    from labeller.retrieval import make_retriever, make_run

    entries = make_run(make_retriever(name, corpus), queries, depth)
    if path is not None:
        save_run(entries, path, name)
    return entries


def save_run(entries: list[RunEntry], path: Path, tag: str) -> Path:
    return write_text(path, format_run(entries, tag=tag))


def write_pairs(pairs: list[Pair], path: Path) -> Path:
    return write_rows(path, (p.model_dump() for p in pairs))


def pairs_of(*runs: list[RunEntry], depth: int) -> list[Pair]:
    """The top `depth` pairs of each run, once each, in first-seen order."""
    seen: dict[tuple[str, str], Pair] = {}
    for entries in runs:
        for e in top_k(entries, depth):
            seen.setdefault((e.query_id, e.doc_id), Pair(query_id=e.query_id, doc_id=e.doc_id))
    return list(seen.values())


def label(cfg: PipelineConfig, pairs_path: Path, out_path: Path, *, rubric: str | None = None,
          dry_run: bool = False) -> LabelRun:
    """Label a pairs file with the configured judge, through the shared cache."""
    options = LabelOptions(concurrency=cfg.judge.concurrency, max_cost=cfg.judge.max_cost, dry_run=dry_run,
                           batch=cfg.label.batch, poll_interval=cfg.label.poll_interval,
                           samples=cfg.label.samples, aggregate=cfg.label.aggregate,
                           adaptive=cfg.label.samples_auto, grade_probs=cfg.label.grade_probs,
                           top_logprobs=cfg.label.top_logprobs, ray=None if dry_run else ray_options(cfg))
    try:
        return label_job(LabelInputs(queries=cfg.inputs.queries, corpus=cfg.inputs.corpus, pairs=pairs_path,
                                     rubric=rubric or cfg.judge.rubric, cache=cfg.cache_dir, out=out_path,
                                     base_url=cfg.judge.base_url, options=options, prices=cfg.judge.prices,
                                     temperature=cfg.judge.temperature, output_mode=cfg.judge.output_mode),
                         cfg.judge.spec)
    except LabellingFailedError as exc:
        # Some pairs failed after their retries; every other label is written and cached. The pipeline
        # goes on, reports the failures and fails at the end: a few stubborn pairs must not hide the reports.
        return exc.run  # type: ignore[attr-defined]


def ray_options(cfg: PipelineConfig):
    """The label step's `ray` keys as RayOptions (None: one process); the tuning keys alone are refused."""
    from labeller.distributed import RayOptions

    step = cfg.label
    if step.ray is None:
        if step.ray_workers is not None or step.ray_block_size != 1000:
            raise ConfigError("label.ray_workers and label.ray_block_size apply with label.ray", field="label.ray")
        return None
    return RayOptions(address=step.ray, workers=step.ray_workers, block_size=step.ray_block_size)


def failure_lines(*runs: LabelRun) -> list[str]:
    """Summary sentences for pairs (with --samples: samples) the judge could not grade (none when all were)."""
    lines = []
    for run in runs:
        if run.failures and run.stats.samples > 1:  # --samples: a failure is one sample, not one pair
            n, unlabelled = len(run.failures), run.stats.requested // run.stats.samples - len(run.labels)
            lines.append(f"FAILED: {n} {'sample' if n == 1 else 'samples'} (pair x sample) could not be graded "
                         f"after retries (reasons in {run.failures_path}); a pair is labelled from the samples "
                         f"that succeeded, and {unlabelled} {'pair' if unlabelled == 1 else 'pairs'} with no "
                         "successful sample left out, never given a grade. Rerun to retry them: everything "
                         "graded comes from the cache.")
        elif run.failures:
            n = len(run.failures)
            lines.append(f"FAILED: {n} {'pair' if n == 1 else 'pairs'} could not be labelled after retries "
                         f"(reasons in {run.failures_path}); left out, never given a grade. Rerun to retry "
                         "them: everything labelled comes from the cache.")
    return lines


def cost_text(cost: float | None) -> str:
    return "unknown (no price for this model; tokens are reported)" if cost is None else f"${cost:.4f}"


def paragraphs(lines: list[str]) -> str:
    """Plain sentences as escaped HTML paragraphs, for the summary sections of pipeline pages."""
    from markupsafe import escape

    return "".join(f"<p>{escape(line)}</p>" for line in lines)
