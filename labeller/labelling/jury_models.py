"""What a run with several judges did: a jury (labelling/jury.py) or an escalation (labelling/escalation.py)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from labeller.agreement.jury import InterJudge, JudgeAgreement
from labeller.labelling.models import LabelStats
from labeller.records import Label, LabelFailure

RULE = "median"


class EscalationStats(BaseModel):
    """What an escalation run asked of its expensive judge, and why."""

    model_config = ConfigDict(extra="forbid")
    cheap: str
    expensive: str
    relevant_from: int
    near_cut: bool  # grades relevant_from - 1 and relevant_from were escalated
    below: float | None  # sample agreement under which a pair was escalated (labels with samples only)
    escalated: int = 0  # pairs sent to the expensive judge
    graded: int = 0  # pairs the cheap judge graded (a dry run: every pair)
    share: float = 0.0  # of the pairs the cheap judge graded
    for_near_cut: int = 0
    for_low_agreement: int = 0
    above: float | None = None  # grade entropy (bits) over which a pair was escalated (--grade-probs labels only)
    for_spread: int = 0
    worst_case: int = 0  # dry run: pairs the cheap judge has not graded yet, all counted as escalated
    # What the labels used cost when their verdicts were bought (cached or not), so a rerun still shows
    # the price of escalating; None when a model has no known price.
    cheap_cost_usd: float | None = None
    expensive_cost_usd: float | None = None
    expensive_alone_usd: float | None = None  # the expensive judge on every pair, scaled from what it cost here
    notes: list[str] = Field(default_factory=list)


class JuryStats(BaseModel):
    """What `labeller label` with several judges (or an escalation) did, per judge and in total."""

    model_config = ConfigDict(extra="forbid")
    rule: str = RULE
    relevant_from: int = 3  # the relevance cut of kappa_relevant (and of escalation's near-the-cut rule)
    requested: int = 0  # pairs asked for
    labelled: int = 0  # pairs in --out
    failed: int = 0  # pairs left out of --out because a judge could not grade them
    dry_run: bool = False
    judges: dict[str, LabelStats] = Field(default_factory=dict)  # each judge's own run, in order
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0  # None when some judge's model has no known price
    estimated_cost_usd: float | None = None  # dry runs
    inter_judge: InterJudge | None = None
    against_gold: list[JudgeAgreement] = Field(default_factory=list)  # with --gold
    escalation: EscalationStats | None = None
    warnings: list[str] = Field(default_factory=list)  # inputs skipped (a run's unknown queries), said on stderr


class JuryRun(BaseModel):
    model_config = ConfigDict(extra="forbid")
    labels: list[Label] = Field(default_factory=list)  # the final label of each pair, in input order
    judge_labels: list[Label] = Field(default_factory=list)  # every judge's own labels
    failures: list[LabelFailure] = Field(default_factory=list)
    stats: JuryStats = Field(default_factory=JuryStats)
    out_path: str | None = None
    judges_path: str | None = None
    failures_path: str | None = None
