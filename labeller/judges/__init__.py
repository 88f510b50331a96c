"""Judges: one interface (base.Judge), the providers, and `make_judge` to build one from its name."""

from labeller.judges.base import Judge, JudgeReply, MalformedReplyError, TransientError
from labeller.judges.offline import OfflineLexicalJudge
from labeller.judges.registry import make_judge, parse_judge_spec

__all__ = ["Judge", "JudgeReply", "MalformedReplyError", "OfflineLexicalJudge", "TransientError", "make_judge",
           "parse_judge_spec"]
