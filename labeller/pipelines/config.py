"""Pipeline configs: small TOML files, validated into pydantic models.

Relative paths in a config resolve against the config file's directory, so a config and its
data travel together; relative paths in a `--set` override resolve against the current directory. Outputs go under `output.dir` (also relative to the config), which
`labeller run --out DIR` replaces, so a shipped config can run from an installed package.
`--set section.key=value` overrides any value, e.g. `--set retriever.name=bm25-broken`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from labeller.errors import BadInputError, ConfigError
from labeller.io.tomlfile import read_toml
from labeller.io.validation import validation_error
from labeller.store.registry import check_spec, is_url


class Section(BaseModel):
    # Every number must be a real, finite number: TOML allows nan and inf, which would slip past
    # every range check below (nan < 0 is false) and reach the gate as a threshold nothing exceeds.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


# Numbers are strict: TOML (and a --set value) says 1 or 1.0, and `max_cost = true` must not pass
# as a budget of $1, nor `depth = "5"` as five. Integers still count as floats (`max_cost = 2`).
Count = Annotated[int, Field(strict=True, ge=1)]
Number = Annotated[float, Field(strict=True)]
Drop = Annotated[float, Field(strict=True, ge=0)]  # a threshold: how far a figure may fall
Grade = Annotated[int, Field(strict=True, ge=2, le=5)]  # relevant from this grade (1 is not relevant)


class Inputs(Section):
    queries: Path
    corpus: Path
    gold: Path | None = None
    # The gold file's own scale, as `labeller agree --from-scale` takes it: "0-3" (TREC/BEIR qrels default
    # to 0-3 already; a 0-3 table needs it) or "gold=0-3". Grades are shifted onto 1.., never clipped.
    from_scale: str | None = None
    columns: dict[str, str] = Field(default_factory=dict)  # columns named otherwise: {query_id = "qid"}
    sample: Path | None = None  # validate_prompt: a frozen sample (labeller annotate sample) as the fixed pairs
    # A BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv): fills queries, corpus and gold not given.
    beir: Path | None = None
    beir_split: str = "test"
    # answers: the generated answers and what they are held against (docs/answers.md)
    answers: Path | None = None
    required: Path | None = None
    facts: Path | None = None
    outcomes: Path | None = None


class RetrieverConfig(Section):
    name: str = "bm25"  # a registered name, or your own system as an import path: "package.module:function"
    depth: Count = 10
    run: Path | None = None  # today's run as a file (TREC, table or ranx JSON) instead of retrieving


class JudgeConfig(Section):
    spec: str = "offline:lexical"
    rubric: str = "general"
    base_url: str | None = None
    output_mode: str | None = None  # json_schema (default), json_object, tool or text: docs/local-servers.md
    concurrency: Count = 16
    max_cost: Drop | None = None  # USD
    prices: Path | None = None
    temperature: Annotated[Number, Field(ge=0, le=2)] | None = None  # OpenAI-compatible judges (--temperature)


class LabelConfig(Section):
    """How pairs are bought: `batch = true` sends them through the provider's batch API (half price)."""

    batch: bool = False
    poll_interval: float = Field(30.0, gt=0)  # seconds between polls of a batch in flight
    samples: Count = 1  # self-consistency (--samples): verdicts per pair, collapsed by `aggregate`
    aggregate: Literal["median", "majority"] = "median"
    samples_auto: bool = False  # --samples auto:N with N = samples: more only where the first are unsure
    grade_probs: bool = False  # --grade-probs: each grade's probability from the judge's token log-probabilities
    top_logprobs: int = Field(10, ge=1, le=20)  # --top-logprobs
    # --ray [ADDRESS]: judge the pairs on a Ray cluster ("local" starts one here; docs/ray.md); the dry-run preview
    # stays in this process
    ray: str | None = None
    ray_workers: Count | None = None  # --ray-workers
    ray_block_size: Count = 1000  # --ray-block-size


class OutputConfig(Section):
    dir: Path = Path("out")
    cache: str | None = None  # a directory or a postgresql:// URL; default: $LABELLER_CACHE, else <dir>/../.labeller-cache


class GateConfig(Section):
    min_kappa: Annotated[Number, Field(ge=-1, le=1)] | None = None
    max_drop: Drop = 0.02
    relevant_from: Grade = 3


class BaselineConfig(Section):
    retriever: str | None = None  # build the baseline run with this retriever ...
    run: Path | None = None  # ... or read it from a run file


class EvaluateConfig(Section):
    metrics: list[str] = Field(default_factory=lambda: ["ndcg@10", "recall@10", "mrr@10"], min_length=1)
    relevant_from: Grade = 3
    thresholds: dict[str, Drop] = Field(default_factory=dict)
    floors: dict[str, Number] = Field(default_factory=dict)  # absolute floors: fail below, whatever the baseline
    alpha: Annotated[Number, Field(gt=0, lt=1)] = 0.05
    # "all" (trec_eval -c): every judged query counts, one the run returns nothing for scores 0, so a
    # candidate that stops answering a query is charged for it. "trec" skips such queries, which lets
    # a retriever that lost answers look as good as before: never the right default for a gate.
    average: Literal["trec", "all"] = "all"
    # With too few queries for the test to reach alpha, a drop beyond its threshold fails on the threshold
    # alone; true opts out: such a drop passes, marked untested, with a warning in the summary.
    require_significance: Annotated[bool, Field(strict=True)] = False
    # People's grades for a random sample of the labelled pairs: the report puts corrected figures beside the
    # plain ones (evaluate --gold); corrected = true: the gate decides on them (evaluate --corrected).
    # Apart from inputs.gold, which a BEIR folder fills with its qrels (not a sample of this pool).
    gold: Path | None = None
    corrected: Annotated[bool, Field(strict=True)] = False


class DriftConfig(Section):
    """regression: re-ask a fixed sample of pairs when the judge, model or rubric changes (labeller.pipelines.drift)."""

    sample: Annotated[int, Field(strict=True, ge=0)] = 50  # pairs of the first run's pool; 0: no drift check
    min_kappa: Annotated[Number, Field(ge=-1, le=1)] = 0.6  # quadratic kappa of old vs new verdicts below this: drift
    fail: Annotated[bool, Field(strict=True)] = True  # a drift fails the run (exit 1); false: reported only
    accept: Annotated[bool, Field(strict=True)] = False  # make the new judge the reference even though it drifted


class OutcomesConfig(Section):
    """regression: the downstream-weighted gate (labeller.pipelines.outcomes_step); off without `file`."""

    file: Path | None = None  # outcomes the baseline's retrieval led to: {query_id, outcome or score}
    metric: str | None = None  # gate on this metric; default: the one that predicts the outcomes best
    ok_from: Annotated[Number, Field(ge=0)] = 0.5  # retrieval succeeded on a query when the metric is at least this
    max_drop: Drop = 0.02  # largest tolerated drop in predicted task success
    fail: Annotated[bool, Field(strict=True)] = True  # a drop beyond max_drop fails the run; false: reported only


class ExportConfig(Section):
    """Where the run's figures go after its local outputs are written (labeller.exporters, docs/exporters.md)."""

    to: list[str] = Field(default_factory=list)  # BACKEND=URL: mlflow=..., prometheus=..., otlp=...
    experiment: str = Field("labeller", min_length=1)  # MLflow experiment, Pushgateway job, OTel service.name
    timeout: Annotated[Number, Field(gt=0, le=600)] = 10.0  # seconds a backend may take before it counts as down


class AnswersConfig(Section):
    """answers: the claim rubric and the gate (labeller.answers.models.Thresholds; unset: not checked)."""

    claim_rubric: Path | None = None
    min_groundedness: Annotated[Number, Field(ge=0, le=1)] | None = None
    max_unsupported_generation_rate: Annotated[Number, Field(ge=0, le=1)] | None = None
    max_missing_evidence_rate: Annotated[Number, Field(ge=0, le=1)] | None = None
    max_ignored_context_rate: Annotated[Number, Field(ge=0, le=1)] | None = None
    max_contradicted: Annotated[int, Field(strict=True, ge=0)] | None = None
    min_fact_recall: Annotated[Number, Field(ge=0, le=1)] | None = None
    max_forbidden_hits: Annotated[int, Field(strict=True, ge=0)] | None = None
    min_abstention_accuracy: Annotated[Number, Field(ge=0, le=1)] | None = None
    max_failures: Annotated[int, Field(strict=True, ge=0)] = 0


class PipelineConfig(Section):
    pipeline: Literal["label_slice", "validate_prompt", "regression", "answers"]
    description: str = ""
    inputs: Inputs
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    label: LabelConfig = Field(default_factory=LabelConfig)
    output: OutputConfig = Field(default_factory=OutputConfig)
    retriever: RetrieverConfig = Field(default_factory=RetrieverConfig)
    # validate_prompt: the old and new rubric (a path or a shipped name)
    old_rubric: str | None = None
    new_rubric: str | None = None
    gate: GateConfig = Field(default_factory=GateConfig)
    # regression
    baseline: BaselineConfig = Field(default_factory=BaselineConfig)
    evaluate: EvaluateConfig = Field(default_factory=EvaluateConfig)
    drift: DriftConfig = Field(default_factory=DriftConfig)
    outcomes: OutcomesConfig = Field(default_factory=OutcomesConfig)
    export: ExportConfig = Field(default_factory=ExportConfig)
    answers: AnswersConfig = Field(default_factory=AnswersConfig)

    @property
    def cache_dir(self) -> str | Path:
        """The verdict store: a directory or a URL (the property keeps its old name for callers)."""
        from labeller.store import ENV_VAR

        return self.output.cache or os.environ.get(ENV_VAR) or self.output.dir.parent / ".labeller-cache"


_PATHS = {("inputs", "queries"), ("inputs", "corpus"), ("inputs", "gold"), ("inputs", "sample"), ("inputs", "beir"),
          ("inputs", "answers"), ("inputs", "required"), ("inputs", "facts"), ("inputs", "outcomes"),
          ("answers", "claim_rubric"),
          ("output", "dir"), ("evaluate", "gold"),
          ("output", "cache"), ("baseline", "run"), ("judge", "prices"), ("retriever", "run"), ("outcomes", "file")}
_RUBRIC_KEYS = {("", "old_rubric"), ("", "new_rubric"), ("judge", "rubric")}
_SECTIONS = ("inputs", "judge", "label", "output", "retriever", "gate", "baseline", "evaluate", "drift", "answers",
             "outcomes", "export")


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
    _fill_from_beir(data.get("inputs", {}), path)
    try:
        config = PipelineConfig.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, path=str(path), error=ConfigError) from None
    _check_names(config, path)
    return config


def gold_scale(cfg: PipelineConfig) -> str | None:
    """`inputs.from_scale` as the gold file's own scale ("gold=LOW-HIGH"): the judge's labels stay 1-5."""
    spec = cfg.inputs.from_scale
    return None if spec is None else f"gold={spec.partition('=')[2] if '=' in spec else spec}"


def _fill_from_beir(inputs: dict[str, Any], path: Path) -> None:
    """`inputs.beir = "dir"`: the folder's files stand in for queries, corpus and gold not given (as --beir)."""
    if not isinstance(inputs.get("beir"), str) or not isinstance(inputs.get("beir_split", "test"), str):
        return  # not a path: validation reports it against its key
    from labeller.io.beir import beir_dataset

    try:
        found = beir_dataset(inputs["beir"], inputs.get("beir_split", "test"), need_qrels=False)
    except BadInputError as exc:
        raise ConfigError(f"{exc.detail} ({inputs['beir']})", path=str(path), field="inputs.beir") from None
    for key, value in (("queries", found.queries), ("corpus", found.corpus), ("gold", found.qrels)):
        if value is not None:
            inputs.setdefault(key, str(value))


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
        if isinstance(value, str) and value and not is_url(value) and ((section, key) in _PATHS or value.endswith(".md")):
            holder[key] = str((base / value).resolve())


def _check_names(cfg: PipelineConfig, path: Path) -> None:
    """Names that only a later step would look up (judge, retrievers, metrics, thresholds), checked now
    so that a typo is reported against the config file and its key before anything runs."""
    from labeller.evaluation.gate import parse_thresholds
    from labeller.evaluation.metrics import parse_metrics
    from labeller.judges.output_modes import check_output_mode
    from labeller.judges.registry import parse_judge_spec
    from labeller.evaluation.floors import parse_floors
    from labeller.io.columns import parse_columns
    from labeller.io.scales import scale_of
    from labeller.io.trec import parse_scale
    from labeller.retrieval import available_retrievers
    from labeller.retrieval.imported import check_import_path, is_import_path

    def known_retriever(name: str) -> None:
        if is_import_path(name):
            return check_import_path(name)
        if name not in available_retrievers():
            raise ConfigError(f"unknown retriever '{name}'; expected one of: {', '.join(available_retrievers())}")

    checks = [("judge.spec", lambda: parse_judge_spec(cfg.judge.spec)),
              ("judge.output_mode", lambda: cfg.judge.output_mode is None or check_output_mode(cfg.judge.output_mode)),
              ("inputs.from_scale", lambda: scale_of(cfg.inputs.from_scale, "gold") or parse_scale(
                  cfg.inputs.from_scale)),
              ("inputs.columns", lambda: parse_columns([f"{k}={v}" for k, v in cfg.inputs.columns.items()])),
              ("retriever.name", lambda: known_retriever(cfg.retriever.name)),
              ("evaluate.metrics", lambda: parse_metrics(cfg.evaluate.metrics)),
              ("evaluate.thresholds", lambda: parse_thresholds([f"{m}={t}" for m, t in cfg.evaluate.thresholds.items()],
                                                               parse_metrics(cfg.evaluate.metrics))),
              ("evaluate.floors", lambda: parse_floors([f"{m}={v}" for m, v in cfg.evaluate.floors.items()],
                                                       parse_metrics(cfg.evaluate.metrics)))]
    if cfg.baseline.retriever is not None:
        checks.append(("baseline.retriever", lambda: known_retriever(cfg.baseline.retriever)))
    if cfg.evaluate.corrected and cfg.evaluate.gold is None:
        def needs_gold() -> None:
            raise ConfigError("evaluate.corrected decides the gate on figures corrected with people's grades; set "
                              "evaluate.gold (a random sample of the labelled pairs, graded by people)")
        checks.append(("evaluate.corrected", needs_gold))
    if cfg.output.cache is not None:
        checks.append(("output.cache", lambda: check_spec(cfg.output.cache)))
    if cfg.outcomes.metric is not None:
        from labeller.outcomes.values import check_metric_name

        checks.append(("outcomes.metric", lambda: check_metric_name(cfg.outcomes.metric)))
    if cfg.export.to:
        from labeller.exporters import parse_target

        checks.append(("export.to", lambda: [parse_target(t, "export.to") for t in cfg.export.to]))
    _run_checks(checks, path)


def check_rubrics(cfg: PipelineConfig, path: str | Path) -> None:
    """Every rubric the config names exists (a shipped name or a file), reported against its key.
    Run before a pipeline starts; `load_config` itself only reads the config."""
    from labeller.rubric import resolve_rubric_path

    rubrics = (("judge.rubric", cfg.judge.rubric), ("old_rubric", cfg.old_rubric), ("new_rubric", cfg.new_rubric))
    _run_checks([(field, lambda r=r: resolve_rubric_path(r)) for field, r in rubrics if r is not None], Path(path))


def _run_checks(checks: list[tuple[str, Any]], path: Path) -> None:
    for field, check in checks:
        try:
            check()
        except BadInputError as exc:  # metric and threshold parsing speak of command-line flags: name the key
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
