"""Hold an LLM judge against human gold: agreement figures, disagreement reports, the prompt-change gate."""

from labeller.agreement.align import Alignment, align
from labeller.agreement.gate import GateResult, run_gate
from labeller.agreement.measure import measure
from labeller.agreement.ppi import classic_ppi, stratified_ppi
from labeller.agreement.run import AgreeOptions, AgreeResult, agree
from labeller.agreement.summary import Agreement

__all__ = ["AgreeOptions", "AgreeResult", "Agreement", "Alignment", "GateResult", "agree", "align", "classic_ppi",
           "measure", "run_gate", "stratified_ppi"]
