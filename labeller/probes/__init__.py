"""Judge bias probes: grade controlled perturbations of labelled pairs and measure the grade shift.

One module per probe kind (length, stuffing, injection, near_duplicate), built on labelling: every
perturbed pair goes through the verdict cache like any other. runner.py picks and perturbs pairs,
stats.py and gate.py turn shifts into figures and a verdict, report.py renders them, files.py reads
the inputs of `labeller probe`. Not to be confused with `labeller canaries probe` (planted facts).
"""

from labeller.probes.files import parse_probes, parse_thresholds, probe_files
from labeller.probes.models import PROBE_NAMES, ProbeReport, ProbeResult, ProbeSettings
from labeller.probes.runner import PROBES, run_probes

__all__ = ["PROBES", "PROBE_NAMES", "ProbeReport", "ProbeResult", "ProbeSettings", "parse_probes",
           "parse_thresholds", "probe_files", "run_probes"]
