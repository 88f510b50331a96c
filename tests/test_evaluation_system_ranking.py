"""Human against LLM labels: do they order the runs the same way? (Kendall tau, Spearman rho)."""

from __future__ import annotations

import json
import random

import pytest
import pytrec_eval
from evaluation_helpers import cli, cli_json, write_qrels, write_run
from scipy.stats import kendalltau, spearmanr


@pytest.fixture
def files(tmp_path):
    rng = random.Random(21)
    human = {f"q{q}": {f"d{q}-{i}": rng.choice([0, 0, 1, 2, 3]) for i in range(25)} for q in range(30)}
    # The "LLM" agrees with people most of the time and is off by one grade otherwise.
    llm = {q: {d: min(3, max(0, g + rng.choice([0, 0, 0, 1, -1]))) for d, g in ds.items()} for q, ds in human.items()}
    paths = {"human": write_qrels(tmp_path / "human.qrels", human), "runs": [], "human_dict": human, "llm_dict": llm}
    # The LLM labels as labeller gold rows on the 1-5 scale: --from-scale applies to the qrels only.
    paths["llm"] = tmp_path / "llm.jsonl"
    paths["llm"].write_text("".join(json.dumps({"query_id": q, "doc_id": d, "grade": g + 1}) + "\n"
                                    for q, ds in llm.items() for d, g in ds.items()))
    for quality in (0.0, 0.5, 1.0, 2.0, 4.0):  # how strongly each run follows the human grades
        run = {q: {d: round(g * quality + rng.random() * 3, 3) for d, g in ds.items()} for q, ds in human.items()}
        paths["runs"].append(write_run(tmp_path / f"run{quality}.trec", run))
        paths.setdefault("run_dicts", []).append(run)
    return paths


def means(qrels, runs, measure, key, level=1):
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {measure}, relevance_level=level)
    return [sum(v[key] for v in evaluator.evaluate(run).values()) / len(qrels) for run in runs]


def test_tau_and_rho_match_an_independent_computation(files, capsys):
    args = [a for path in files["runs"] for a in ("--run", path)]
    result = cli_json("evaluate", *args, "--labels", files["human"], "--from-scale", "0-3", "--labels-alt",
                      files["llm"], "--metrics", "ndcg@10,map", capsys=capsys)
    ranking = {m["metric"]: m for m in result["system_ranking"]["metrics"]}
    for name, measure, key, level in (("ndcg@10", "ndcg_cut.10", "ndcg_cut_10", 1), ("map", "map", "map", 2)):
        human = means(files["human_dict"], files["run_dicts"], measure, key, level)
        llm = means(files["llm_dict"], files["run_dicts"], measure, key, level)
        assert list(ranking[name]["primary"].values()) == pytest.approx(human, abs=1e-9)
        assert list(ranking[name]["alternative"].values()) == pytest.approx(llm, abs=1e-9)
        assert ranking[name]["kendall_tau"] == pytest.approx(kendalltau(human, llm).statistic, abs=1e-12)
        assert ranking[name]["spearman_rho"] == pytest.approx(spearmanr(human, llm).statistic, abs=1e-12)


def test_the_same_labels_agree_perfectly(files, capsys):
    args = [a for path in files["runs"] for a in ("--run", path)]
    result = cli_json("evaluate", *args, "--labels", files["human"], "--labels-alt", files["human"],
                      "--metrics", "ndcg@10,map,recall@100", capsys=capsys)
    ndcg, ap, recall = result["system_ranking"]["metrics"]
    for metric in (ndcg, ap):
        assert metric["kendall_tau"] == pytest.approx(1.0) and metric["spearman_rho"] == pytest.approx(1.0)
    # Every run retrieves all 25 judged documents: recall@100 is 1 for all, so no ordering to compare.
    assert set(recall["primary"].values()) == {1.0} and recall["kendall_tau"] is None


def test_one_run_is_not_enough(files, capsys):
    code, _, err = cli("evaluate", "--run", files["runs"][0], "--labels", files["human"], "--labels-alt",
                       files["llm"], capsys=capsys)
    assert code == 2 and "give at least two runs" in err


def test_the_alternative_labels_may_have_their_own_scale(files, tmp_path, capsys):
    """--from-scale labels=... covers --labels and --labels-alt; labels-alt=... gives the second its own."""
    human = tmp_path / "human.jsonl"  # 1-5, labeller's default for tables
    human.write_text("".join(json.dumps({"query_id": q, "doc_id": d, "grade": g + 1}) + "\n"
                             for q, ds in files["human_dict"].items() for d, g in ds.items()))
    llm = tmp_path / "llm-0-3.jsonl"  # the same LLM grades, on 0-3 as another tool writes them
    llm.write_text("".join(json.dumps({"query_id": q, "doc_id": d, "grade": g}) + "\n"
                           for q, ds in files["llm_dict"].items() for d, g in ds.items()))
    args = [a for path in files["runs"] for a in ("--run", path)]
    result = cli_json("evaluate", *args, "--labels", human, "--labels-alt", llm, "--from-scale", "labels-alt=0-3",
                      "--metrics", "ndcg@10", capsys=capsys)
    (ndcg,) = result["system_ranking"]["metrics"]
    expected = means(files["human_dict"], files["run_dicts"], "ndcg_cut.10", "ndcg_cut_10")
    assert list(ndcg["primary"].values()) == pytest.approx(expected, abs=1e-9)
    llm_expected = means(files["llm_dict"], files["run_dicts"], "ndcg_cut.10", "ndcg_cut_10")
    assert list(ndcg["alternative"].values()) == pytest.approx(llm_expected, abs=1e-9)
    # Without its own scale the 0-3 file is read on 1-5, and its grade 0 is refused, naming the way out.
    code, _, err = cli("evaluate", *args, "--labels", human, "--labels-alt", llm, capsys=capsys)
    assert code == 2 and "llm-0-3.jsonl" in err and "--from-scale labels-alt=0-3" in err and "--clip" not in err
    # labels=0-3 alone applies to both files: the 1-5 human file's grade 4 is then out of scale.
    code, _, err = cli("evaluate", *args, "--labels", human, "--labels-alt", llm, "--from-scale", "labels=0-3",
                       capsys=capsys)
    assert code == 2 and "human.jsonl" in err and "outside the scale" in err
