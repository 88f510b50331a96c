"""Canary facts: exact ground truth without a judge.

Plant synthetic records with globally unique facts into a test copy of a corpus, then probe a
retriever (or a run, or an agent's answers) with their questions: where each canary ranked, fact
recall of what came back, and whether the judge gives each canary document the top grade.
"""

from labeller.canaries.api import new_canaries_file, plant_files, probe_files, read_answers
from labeller.canaries.generate import fact_code, starter_file, unique_codes
from labeller.canaries.factrecall import FactScore, fact_recall, normalise
from labeller.canaries.judgecheck import JudgeCheck, judge_canaries
from labeller.canaries.model import Canary, CanaryDoc, Fact, Source, check_canaries, load_canaries
from labeller.canaries.plant import TEST_COPY_MARKERS, PlantResult, is_test_copy, plant
from labeller.canaries.probe import CanaryResult, ProbeReport, probe, retrieve

__all__ = [
    "TEST_COPY_MARKERS", "Canary", "CanaryDoc", "CanaryResult", "Fact", "FactScore", "JudgeCheck", "PlantResult", "ProbeReport",
    "Source", "check_canaries", "fact_code", "fact_recall", "is_test_copy", "judge_canaries", "load_canaries", "new_canaries_file", "normalise",
    "plant", "plant_files", "probe", "probe_files", "read_answers", "retrieve", "starter_file", "unique_codes",
]
