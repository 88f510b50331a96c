"""The prompt-change gate through the real CLI: fires on a clearly worse label set, quiet on an identical one."""

from __future__ import annotations

import json
import re

import numpy as np

from agreement_helpers import run_cli, synthetic, write_gold, write_labels
from labeller.agreement import align, run_gate
from labeller.io.gold import read_grades


def files(tmp_path, worse_shift: float = 0.0, worse_noise: float = 0.5):
    gold, good = synthetic(40, 6, seed=11, noise=0.5)
    _, bad = synthetic(40, 6, seed=11, noise=worse_noise, shift=worse_shift)
    return (write_gold(tmp_path / "gold.jsonl", gold), write_labels(tmp_path / "old.jsonl", good),
            write_labels(tmp_path / "new.jsonl", bad))


def test_gate_fails_on_a_clearly_worse_label_set(tmp_path):
    gold, old, new = files(tmp_path, worse_shift=1.2, worse_noise=1.2)
    code, out, err = run_cli("agree", "--labels", new, "--baseline", old, "--gold", gold, "--json", "--bootstrap", 300)
    assert code == 1, err
    assert "prompt-change gate failed" in err and re.search(r"kappa 0\.\d{3} -> 0\.\d{3} \(delta -0\.\d{3};", err)
    gate = json.loads(out)["gate"]
    assert gate["verdict"] == "fail" and gate["change"] == "worse"
    assert gate["ci"]["high"] < -gate["max_drop"]
    assert gate["difference"] == gate["new"] - gate["old"] and gate["difference"] < -0.2
    assert len(gate["broken"]) > len(gate["fixed"])


def test_gate_passes_on_an_identical_label_set(tmp_path):
    gold, old, _ = files(tmp_path)
    code, out, err = run_cli("agree", "--labels", old, "--baseline", old, "--gold", gold, "--json", "--bootstrap", 300)
    assert code == 0, err
    gate = json.loads(out)["gate"]
    assert gate["verdict"] == "pass" and gate["change"] == "no clear change"
    assert gate["difference"] == 0 and gate["ci"] == {"low": 0.0, "high": 0.0}
    assert gate["fixed"] == [] and gate["broken"] == [] and gate["reasons"] == []


def test_min_kappa_fails_even_without_a_baseline(tmp_path):
    gold, old, _ = files(tmp_path)
    code, out, err = run_cli("agree", "--labels", old, "--gold", gold, "--min-kappa", "0.99", "--bootstrap", 50)
    assert code == 1 and "below --min-kappa 0.99" in err
    code, _, err = run_cli("agree", "--labels", old, "--gold", gold, "--min-kappa", "0.1", "--bootstrap", 50)
    assert code == 0, err


def test_fixed_and_broken_pairs_are_the_ones_that_moved(tmp_path):
    gold = write_gold(tmp_path / "gold.jsonl", {("q1", "a"): 3, ("q1", "b"): 1, ("q2", "c"): 5, ("q2", "d"): 2})
    old = write_labels(tmp_path / "old.jsonl", {("q1", "a"): 1, ("q1", "b"): 1, ("q2", "c"): 5, ("q2", "d"): 4})
    new = write_labels(tmp_path / "new.jsonl", {("q1", "a"): 3, ("q1", "b"): 3, ("q2", "c"): 5, ("q2", "d"): 3})
    gold_file = read_grades(gold)
    result = run_gate(align(read_grades(new, several_per_pair=False), gold_file),
                      align(read_grades(old, several_per_pair=False), gold_file), resamples=50)
    assert [(c.doc_id, c.old, c.new) for c in result.fixed] == [("a", 1, 3), ("d", 4, 3)]
    assert [(c.doc_id, c.old, c.new) for c in result.broken] == [("b", 1, 3)]


def test_paired_bootstrap_is_narrower_than_unpaired(tmp_path):
    # The new labels differ from the old on 20 pairs only, each now right: pairing cancels what both share,
    # so the interval of the difference is far narrower than either kappa's own interval (an unpaired
    # difference would be about 1.4 times wider than that).
    gold, judge = synthetic(40, 6, seed=5, noise=0.9)
    changed = dict(judge)
    for key in list(changed)[::6][:20]:  # one pair in each of 20 queries
        changed[key] = gold[key]
    gold_file = read_grades(write_gold(tmp_path / "g.jsonl", gold))
    new = align(read_grades(write_labels(tmp_path / "n.jsonl", changed), several_per_pair=False), gold_file)
    old = align(read_grades(write_labels(tmp_path / "o.jsonl", judge), several_per_pair=False), gold_file)
    result = run_gate(new, old, resamples=400)
    from labeller.agreement import measure

    own = measure(new, resamples=400).ci.kappa
    assert result.ci.high - result.ci.low < (own.high - own.low) / 2
    assert result.change == "better" and result.verdict == "pass"
    assert result.difference > 0 and np.isclose(result.difference, result.new - result.old)


def test_gate_metric_is_selectable_and_checked(tmp_path):
    gold, old, new = files(tmp_path, worse_shift=1.2, worse_noise=1.2)
    code, out, _ = run_cli("agree", "--labels", new, "--baseline", old, "--gold", gold, "--json", "--bootstrap", 200,
                           "--gate-metric", "kappa_quadratic")
    gate = json.loads(out)["gate"]
    assert code == 1 and gate["metric"] == "kappa_quadratic" and gate["verdict"] == "fail"
    assert abs(gate["new"] - json.loads(out)["kappa_quadratic"]) < 1e-12  # same figure, computed on the same pairs
    code, _, err = run_cli("agree", "--labels", new, "--gold", gold, "--gate-metric", "f1")
    assert code == 2 and "--gate-metric 'f1' is unknown" in err
