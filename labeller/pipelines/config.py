"""Pipeline configs: small TOML files, validated into pydantic models.

Relative paths in a config resolve against the config file's directory, so a config and its
data travel together; relative paths in a `--set` override resolve against the current directory. Outputs go under `output.dir` (also relative to the config), which
`labeller run --out DIR` replaces, so a shipped config can run from an installed package.
`--set section.key=value` overrides any value, e.g. `--set retriever.name=bm25-broken`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from labeller.errors import BadInputError, ConfigError
from labeller.io.tomlfile import read_toml
from labeller.io.validation import validation_error


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Inputs(Section):
    queries: Path
    corpus: Path
    gold: Path | None = None
    sample: Path | None = None  # validate_prompt: a frozen sample (labeller annotate sample) as the fixed pairs


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


_PATHS = {("inputs", "queries"), ("inputs", "corpus"), ("inputs", "gold"), ("inputs", "sample"), ("output", "dir"), ("output", "cache"),
          ("baseline", "run"), ("judge", "prices")}
_RUBRIC_KEYS = {("", "old_rubric"), ("", "new_rubric"), ("judge", "rubric")}
_SECTIONS = ("inputs", "judge", "output", "retriever", "gate", "baseline", "evaluate")


def load_config(path: str | Path, overrides: list[str] | None = None, out_dir: str | Path | None = None) -> PipelineConfig:
    path = Path(path)
    data = read_toml(path, ConfigError, "pipeline config")
    _check_sections(data, path)
    _resolve_paths(data, path.resolve().parent)  # the file's own paths travel with it
    for item in overrides or []:
        _apply_override(data, item, path)
    _check_sections(data, path)
    _resolve_paths(data, Path.cwd())  # a --set value is typed at a prompt: relative to where it is typed
    if out_dir is not None:
        data.setdefault("output", {})["dir"] = str(Path(out_dir).resolve())
    try:
        config = PipelineConfig.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, path=str(path), error=ConfigError) from None
    _check_names(config, path)
    return config


def _check_sections(data: dict[str, Any], path: Path) -> None:
    for section in _SECTIONS:
        if not isinstance(data.get(section, {}), dict):
            raise ConfigError(f"expected a table ([{section}] with key = value lines), got {data[section]!r}",
                              path=str(path), field=section)


def _resolve_paths(data: dict[str, Any], base: Path) -> None:
    """Make relative paths (and rubrics given as .md paths) absolute against `base`; absolute ones stay."""
    for section, key in _PATHS | _RUBRIC_KEYS:
        holder = data if not section else data.get(section, {})
        value = holder.get(key)
        if isinstance(value, str) and value and ((section, key) in _PATHS or value.endswith(".md")):
            holder[key] = str((base / value).resolve())


def _check_names(cfg: PipelineConfig, path: Path) -> None:
    """Names that only a later step would look up (judge, retrievers, metrics, thresholds), checked now
    so that a typo is reported against the config file and its key before anything runs."""
    from labeller.evaluation.gate import parse_thresholds
    from labeller.evaluation.metrics import parse_metrics
    from labeller.judges.registry import parse_judge_spec
    from labeller.retrieval import available_retrievers

    def known_retriever(name: str) -> None:
        if name not in available_retrievers():
            raise ConfigError(f"unknown retriever '{name}'; expected one of: {', '.join(available_retrievers())}")

    checks = [("judge.spec", lambda: parse_judge_spec(cfg.judge.spec)),
              ("retriever.name", lambda: known_retriever(cfg.retriever.name)),
              ("evaluate.metrics", lambda: parse_metrics(cfg.evaluate.metrics)),
              ("evaluate.thresholds", lambda: parse_thresholds([f"{m}={t}" for m, t in cfg.evaluate.thresholds.items()],
                                                               parse_metrics(cfg.evaluate.metrics)))]
    if cfg.baseline.retriever is not None:
        checks.append(("baseline.retriever", lambda: known_retriever(cfg.baseline.retriever)))
    for field, check in checks:
        try:
            check()
        except ConfigError as exc:
            raise ConfigError(exc.detail, path=str(path), field=field) from None
        except BadInputError as exc:  # metric and threshold parsing speak of command-line flags
            raise ConfigError(exc.detail, path=str(path), field=field) from None


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
