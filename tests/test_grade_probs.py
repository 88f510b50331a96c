"""Grade probabilities (`--grade-probs`) and adaptive sampling (`--samples auto:N`): the real openai and anthropic
SDKs over real HTTP to the fake API, which plants each pair's token log-probabilities at the grade
(`[[probs:...]]`) and each sample's grade (`[[seq:...]]`), so every distribution, expected grade, entropy and
sample count is known in advance."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from fakeapi import FakeAPI
from scipy.stats import entropy as scipy_entropy

from labeller.cli import main
from labeller.errors import BadInputError
from labeller.judges.grade_probs import ENTROPY_SPREAD
from labeller.labelling import LabelInputs, LabelOptions, label_job
from labeller.labelling.adaptive import parse_samples

KEY = "sk-grade-probs-test-key"
PIPELINES = Path(__file__).resolve().parent.parent / "pipelines"
RUBRIC = '+++\nname = "probs"\n+++\n# Grades\n5: exactly. 4: mostly. 3: partly. 2: barely. 1: not relevant.\n'
# doc id -> (the planted distribution over grades 1..5, the grade of each request for the prompt)
PLANTED = {
    "sure": ([0, 0, 1, 0, 0], [3]),
    "leaning": ([0, 0, 0, 0.9, 0.1], [4]),  # 0.469 bits: settled after one sample
    "split_agree": ([0, 0.5, 0.5, 0, 0], [2, 2]),  # 1 bit: a second sample, which agrees
    "spread": ([0.1, 0.2, 0.4, 0.2, 0.1], [3, 2, 3, 4, 2, 5]),  # disagrees to the end: the maximum
    "split_late": ([0.3, 0.7, 0, 0, 0], [2, 1, 1, 1]),  # 0.88 bits: disagree at 2, agree... never at 3 (2,1,1)
}


def expected_probs(probs: list[float], top: int = 10) -> dict[str, float]:
    """What the judge must read: the planted grade alternatives among the top `top` (a non-grade token ' "' at
    0.1 among them), normalised over the grades."""
    alts = [(f"{g}", 0.9 * p) for g, p in enumerate(probs, 1) if p > 0] + [("other", 0.1)]
    alts.sort(key=lambda alt: -alt[1])
    kept = {g: p for g, p in alts[:top] if g != "other"}
    total = sum(kept.values())
    return {str(g): round(kept.get(str(g), 0.0) / total, 6) for g in range(1, 6)}


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    (tmp_path / "rubric.md").write_text(RUBRIC, encoding="utf-8")
    corpus = [{"doc_id": doc, "text": f"receipt {doc} [[probs:{','.join(map(str, probs))}]] "
                                      f"[[seq:{','.join(map(str, seq))}]]"} for doc, (probs, seq) in PLANTED.items()]
    rows = {"queries": [{"query_id": "q1", "text": "which receipt"}], "corpus": corpus,
            "pairs": [{"query_id": "q1", "doc_id": doc} for doc in PLANTED]}
    for name, items in rows.items():
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
    return tmp_path


def run_label(folder: Path, api: FakeAPI, monkeypatch, *, judge: str = "openai:gpt-4.1-mini",
              temperature: float | None = 0.7, out: str = "labels.jsonl", output_mode: str | None = None, **options):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    base_url = api.openai_url if judge.startswith("openai") else api.url
    return label_job(LabelInputs(queries=folder / "queries.jsonl", corpus=folder / "corpus.jsonl",
                                 pairs=folder / "pairs.jsonl", rubric=folder / "rubric.md", cache=folder / "cache",
                                 out=folder / out, base_url=base_url, output_mode=output_mode,
                                 temperature=temperature if judge.startswith("openai") else None,
                                 options=LabelOptions(progress=False, **options)), judge)


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("top", [10, 2])
def test_distribution_expected_grade_and_entropy_are_the_planted_ones(inputs, monkeypatch, top):
    with FakeAPI(logprobs=True) as api:
        run = run_label(inputs, api, monkeypatch, temperature=0.0, grade_probs=True, top_logprobs=top)
        assert api.total == len(PLANTED)
        sent = [r.body for r in api.requests]
        assert all(body["logprobs"] is True and body["top_logprobs"] == top for body in sent)
        assert run.stats.warnings == []
        for label in run.labels:
            probs, seq = PLANTED[label.doc_id]
            want = expected_probs(probs, top)
            assert label.grade == seq[0]
            assert label.grade_probs == want
            assert label.expected_grade == pytest.approx(sum(int(g) * p for g, p in want.items()), abs=1e-6)
            assert label.grade_entropy == pytest.approx(scipy_entropy(list(want.values()), base=2), abs=1e-5)
        spread = {label.doc_id: label for label in run.labels}["spread"]
        if top == 10:
            assert spread.grade_probs == {"1": 0.1, "2": 0.2, "3": 0.4, "4": 0.2, "5": 0.1}
            assert spread.expected_grade == 3.0
        else:  # the two likeliest tokens are " 3" (0.36) and " 2" (0.18): the rest of the mass is not guessed
            assert spread.grade_probs == {"1": 0.0, "2": 0.333333, "3": 0.666667, "4": 0.0, "5": 0.0}
        written = rows_of(inputs / "labels.jsonl")
        assert [row["grade_probs"] for row in written] == [label.grade_probs for label in run.labels]
        assert {(row["grade_probs_source"], row["grading"]) for row in written} == {
            ("logprobs", f"grade-probs logprobs top {top}")}
        api.reset()
        again = run_label(inputs, api, monkeypatch, temperature=0.0, grade_probs=True, top_logprobs=top,
                          out="again.jsonl")
        assert api.total == 0 and again.stats.cached == len(PLANTED)  # stored with the verdict: a rerun pays nothing
        strip = lambda rows: [{k: v for k, v in row.items() if k != "from_cache"} for row in rows]  # noqa: E731
        assert strip(rows_of(inputs / "again.jsonl")) == strip(written)


def test_without_grade_probs_nothing_changes(inputs, monkeypatch):
    with FakeAPI(logprobs=True) as api:
        plain = run_label(inputs, api, monkeypatch, temperature=0.0)
        assert all("logprobs" not in r.body and "top_logprobs" not in r.body for r in api.requests)
        assert all(label.grade_probs is None for label in plain.labels)
        for row in rows_of(inputs / "labels.jsonl"):
            assert not {"grade_probs", "expected_grade", "grade_entropy"} & set(row)
        api.reset()
        probs = run_label(inputs, api, monkeypatch, temperature=0.0, grade_probs=True, out="probs.jsonl")
        assert api.total == len(PLANTED)  # logprobs are a decoding setting sent: another cache key
    assert {label.cache_key for label in probs.labels}.isdisjoint(label.cache_key for label in plain.labels)
    from labeller.store.directory import DirectoryStore

    with DirectoryStore(inputs / "cache") as store:  # the stored record: grade_probs only where there are some
        raw = store.get_many_raw([lb.cache_key for lb in plain.labels + probs.labels])
    assert all('"grade_probs"' not in raw[lb.cache_key] for lb in plain.labels)
    assert all(json.loads(raw[lb.cache_key])["grade_probs"] == lb.grade_probs for lb in probs.labels)


def test_adaptive_sample_counts_are_the_planted_ones_and_a_rerun_pays_nothing(inputs, monkeypatch):
    with FakeAPI(logprobs=True) as api:
        run = run_label(inputs, api, monkeypatch, grade_probs=True, samples=5, adaptive=True)
        asked = {label.doc_id: label.samples for label in run.labels}
        # sure, leaning: entropy <= 0.5 bits, one sample; split_agree: 2 agreeing; spread: never agree, 5;
        # split_late: 2, 1 disagree, then 2, 1, 1 disagree, then 2, 1, 1, 1 ... until the maximum
        assert asked == {"sure": 1, "leaning": 1, "split_agree": 2, "spread": 5, "split_late": 5}
        assert api.total == 14 == run.stats.requests == run.stats.new
        assert run.stats.sample_counts == {"1": 2, "2": 1, "5": 2}
        by_doc = {label.doc_id: label for label in run.labels}
        assert by_doc["spread"].sample_grades == [3, 2, 3, 4, 2]
        assert by_doc["split_agree"].sample_grades == [2, 2]
        assert by_doc["leaning"].grade_entropy <= ENTROPY_SPREAD < by_doc["split_agree"].grade_entropy
        assert by_doc["sure"].grade_probs == {"1": 0.0, "2": 0.0, "3": 1.0, "4": 0.0, "5": 0.0}
        api.reset()
        again = run_label(inputs, api, monkeypatch, grade_probs=True, samples=5, adaptive=True, out="again.jsonl")
        assert api.total == 0  # every sample was keyed as --samples keys it
        assert [lb.sample_grades for lb in again.labels] == [lb.sample_grades for lb in run.labels]
        api.reset()
        run_label(inputs, api, monkeypatch, grade_probs=True, samples=5, out="fixed.jsonl")
        assert api.total == 5 * len(PLANTED) - 14  # --samples 5 reuses the adaptive run's samples


def test_a_server_that_ignores_logprobs_is_noted_and_auto_falls_back_to_samples(inputs, monkeypatch):
    with FakeAPI(logprobs=False) as api:
        run = run_label(inputs, api, monkeypatch, grade_probs=True, samples=3, adaptive=True)
        assert all(r.body["logprobs"] is True for r in api.requests)
    # no distribution: every pair gets a second sample, and a third where the two disagree; the distribution is
    # then the shares of its samples
    assert {label.doc_id: label.samples for label in run.labels} == {
        "sure": 2, "leaning": 2, "split_agree": 2, "spread": 3, "split_late": 3}
    by_doc = {label.doc_id: label for label in run.labels}
    assert by_doc["split_late"].grade_probs == {"1": 0.666667, "2": 0.333333, "3": 0.0, "4": 0.0, "5": 0.0}
    assert by_doc["sure"].grade_probs == {"1": 0.0, "2": 0.0, "3": 1.0, "4": 0.0, "5": 0.0}
    assert {label.grade_probs_source for label in run.labels} == {"samples"}
    notes = [w for w in run.stats.warnings if "log-probabilities" in w]
    assert len(notes) == 1 and "5 of 5 new verdicts" in notes[0] and "second sample" in notes[0]


@pytest.mark.parametrize("judge,mode,said", [("anthropic:claude-haiku-4-5", None, "gives no token log-probabilities"),
                                             ("openai:gpt-4.1-mini", "tool", "tool call's arguments")])
def test_a_judge_without_logprobs_says_so_once(inputs, monkeypatch, judge, mode, said):
    with FakeAPI(logprobs=True) as api:
        run = run_label(inputs, api, monkeypatch, judge=judge, output_mode=mode, grade_probs=True, samples=3,
                        adaptive=True)
        assert all("logprobs" not in r.body for r in api.requests)
    notes = [w for w in run.stats.warnings if w.startswith("--grade-probs")]
    assert len(notes) == 1 and said in notes[0] and "falls back to samples" in notes[0]
    # auto:3 without log-probabilities: a second sample for every pair, a third where the two disagree; the
    # distribution is the shares of the planted sample grades
    by_doc = {label.doc_id: label for label in run.labels}
    assert {doc: label.sample_grades for doc, label in by_doc.items()} == {
        "sure": [3, 3], "leaning": [4, 4], "split_agree": [2, 2], "spread": [3, 2, 3], "split_late": [2, 1, 1]}
    assert by_doc["spread"].grade_probs == {"1": 0.0, "2": 0.333333, "3": 0.666667, "4": 0.0, "5": 0.0}
    assert by_doc["sure"].grade_probs == {"1": 0.0, "2": 0.0, "3": 1.0, "4": 0.0, "5": 0.0}
    assert all(label.grade_probs_source == "samples" for label in run.labels)
    assert {label.grading for label in run.labels} == {"grade-probs from samples; samples auto"}


def test_openai_reasoning_models_are_not_sent_logprobs(monkeypatch):
    from labeller.judges.openai import OpenAIJudge

    judge = OpenAIJudge("o4-mini", api_key=KEY, base_url="https://api.openai.com/v1")
    assert "reasoning" in judge.ask_grade_probs(5)
    assert "logprobs" not in judge.decoding_settings()
    judge = OpenAIJudge("gpt-4.1-mini", api_key=KEY, base_url="https://api.openai.com/v1")
    assert judge.ask_grade_probs(5) is None
    assert judge.decoding_settings()["top_logprobs"] == 5


@pytest.mark.parametrize("text,want", [("3", (3, False)), ("auto", (5, True)), ("auto:7", (7, True))])
def test_samples_option(text, want):
    assert parse_samples(text) == want


@pytest.mark.parametrize("text", ["auto:", "auto:x", "many", "3:4"])
def test_samples_option_refuses_nonsense(text):
    with pytest.raises(BadInputError, match="auto:N"):
        parse_samples(text)


def test_cli_grade_probs_and_samples_auto(inputs, monkeypatch, capsys):
    with FakeAPI(logprobs=True) as api:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        with pytest.raises(SystemExit) as done:
            main(["label", "--queries", str(inputs / "queries.jsonl"), "--corpus", str(inputs / "corpus.jsonl"),
                  "--pairs", str(inputs / "pairs.jsonl"), "--rubric", str(inputs / "rubric.md"),
                  "--judge", "openai:gpt-4.1-mini", "--base-url", api.openai_url, "--cache", str(inputs / "cache"),
                  "--out", str(inputs / "labels.jsonl"), "--samples", "auto:5", "--grade-probs",
                  "--temperature", "0.7"])
        assert done.value.code in (0, None)
        assert api.total == 14
    err = capsys.readouterr().err
    assert "labelled 14 samples (5 pairs: 2 x 1, 1 x 2, 2 x 5; at most 5 a pair)" in err
    rows = rows_of(inputs / "labels.jsonl")
    assert [row["samples"] for row in rows] == [1, 1, 2, 5, 5]
    assert all(set(row["grade_probs"]) == {"1", "2", "3", "4", "5"} for row in rows)


def test_pipeline_label_keys(tmp_path, monkeypatch):
    """`[label] grade_probs`, `samples_auto` and `samples` as the maximum: a sure judge (no planted spread) is
    asked once per pair, and every row carries its distribution."""
    from labeller.pipelines import run_pipeline

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeAPI(logprobs=True) as api:
        monkeypatch.setenv("OPENAI_BASE_URL", api.openai_url)
        result = run_pipeline(PIPELINES / "label_slice.toml", out_dir=tmp_path / "s", judge="openai:gpt-4.1-mini",
                              overrides=["label.samples=3", "label.samples_auto=true", "label.grade_probs=true",
                                         "label.top_logprobs=4", "judge.temperature=0.7"])
        assert result.status == "passed" and api.total == 410
        assert all(r.body["top_logprobs"] == 4 for r in api.requests)
    rows = rows_of(tmp_path / "s" / "labels.jsonl")
    assert len(rows) == 410 and all(r["samples"] == 1 and r["grade_entropy"] == 0.0 for r in rows)
    assert all(r["grade_probs"][str(r["grade"])] == 1.0 and r["expected_grade"] == r["grade"] for r in rows)


def label_cli(inputs: Path, api: FakeAPI, monkeypatch, *extra: str) -> int:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with pytest.raises(SystemExit) as done:
        main(["label", "--queries", str(inputs / "queries.jsonl"), "--corpus", str(inputs / "corpus.jsonl"),
              "--pairs", str(inputs / "pairs.jsonl"), "--rubric", str(inputs / "rubric.md"),
              "--base-url", api.openai_url, "--cache", str(inputs / "cache"), "--out", str(inputs / "labels.jsonl"),
              *extra])
    return done.value.code or 0


def test_escalation_sends_the_spread_pairs_to_the_expensive_judge(inputs, monkeypatch, capsys):
    with FakeAPI(logprobs=True) as api:
        code = label_cli(inputs, api, monkeypatch, "--judge", "openai:cheap-mini", "--escalate-to", "openai:big",
                         "--grade-probs", "--no-escalate-near-cut", "--escalate-above-entropy", "0.5", "--json")
        assert code == 0
        cheap = [r.body for r in api.requests if r.body["model"] == "cheap-mini"]
        big = [r.body for r in api.requests if r.body["model"] == "big"]
    assert len(cheap) == 5 and all(body["logprobs"] for body in cheap)
    assert len(big) == 3 and all("logprobs" not in body for body in big)  # the arbiter's plain verdicts
    rows = {row["doc_id"]: row for row in rows_of(inputs / "labels.jsonl")}
    # entropies: sure 0, leaning 0.469, split_late 0.881, split_agree 1, spread 2.122 bits
    assert {doc for doc, row in rows.items() if row["escalated"]} == {"split_agree", "spread", "split_late"}
    out, err = capsys.readouterr()
    esc = json.loads(out)["escalation"]
    assert (esc["escalated"], esc["for_spread"], esc["for_near_cut"], esc["above"]) == (3, 3, 0, 0.5)
    assert "3 with grade entropy above 0.5 bits" in err


def test_escalation_above_entropy_without_probabilities_says_it_did_nothing(inputs, monkeypatch, capsys):
    with FakeAPI(logprobs=True) as api:
        assert label_cli(inputs, api, monkeypatch, "--judge", "openai:cheap-mini", "--escalate-to", "openai:big",
                         "--no-escalate-near-cut", "--escalate-above-entropy", "0.5") == 0
        assert api.total == 5
    assert "--escalate-above-entropy had no effect" in capsys.readouterr().err


def test_the_uncertain_plan_takes_the_most_spread_grades_first(inputs, monkeypatch):
    from labeller.annotate import make_sample

    with FakeAPI(logprobs=True) as api:
        assert label_cli(inputs, api, monkeypatch, "--judge", "openai:gpt-4.1-mini", "--grade-probs") == 0
    sample = make_sample(inputs / "sample.jsonl", labels=inputs / "labels.jsonl", size=3, plan="uncertain",
                         rubric=str(inputs / "rubric.md"))
    in_order = [item.doc_id for item in sorted(sample.rows, key=lambda r: r.position)]
    assert in_order == ["spread", "split_agree", "split_late"]  # 2.12, 1.0 and 0.88 bits


def test_the_python_api_takes_grade_probs_and_samples_auto(inputs, monkeypatch):
    import pandas as pd

    import labeller

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeAPI(logprobs=True) as api:
        frame = labeller.label(pd.read_json(inputs / "pairs.jsonl", lines=True),
                               queries=pd.read_json(inputs / "queries.jsonl", lines=True),
                               corpus=pd.read_json(inputs / "corpus.jsonl", lines=True), judge="openai:gpt-4.1-mini",
                               rubric=inputs / "rubric.md", cache=inputs / "cache", base_url=api.openai_url,
                               temperature=0.7, samples="auto:5", grade_probs=True)
        assert api.total == 14
    assert list(frame["samples"]) == [1, 1, 2, 5, 5]
    assert frame.set_index("doc_id").loc["spread", "grade_probs"] == {"1": 0.1, "2": 0.2, "3": 0.4, "4": 0.2,
                                                                     "5": 0.1}
    assert frame.attrs["stats"]["sample_counts"] == {"1": 2, "2": 1, "5": 2}


@pytest.mark.parametrize("ext", ["csv", "parquet"])
def test_the_columns_read_back_from_csv_and_parquet(inputs, monkeypatch, ext):
    from labeller.io.inputs import read_labels

    with FakeAPI(logprobs=True) as api:
        run = run_label(inputs, api, monkeypatch, temperature=0.0, grade_probs=True, out=f"labels.{ext}")
    back = read_labels(inputs / f"labels.{ext}")
    columns = ("grade_probs", "expected_grade", "grade_entropy", "grade_probs_source", "grading")
    assert [[getattr(lb, c) for c in columns] for lb in back] == [[getattr(lb, c) for c in columns] for lb in run.labels]
    assert {lb.grade_probs_source for lb in back} == {"logprobs"}


def test_a_dry_run_of_samples_auto_prices_the_first_sample_and_says_so(inputs, monkeypatch):
    with FakeAPI(logprobs=True) as api:
        dry = run_label(inputs, api, monkeypatch, grade_probs=True, samples=4, adaptive=True, dry_run=True)
        assert api.total == 0
    assert dry.stats.new == len(PLANTED) and dry.stats.sample_counts == {"1": len(PLANTED)}
    assert any("the first sample of each pair is priced" in note for note in dry.stats.estimate_notes)


def _tokens(*parts):
    """logprobs.content as the openai reply model reads it: (text, [(alternative, probability), ...])."""
    from labeller.judges.openai_reply import TokenLogprob

    return [TokenLogprob.model_validate({"token": text, "logprob": 0.0,
                                         "top_logprobs": [{"token": t, "logprob": math.log(p)} for t, p in alts]})
            for text, alts in parts]


def test_the_grade_token_is_read_however_the_tokenizer_cut_it():
    from labeller.judges.grade_probs import grade_distribution

    # the key's colon and the digit in one token; the same grade with and without its space summed; "35" (a
    # longer number) and another prefix left out
    merged = _tokens(('{"justification":"x","grade', []), ('": 4', [('": 4', 0.5), ('":4', 0.1), ('": 2', 0.2),
                                                                      ('": 35', 0.1), ('"x 1', 0.1)]), ("}", []))
    assert grade_distribution(merged) == {"1": 0.0, "2": 0.25, "3": 0.0, "4": 0.75, "5": 0.0}
    # the digit and the closing brace in one token
    closing = _tokens(('{"grade": ', []), ("3}", [("3}", 0.6), ("1}", 0.2), ("1", 0.2)]))
    assert grade_distribution(closing) == {"1": 0.4, "2": 0.0, "3": 0.6, "4": 0.0, "5": 0.0}
    # "grade" quoted inside the justification is not the grade; a reply without one has no distribution
    quoted = _tokens(('{"justification": "\\"grade\\": 1", "grade": ', []), ("5", [("5", 0.9), ("4", 0.1)]))
    assert grade_distribution(quoted) == {"1": 0.0, "2": 0.0, "3": 0.0, "4": 0.1, "5": 0.9}
    assert grade_distribution(_tokens(('{"justification": "x"}', []))) is None
    assert grade_distribution([]) is None
    assert grade_distribution(_tokens(('{"grade": ', []), ("3", [(" maybe", 1.0)]))) is None  # no grade among them


def test_max_cost_spans_the_rounds_of_samples_auto(inputs, monkeypatch):
    from labeller.errors import BudgetExceededError

    # replies near the output cap, so what a request costs is about what the budget reserves for it
    with FakeAPI(logprobs=True, reply_tokens=390) as api:
        full = run_label(inputs, api, monkeypatch, grade_probs=True, samples=5, adaptive=True)
        assert api.total == 14 and full.stats.cost_usd > 0
    (inputs / "cache").rename(inputs / "cache-full")
    with FakeAPI(logprobs=True, reply_tokens=390) as api:  # a new server: its planted sample sequences restart
        with pytest.raises(BudgetExceededError) as stopped:
            run_label(inputs, api, monkeypatch, grade_probs=True, samples=5, adaptive=True,
                      max_cost=full.stats.cost_usd * 0.6, out="capped.jsonl")
        assert 5 <= api.total < 14  # the first round was bought; the budget stopped a later one
    stats = stopped.value.run.stats
    assert stats.budget_stopped and stats.cost_usd <= full.stats.cost_usd * 0.6
    assert stats.requested > stats.new and stats.skipped_by_budget > 0
