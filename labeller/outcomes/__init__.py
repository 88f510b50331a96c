"""Downstream outcomes: which retrieval metric predicts the task's success, and whose fault a failure is.

`analyse` takes per-query retrieval figures (labeller.outcomes.values, from labeller's own evaluation) and an
outcomes table (labeller.outcomes.table); `run_outcomes` does the same from files, for `labeller outcomes`.
"""

from labeller.outcomes.analysis import OutcomesOptions, analyse, values_for
from labeller.outcomes.results import FORMAT, OutcomesReport
from labeller.outcomes.table import OutcomeTable, outcome_rows, read_outcome_table

__all__ = ["FORMAT", "OutcomeTable", "OutcomesOptions", "OutcomesReport", "analyse", "outcome_rows",
           "read_outcome_table", "values_for"]
