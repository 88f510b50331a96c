"""Canary facts: exact ground truth without a judge.

Plant synthetic records with globally unique facts into a test copy of a corpus (or one test copy
per store), then probe a retriever (or a run, or an agent's answers, or a whole workflow's output)
with their questions: where each canary ranked, fact recall of what came back, whether the judge
gives each canary document the top grade, each canary's score and the suite's criteria.
"""

from labeller.canaries.answers import Answer, output_answers, read_answers, read_output
from labeller.canaries.api import (CanaryProbeOptions, new_canaries_file, plant_files, plant_store_files, probe_files,
                                   read_corpora)
from labeller.canaries.dates import date_forms
from labeller.canaries.generate import fact_code, starter_file, unique_codes
from labeller.canaries.factrecall import FactScore, contains, fact_recall, normalise, token_text, tokens
from labeller.canaries.judgecheck import JudgeCheck, judge_canaries
from labeller.canaries.live import LiveCheck, tool_calls_in_log
from labeller.canaries.model import Canary, CanaryDoc, Fact, Source, check_canaries, load_canaries
from labeller.canaries.objective import score_canaries
from labeller.canaries.plant import TEST_COPY_MARKERS, PlantResult, StoreFiles, is_test_copy, plant, plant_stores
from labeller.canaries.probe import CanaryResult, ProbeReport, probe, retrieve
from labeller.canaries.suite import Criterion, SuiteCriteria, SuiteVerdict, judge_suite, load_criteria

__all__ = [
    "TEST_COPY_MARKERS", "Answer", "Canary", "CanaryDoc", "CanaryProbeOptions", "CanaryResult", "Criterion", "Fact",
    "FactScore", "JudgeCheck", "LiveCheck", "PlantResult", "ProbeReport", "Source", "StoreFiles", "SuiteCriteria",
    "SuiteVerdict",
    "check_canaries", "contains", "date_forms", "fact_code", "fact_recall", "is_test_copy", "judge_canaries",
    "judge_suite", "load_canaries", "load_criteria", "new_canaries_file", "normalise", "output_answers", "plant",
    "plant_files", "plant_store_files", "plant_stores", "probe", "probe_files", "read_answers", "read_corpora",
    "read_output", "retrieve", "score_canaries", "starter_file", "token_text", "tokens", "tool_calls_in_log",
    "unique_codes",
]
