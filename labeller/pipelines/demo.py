"""`labeller demo`: the shipped pipelines on the bundled sample (answer attribution among them), and an index page
of the reports."""

from __future__ import annotations

import os
from pathlib import Path

from labeller.io.writing import write_text
from labeller.pipelines import run_pipeline
from labeller.pipelines.result import PipelineResult
from labeller.pipelines.steps import paragraphs
from labeller.reports import banner, page
from labeller.shipped import shipped_dir

DEMO_PIPELINES = ("label_slice", "validate_prompt", "regression", "answers")
# the sample's downstream outcomes (the categorisation the baseline's retrieval leads to): the demo shows the link
DEMO_OVERRIDES = {"regression": [f"outcomes.file={shipped_dir('pipelines') / 'sample' / 'outcomes.jsonl'}"]}


def run_demo(out_dir: str | Path = "out/demo", *, judge: str | None = None,
             base_url: str | None = None) -> tuple[list[PipelineResult], Path]:
    """Run every shipped pipeline into `out_dir/<name>` (one shared cache) and write `out_dir/index.html`."""
    out = Path(out_dir).resolve()
    results = [run_pipeline(shipped_dir("pipelines") / f"{name}.toml", out_dir=out / name, judge=judge,
                            base_url=base_url, overrides=DEMO_OVERRIDES.get(name)) for name in DEMO_PIPELINES]
    sections = []
    for r in results:
        links = "".join(f'<li><a href="{_rel(path, out)}">{title}</a></li>' for title, path in r.reports.items()
                        if path.endswith(".html"))
        sections.append(("", str(banner(r.status == "passed", r.pipeline)) + paragraphs(r.summary)
                         + f"<ul>{links}</ul>"))
    judge_name = judge or "offline:lexical (a lexical-overlap heuristic, not an LLM)"
    index = write_text(out / "index.html", page("labeller demo on the bundled bookkeeping sample", sections,
                                                 subtitle=f"judge: {judge_name}"))
    return results, index


def _rel(path: str, base: Path) -> str:
    return os.path.relpath(path, base)
