"""`labeller judge-bench` end to end: real openai/anthropic SDKs over HTTP against the fake server, and the
offline judge. The fake answers the grade planted in each document ([[grade:N]]), so one judge agrees with
gold exactly and another, whose model the fake maps through NOISE, gives known wrong grades; every
figure is checked against sklearn, the krippendorff package and scipy on the same grades."""

from __future__ import annotations

import json
from pathlib import Path

import krippendorff
import pytest
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score

from labeller.cli import main
from labeller.prices import load_prices

KEY = "sk-test-judge-bench-0123456789"
GRADES = [1, 2, 3, 4, 5]
NOISE = {1: 2, 2: 1, 3: 4, 4: 3, 5: 3}  # what the noisy model answers for each planted grade
GOLD = {f"q{q}": {f"d{q}-{i}": (q + i * 2) % 5 + 1 for i in range(6)} for q in range(1, 6)}  # 5 queries x 6 pairs
EXACT, NOISY = "openai:gpt-4.1-mini", "openai:gpt-4.1-nano"


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def data(tmp_path):
    write_jsonl(tmp_path / "queries.jsonl", [{"query_id": q, "text": f"question {q}"} for q in GOLD])
    write_jsonl(tmp_path / "corpus.jsonl", [{"doc_id": d, "text": f"passage {d} [[grade:{g}]]"}
                                            for docs in GOLD.values() for d, g in docs.items()])
    write_jsonl(tmp_path / "gold.jsonl", [{"query_id": q, "doc_id": d, "grade": g, "annotator": "nist"}
                                          for q, docs in GOLD.items() for d, g in docs.items()])
    return tmp_path


@pytest.fixture
def fake(api, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", api.openai_url)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
    api.model_grades = {"gpt-4.1-nano": NOISE.get}
    return api


def bench(d: Path, *args: str, capsys) -> dict:
    with pytest.raises(SystemExit) as done:
        main(["judge-bench", "--gold", str(d / "gold.jsonl"), "--queries", str(d / "queries.jsonl"),
              "--corpus", str(d / "corpus.jsonl"), "--cache", str(d / "cache"), "--rubric", "general",
              "--bootstrap", "200", "--json", *args])
    assert done.value.code in (0, None), capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def by_judge(result: dict) -> dict[str, dict]:
    return {j["judge"]: j for j in result["judges"]}


def test_planted_judge_agrees_exactly_and_noisy_judge_matches_sklearn_and_krippendorff(data, fake, capsys):
    result = bench(data, "--judge", EXACT, "--judge", NOISY, "--judge", "anthropic:claude-haiku-4-5", capsys=capsys)
    judges = by_judge(result)
    assert result["pairs"] == 30 and result["queries"] == 5 and fake.total == 90  # 3 judges x 30 pairs
    exact = judges[EXACT]
    assert exact["kappa"]["value"] == exact["kappa_quadratic"]["value"] == exact["alpha_ordinal"]["value"] == 1.0
    assert judges["anthropic:claude-haiku-4-5"]["kappa"]["value"] == 1.0  # the Anthropic SDK path, same grades
    gold = [g for docs in GOLD.values() for g in docs.values()]
    noisy = [NOISE[g] for g in gold]
    n = judges[NOISY]
    assert n["kappa"]["value"] == pytest.approx(cohen_kappa_score(gold, noisy, labels=GRADES), abs=1e-12)
    assert n["kappa_quadratic"]["value"] == pytest.approx(
        cohen_kappa_score(gold, noisy, labels=GRADES, weights="quadratic"), abs=1e-12)
    assert n["alpha_ordinal"]["value"] == pytest.approx(krippendorff.alpha(
        reliability_data=[gold, noisy], level_of_measurement="ordinal", value_domain=GRADES), abs=1e-9)
    assert n["kappa_relevant"]["value"] == pytest.approx(
        cohen_kappa_score([g >= 3 for g in gold], [j >= 3 for j in noisy]), abs=1e-12)
    assert n["kappa"]["value"] < 0.5
    low, high = n["kappa"]["ci"]["low"], n["kappa"]["ci"]["high"]
    assert low <= n["kappa"]["value"] <= high and low < high  # a query-resampled interval around it


def test_rerun_pays_nothing_and_says_cached(data, fake, capsys):
    first = bench(data, "--judge", EXACT, "--judge", NOISY, capsys=capsys)
    fake.reset()
    again = bench(data, "--judge", EXACT, "--judge", NOISY, capsys=capsys)
    assert fake.total == 0
    for judge in again["judges"]:
        assert judge["speed"]["new"] == 0 and judge["speed"]["pairs_per_second"] is None
    assert [j["kappa"] for j in again["judges"]] == [j["kappa"] for j in first["judges"]]
    assert [j["cost"] for j in again["judges"]] == [j["cost"] for j in first["judges"]]  # recorded tokens
    assert all(j["speed"]["new"] == 30 and j["speed"]["pairs_per_second"] > 0 for j in first["judges"])
    with pytest.raises(SystemExit):
        main(["judge-bench", "--gold", str(data / "gold.jsonl"), "--queries", str(data / "queries.jsonl"),
              "--corpus", str(data / "corpus.jsonl"), "--cache", str(data / "cache"), "--judge", EXACT])
    table = capsys.readouterr().out
    assert "| pairs per second | cached |" in table and "| Cohen's kappa | 1.000" in table


def test_price_per_1k_pairs_from_the_recorded_tokens(data, fake, capsys, tmp_path):
    labels = tmp_path / "kept"
    result = bench(data, "--judge", EXACT, "--judge", "openai:unpriced-model", "--labels-dir", str(labels),
                   capsys=capsys)
    judges = by_judge(result)
    rows = [json.loads(line) for line in Path(judges[EXACT]["labels"]).read_text().splitlines()]
    price = load_prices().lookup("openai", "gpt-4.1-mini")
    sync = sum(price.cost(r["input_tokens"], r["output_tokens"], r["cached_input_tokens"]) for r in rows)
    cost = judges[EXACT]["cost"]
    assert cost["usd_per_1k"] == pytest.approx(sync / len(rows) * 1000)
    assert cost["usd_per_1k_batch"] == pytest.approx(cost["usd_per_1k"] * 0.5)
    assert cost["input_tokens_per_1k"] == pytest.approx(sum(r["input_tokens"] for r in rows) / len(rows) * 1000)
    assert cost["output_tokens_per_1k"] == 20 * 1000  # the fake bills 20 output tokens a reply
    unpriced = judges["openai:unpriced-model"]["cost"]
    assert unpriced["usd_per_1k"] is None and unpriced["usd_per_1k_batch"] is None and not unpriced["priced"]
    assert unpriced["input_tokens_per_1k"] > 0  # tokens are still reported


def _run(path: Path, scores: dict[str, dict[str, float]]) -> Path:
    path.write_text("".join(f"{q} Q0 {d} {r} {s} sys\n" for q, docs in scores.items()
                            for r, (d, s) in enumerate(sorted(docs.items(), key=lambda kv: -kv[1]), 1)))
    return path


def test_system_ranking_tau_matches_scipy_on_a_hand_built_case(data, fake, capsys):
    # Four systems: gold order, gold reversed, and two half-way; under the noisy judge their order changes.
    runs = [_run(data / "best.trec", {q: {d: g for d, g in docs.items()} for q, docs in GOLD.items()}),
            _run(data / "worst.trec", {q: {d: -g for d, g in docs.items()} for q, docs in GOLD.items()}),
            _run(data / "noisy.trec", {q: {d: NOISE[g] for d, g in docs.items()} for q, docs in GOLD.items()}),
            _run(data / "ids.trec", {q: {d: -i for i, d in enumerate(docs)} for q, docs in GOLD.items()})]
    args = [a for r in runs for a in ("--run", str(r))]
    result = bench(data, "--judge", EXACT, "--judge", NOISY, "--metric", "ndcg@3", *args, capsys=capsys)
    judges = by_judge(result)
    assert judges[EXACT]["ranking"]["kendall_tau"] == pytest.approx(1.0)
    ranking = judges[NOISY]["ranking"]
    names = list(ranking["gold"])
    assert len(names) == 4
    expected = kendalltau([ranking["gold"][n] for n in names], [ranking["judge"][n] for n in names]).statistic
    assert ranking["kendall_tau"] == pytest.approx(expected) and ranking["kendall_tau"] < 1.0
    assert ranking["judge"]["noisy"] == pytest.approx(1.0)  # the run ordered by the noisy grades is ideal under them


def test_offline_judge_on_trec_qrels_writes_markdown_json_and_html(tmp_path, capsys):
    d = tmp_path
    write_jsonl(d / "queries.jsonl", [{"query_id": "q1", "text": "blanch spinach"}, {"query_id": "q2", "text": "bail bounty"}])
    write_jsonl(d / "corpus.jsonl", [{"doc_id": "a", "text": "Blanch spinach for two minutes."},
                                     {"doc_id": "b", "text": "Bounty hunters earn part of the bail."},
                                     {"doc_id": "c", "text": "The weather is mild."}])
    (d / "qrels.txt").write_text("q1 0 a 3\nq1 0 c 0\nq1 0 b 0\nq2 0 b 2\nq2 0 a 0\nq2 0 c 0\n")
    with pytest.raises(SystemExit) as done:
        main(["judge-bench", "--gold", str(d / "qrels.txt"), "--from-scale", "0-3", "--queries", str(d / "queries.jsonl"),
              "--corpus", str(d / "corpus.jsonl"), "--judge", "offline:lexical", "--cache", str(d / "cache"),
              "--md", str(d / "bench.md"), "--html", str(d / "bench.html"), "--report", str(d / "report"),
              "--clip-to-gold"])
    assert done.value.code in (0, None)
    assert "| Cohen's kappa |" in capsys.readouterr().out  # the table on stdout as well
    result = json.loads((d / "report" / "judge-bench.json").read_text())
    assert (d / "report" / "judge-bench.md").read_text() == (d / "bench.md").read_text()
    assert result["gold_scale"] == [1, 4] and result["judges"][0]["n"] == 6
    assert result["judges"][0]["cost"]["usd_per_1k"] == 0.0 and result["judges"][0]["cost"]["usd_per_1k_batch"] is None
    assert "| Cohen's kappa |" in (d / "bench.md").read_text() and "about 0.29" in (d / "bench.md").read_text()
    assert "<table>" in (d / "bench.html").read_text() and (d / "report" / "judge-bench.html").is_file()


def test_figures_are_labeller_agrees_on_the_same_labels(tmp_path, capsys):
    """The bench measures with labeller.agreement: its figures equal `labeller agree` on the labels it kept."""
    d = tmp_path
    write_jsonl(d / "queries.jsonl", [{"query_id": f"q{i}", "text": f"spinach blanch minutes {i}"} for i in range(4)])
    docs = ["Blanch spinach for two minutes.", "Spinach is green.", "Bail bonds explained.", "Minutes of the meeting."]
    write_jsonl(d / "corpus.jsonl", [{"doc_id": f"d{j}", "text": t} for j, t in enumerate(docs)])
    (d / "qrels.txt").write_text("".join(f"q{i} 0 d{j} {(i + j) % 4}\n" for i in range(4) for j in range(4)))
    kept = d / "kept"
    with pytest.raises(SystemExit):
        main(["judge-bench", "--gold", str(d / "qrels.txt"), "--queries", str(d / "queries.jsonl"), "--corpus",
              str(d / "corpus.jsonl"), "--judge", "offline:lexical", "--cache", str(d / "c"), "--labels-dir", str(kept),
              "--bootstrap", "300", "--seed", "4", "--json"])
    bench_result = json.loads(capsys.readouterr().out)["judges"][0]
    with pytest.raises(SystemExit):
        main(["agree", "--labels", bench_result["labels"], "--gold", str(d / "qrels.txt"), "--bootstrap", "300",
              "--seed", "4", "--json"])
    agreed = json.loads(capsys.readouterr().out)
    for name in ("kappa", "kappa_quadratic", "alpha_ordinal", "exact_agreement"):
        assert bench_result[name]["value"] == agreed[name]
        assert bench_result[name]["ci"] == agreed["ci"][name]
    assert bench_result["kappa_relevant"]["value"] == agreed["kappa_binary"]["3"]
