"""Pipeline configs: small TOML files, validated into pydantic models.

Relative paths in a config resolve against the config file's directory, so a config and its
data travel together. Outputs go under `output.dir` (also relative to the config), which
`labeller run --out DIR` replaces, so a shipped config can run from an installed package.
`--set section.key=value` overrides any value, e.g. `--set retriever.name=bm25-broken`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from labeller.errors import ConfigError
from labeller.io.tomlfile import read_toml


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Inputs(Section):
    queries: Path
    corpus: Path
    gold: Path | None = None


class RetrieverConfig(Section):
    name: str = "bm25"
    depth: int = Field(10, ge=1)


class JudgeConfig(Section):
    spec: str = "offline:lexical"
    rubric: str = "general"
    base_url: str | None = None
    concurrency: int = Field(16, ge=1)
    max_cost: float | None = None
    prices: Path | None = None


class OutputConfig(Section):
    dir: Path = Path("out")
    cache: Path | None = None  # default: <dir>/../.labeller-cache, shared by every pipeline


class GateConfig(Section):
    min_kappa: float | None = None
    max_drop: float = 0.02
    relevant_from: int = Field(3, ge=2, le=5)


class BaselineConfig(Section):
    retriever: str | None = None  # build the baseline run with this retriever ...
    run: Path | None = None  # ... or read it from a run file


class EvaluateConfig(Section):
    metrics: list[str] = Field(default_factory=lambda: ["ndcg@10", "recall@10", "mrr@10"])
    relevant_from: int = Field(3, ge=2, le=5)
    thresholds: dict[str, float] = Field(default_factory=dict)
    alpha: float = 0.05


class PipelineConfig(Section):
    pipeline: Literal["label_slice", "validate_prompt", "regression"]
    description: str = ""
    inputs: Inputs
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    output: OutputConfig = Field(default_factory=OutputConfig)
    retriever: RetrieverConfig = Field(default_factory=RetrieverConfig)
    # validate_prompt: the old and new rubric (a path or a shipped name)
    old_rubric: str | None = None
    new_rubric: str | None = None
    gate: GateConfig = Field(default_factory=GateConfig)
    # regression
    baseline: BaselineConfig = Field(default_factory=BaselineConfig)
    evaluate: EvaluateConfig = Field(default_factory=EvaluateConfig)

    @property
    def cache_dir(self) -> Path:
        return self.output.cache or self.output.dir.parent / ".labeller-cache"


_PATHS = {("inputs", "queries"), ("inputs", "corpus"), ("inputs", "gold"), ("output", "dir"), ("output", "cache"),
          ("baseline", "run"), ("judge", "prices")}
_RUBRIC_KEYS = {("", "old_rubric"), ("", "new_rubric"), ("judge", "rubric")}


def load_config(path: str | Path, overrides: list[str] | None = None, out_dir: str | Path | None = None) -> PipelineConfig:
    path = Path(path)
    data = read_toml(path, ConfigError, "pipeline config")
    for item in overrides or []:
        _apply_override(data, item, path)
    base = path.resolve().parent
    for section, key in _PATHS | _RUBRIC_KEYS:
        holder = data if not section else data.get(section, {})
        value = holder.get(key)
        if isinstance(value, str) and value and (section, key) in _PATHS:
            holder[key] = str(base / value)
        elif isinstance(value, str) and value.endswith(".md") and not Path(value).is_absolute():
            holder[key] = str(base / value)  # a rubric given as a file path travels with the config
    if out_dir is not None:
        data.setdefault("output", {})["dir"] = str(Path(out_dir).resolve())
    try:
        return PipelineConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"{err['msg']}", path=str(path), field=".".join(map(str, err["loc"]))) from None


def _apply_override(data: dict[str, Any], item: str, path: Path) -> None:
    key, sep, raw = item.partition("=")
    if not sep or not key:
        raise ConfigError(f"override '{item}' is not KEY=VALUE (e.g. retriever.name=bm25-weak)", path=str(path))
    try:
        value: Any = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    *parents, leaf = key.split(".")
    target = data
    for part in parents:
        target = target.setdefault(part, {})
        if not isinstance(target, dict):
            raise ConfigError(f"override '{item}': '{part}' is not a section", path=str(path))
    target[leaf] = value
