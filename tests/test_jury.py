"""Juries (`--judge A --judge B ...`) and escalation (`--judge CHEAP --escalate-to EXPENSIVE`) through the real
command line, the real SDKs and real HTTP to the fake API, whose judges differ by model (model_offsets,
model_noise). Every document carries its right grade as a marker, which is also the gold grade."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from fakeapi import FakeAPI, model_grade
from jury_helpers import BASE, N, by_model, cli, doc_of, planted, read, write_slice
from sklearn.metrics import cohen_kappa_score

from labeller.labelling.escalation import NEAR_CUT, reason
from labeller.labelling.jury import jury_label
from labeller.records import Label

KEY = "sk-jury-secret-0123456789"
CHEAP, EXPENSIVE, OTHER = "gpt-4.1-mini", "gpt-4.1", "claude-haiku-4-5"


@pytest.fixture
def api():
    with FakeAPI(model_offsets={OTHER: 1}, model_noise={CHEAP: 0.5, OTHER: 0.3}) as server:
        yield server


@pytest.fixture
def files(tmp_path, monkeypatch, api):
    return write_slice(tmp_path, monkeypatch, api, KEY)


JURY = ["--judge", f"openai:{CHEAP}", "--judge", f"openai:{EXPENSIVE}", "--judge", f"anthropic:{OTHER}"]
ESCALATE = ["--judge", f"openai:{CHEAP}", "--escalate-to", f"openai:{EXPENSIVE}"]


def _label(judge: str, grade: int, key: str = "k") -> Label:
    return Label(query_id="q", doc_id="d", grade=grade, justification=f"{judge} says {grade}", judge=judge,
                 provider=judge.split(":")[0], model=judge.split(":")[1], rubric="r", rubric_version="v",
                 cache_key=key, input_tokens=10, output_tokens=2, cost_usd=0.5, created_at="2026-01-01T00:00:00+00:00")


@pytest.mark.parametrize("grades, expected", [((3, 3, 5), 3), ((1, 3, 5), 3), ((2, 4), 2), ((4, 2), 2),
                                              ((5, 1, 1, 5), 1), ((2, 3, 4, 5), 3), ((4,), 4)])
def test_the_jury_grade_is_the_median_and_an_even_split_takes_the_lower_middle(grades, expected):
    votes = [_label(f"p:m{i}", g, f"k{i}") for i, g in enumerate(grades)]
    jury = jury_label("jury:median(...)", votes)
    assert jury.grade == expected
    assert jury.judge_grades == {f"p:m{i}": g for i, g in enumerate(grades)}
    speaker = next(v for v in votes if v.grade == expected)  # the first judge who gave the jury's grade
    assert jury.justification.endswith(f"{speaker.judge}: {speaker.justification}")
    assert jury.cost_usd == pytest.approx(0.5 * len(grades)) and jury.input_tokens == 10 * len(grades)


def test_a_jury_labels_with_every_judge_once_and_a_rerun_sends_nothing(files, api, capsys):
    code, out, err = cli(capsys, *BASE, *JURY, "--json")
    assert code == 0, err
    assert by_model(api) == {CHEAP: N, EXPENSIVE: N, OTHER: N}  # each judge asked once per pair
    jury = read(files / "labels.jsonl")
    judges = read(files / "labels.judges.jsonl")
    assert len(jury) == N and len(judges) == 3 * N
    names = [f"openai:{CHEAP}", f"openai:{EXPENSIVE}", f"anthropic:{OTHER}"]
    grade_of = {(r["judge"], r["doc_id"]): r["grade"] for r in judges}
    for row in jury:
        i = int(row["doc_id"][1:])
        own = {n: grade_of[(n, row["doc_id"])] for n in names}
        # each judge answered as the fake model was set to
        assert own == {n: model_grade(_user_prompt(api, n, i), n.split(":")[1], api.model_offsets, api.model_noise)
                       for n in names}
        assert row["judge_grades"] == own
        assert row["grade"] == sorted(own.values())[1]
        assert row["judge"] == f"jury:median({','.join(names)})"
    stats = json.loads(out)
    for p in stats["inter_judge"]["pairwise"]:
        a = [grade_of[(p["first"], f"d{i}")] for i in range(N)]
        b = [grade_of[(p["second"], f"d{i}")] for i in range(N)]
        assert p["kappa"] == pytest.approx(cohen_kappa_score(a, b, labels=[1, 2, 3, 4, 5]))
        assert p["kappa_quadratic"] == pytest.approx(cohen_kappa_score(a, b, labels=[1, 2, 3, 4, 5],
                                                                       weights="quadratic"))
    import krippendorff

    data = np.array([[grade_of[(n, f"d{i}")] for i in range(N)] for n in names], dtype=float)
    assert stats["inter_judge"]["alpha_ordinal"] == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal"))
    assert "inter-judge openai:gpt-4.1-mini vs openai:gpt-4.1: kappa" in err
    assert stats["requests"] == 3 * N and stats["judges"][names[2]]["requests"] == N

    api.reset()
    code, out, err = cli(capsys, *BASE, *JURY, "--out", "again.jsonl")
    assert code == 0 and api.total == 0, err
    assert [r["grade"] for r in read(files / "again.jsonl")] == [r["grade"] for r in jury]
    # one judge more pays only for that judge
    code, _, err = cli(capsys, *BASE, *JURY, "--judge", "openai:gpt-4.1-nano", "--out", "four.jsonl")
    assert code == 0 and by_model(api) == {"gpt-4.1-nano": N}, err


def _user_prompt(api: FakeAPI, judge: str, i: int) -> str:
    from fakeapi import _text

    model = judge.split(":")[1]
    for r in api.requests:
        body = r.body
        if body["model"] != model:
            continue
        user = "".join(_text(m.get("content")) for m in body.get("messages", []) if m.get("role") == "user")
        if f"passage {i} [[" in user:
            return user
    raise AssertionError(f"no request of {judge} for d{i}")


def test_agree_on_a_jury_file_shows_each_judge_and_the_jury_against_gold(files, api, capsys):
    code, _, err = cli(capsys, *BASE, *JURY, "--out", "jury.csv")
    assert code == 0, err
    code, out, err = cli(capsys, "agree", "--labels", "jury.csv", "--gold", "gold.jsonl", "--json")
    assert code == 0, err
    rows = {r["name"]: r for r in json.loads(out)["judges"]}
    jury_name = f"jury:median(openai:{CHEAP},openai:{EXPENSIVE},anthropic:{OTHER})"
    assert list(rows) == [f"openai:{CHEAP}", f"openai:{EXPENSIVE}", f"anthropic:{OTHER}", jury_name]
    assert rows[f"openai:{EXPENSIVE}"]["kappa"] == pytest.approx(1.0)  # the exact model is the gold
    # each judge's row is what `labeller agree` says of that judge's own labels alone
    import pandas as pd

    own = pd.read_csv(files / "jury.judges.csv")
    own[own["judge"] == f"openai:{CHEAP}"].to_csv(files / "cheap.csv", index=False)
    code, alone, _ = cli(capsys, "agree", "--labels", "cheap.csv", "--gold", "gold.jsonl", "--json")
    alone = json.loads(alone)
    assert rows[f"openai:{CHEAP}"]["kappa"] == pytest.approx(alone["kappa"])
    assert rows[f"openai:{CHEAP}"]["kappa_ci"] == alone["ci"]["kappa"]
    assert alone["judges"] == []  # one judge's file: no per-judge rows
    code, text, _ = cli(capsys, "agree", "--labels", "jury.csv", "--gold", "gold.jsonl")
    assert f"  {jury_name}: kappa" in text


def test_escalation_asks_the_expensive_judge_only_near_the_cut_and_reports_cost_and_gold(files, api, capsys):
    code, out, err = cli(capsys, *BASE, *ESCALATE, "--gold", "gold.jsonl", "--json")
    assert code == 0, err
    cheap = {r["doc_id"]: r["grade"] for r in read(files / "labels.judges.jsonl") if r["model"] == CHEAP}
    selected = {d for d, g in cheap.items() if g in (2, 3)}
    assert 0 < len(selected) < N
    assert by_model(api) == {CHEAP: N, EXPENSIVE: len(selected)}
    asked = {doc_of(r) for r in api.requests if r.body["model"] == EXPENSIVE}
    assert asked == selected
    final = read(files / "labels.jsonl")
    for row in final:
        i = int(row["doc_id"][1:])
        assert row["escalated"] == (row["doc_id"] in selected)
        assert row["grade"] == (planted(i) if row["escalated"] else cheap[row["doc_id"]])
        assert row["model"] == (EXPENSIVE if row["escalated"] else CHEAP)
        assert row["judge_grades"][f"openai:{CHEAP}"] == cheap[row["doc_id"]]
    stats = json.loads(out)
    esc = stats["escalation"]
    assert esc["escalated"] == len(selected) and esc["share"] == pytest.approx(len(selected) / N)
    assert esc["for_near_cut"] == len(selected)
    judges = stats["judges"]
    assert judges[f"openai:{CHEAP}"]["requests"] == N and judges[f"openai:{EXPENSIVE}"]["requests"] == len(selected)
    assert stats["cost_usd"] == pytest.approx(judges[f"openai:{CHEAP}"]["cost_usd"]
                                              + judges[f"openai:{EXPENSIVE}"]["cost_usd"])
    assert esc["expensive_cost_usd"] == pytest.approx(judges[f"openai:{EXPENSIVE}"]["cost_usd"])
    assert esc["expensive_alone_usd"] == pytest.approx(esc["expensive_cost_usd"] * N / len(selected), abs=1e-6)
    assert esc["cheap_cost_usd"] > 0 and esc["cheap_cost_usd"] == pytest.approx(judges[f"openai:{CHEAP}"]["cost_usd"])
    gold = {r["name"]: r for r in stats["against_gold"]}
    gold_grades = [planted(i) for i in range(N)]
    assert gold[f"openai:{CHEAP}"]["kappa"] == pytest.approx(
        cohen_kappa_score(gold_grades, [cheap[f"d{i}"] for i in range(N)], labels=[1, 2, 3, 4, 5]))
    assert gold["escalated (final labels)"]["kappa"] == pytest.approx(
        cohen_kappa_score(gold_grades, [r["grade"] for r in final], labels=[1, 2, 3, 4, 5]))
    assert gold["escalated (final labels)"]["exact_agreement"] > gold[f"openai:{CHEAP}"]["exact_agreement"]
    assert gold[f"openai:{EXPENSIVE}"]["n"] == len(selected)
    assert f"escalation: {len(selected)} of {N} pairs" in err and "against gold" in err

    api.reset()
    code, out, err = cli(capsys, *BASE, *ESCALATE, "--out", "again.jsonl", "--json")
    assert code == 0 and api.total == 0, err
    assert json.loads(out)["escalation"]["expensive_cost_usd"] == pytest.approx(esc["expensive_cost_usd"])  # from cache
    assert read(files / "again.jsonl") == [{**r, "from_cache": True} for r in final]
    # a wider rule (cut at 4: grades 3 and 4) pays only for the pairs newly selected
    code, _, err = cli(capsys, *BASE, *ESCALATE, "--relevant-from", "4", "--out", "wider.jsonl")
    newly = {d for d, g in cheap.items() if g in (3, 4)} - selected
    assert code == 0 and by_model(api) == ({EXPENSIVE: len(newly)} if newly else {}), err


def test_an_escalation_dry_run_prices_the_worst_case_then_the_known_selection(files, api, capsys):
    code, out, err = cli(capsys, *BASE, *ESCALATE, "--dry-run", "--json")
    assert code == 0 and api.total == 0, err
    stats = json.loads(out)
    assert stats["escalation"]["worst_case"] == N and stats["escalation"]["escalated"] == N
    assert stats["judges"][f"openai:{EXPENSIVE}"]["new"] == N
    assert stats["estimated_cost_usd"] == pytest.approx(sum(j["estimated_cost_usd"] for j in stats["judges"].values()))
    assert "upper bound" in err and not (files / "labels.jsonl").exists()
    # once the cheap judge's verdicts are cached, the selection is known exactly
    code, _, err = cli(capsys, *BASE, "--judge", f"openai:{CHEAP}", "--out", "cheap.jsonl")
    assert code == 0, err
    selected = sum(1 for r in read(files / "cheap.jsonl") if r["grade"] in (2, 3))
    code, out, err = cli(capsys, *BASE, *ESCALATE, "--dry-run", "--json")
    stats = json.loads(out)
    assert stats["escalation"]["worst_case"] == 0 and stats["judges"][f"openai:{EXPENSIVE}"]["new"] == selected
    assert stats["judges"][f"openai:{CHEAP}"]["cached"] == N


def test_the_sample_agreement_rule_reads_labels_that_carry_it():
    """Labels from --samples carry sample_agreement; those without it are judged by the near-the-cut rule only."""
    rule = dict(relevant_from=3, below=0.8, near_cut=True)
    assert reason(SimpleNamespace(grade=5, sample_agreement=0.6), **rule) == "sample agreement 0.60 < 0.8"
    assert reason(SimpleNamespace(grade=5, sample_agreement=0.8), **rule) is None
    assert reason(SimpleNamespace(grade=2, sample_agreement=1.0), **rule) == NEAR_CUT
    assert reason(_label("p:m", 5), **rule) is None and reason(_label("p:m", 3), **rule) == NEAR_CUT
    assert reason(_label("p:m", 3), relevant_from=3, below=0.8, near_cut=False) is None


def test_the_python_api_labels_with_a_jury_and_escalates(files, api):
    import pandas as pd

    import labeller

    pairs = pd.read_json(files / "pairs.jsonl", lines=True)
    inputs = dict(queries=files / "queries.jsonl", corpus=files / "corpus.jsonl", rubric=files / "rubric.md",
                  cache=files / "cache")
    frame = labeller.label(pairs, judges=[f"openai:{CHEAP}", f"anthropic:{OTHER}"], **inputs)
    assert len(frame) == N and by_model(api) == {CHEAP: N, OTHER: N}
    own = frame.attrs["judge_labels"]
    assert len(own) == 2 * N and set(own["judge"]) == {f"openai:{CHEAP}", f"anthropic:{OTHER}"}
    for row in frame.itertuples():
        assert row.grade == min(row.judge_grades.values())  # two judges: the lower grade
    assert frame.attrs["stats"]["inter_judge"]["pairwise"][0]["n"] == N

    gold = [{"query_id": f"q{i % 8}", "doc_id": f"d{i}", "grade": planted(i)} for i in range(N)]
    api.reset()
    escalated = labeller.label(pairs, judge=f"openai:{CHEAP}", escalate_to=f"openai:{EXPENSIVE}", gold=gold, **inputs)
    selected = int(escalated["escalated"].sum())
    assert by_model(api) == {EXPENSIVE: selected}  # the cheap verdicts came from the jury's cache
    names = [r["name"] for r in escalated.attrs["stats"]["against_gold"]]
    assert names == [f"openai:{CHEAP}", f"openai:{EXPENSIVE}", "escalated (final labels)"]
    single = labeller.label(pairs, judge=f"openai:{CHEAP}", **inputs)
    assert "judge_grades" not in single.columns and "escalated" not in single.columns  # one judge: columns as before


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_escalation_files_in_every_format_read_back_in_agree(files, api, capsys, suffix):
    """Rows with and without the expensive judge's grade: a JSON cell in CSV, a struct with nulls in Parquet."""
    code, _, err = cli(capsys, *BASE, *ESCALATE, "--out", f"esc{suffix}")
    assert code == 0, err
    code, out, err = cli(capsys, "agree", "--labels", f"esc{suffix}", "--gold", "gold.jsonl", "--json")
    assert code == 0, err
    rows = {r["name"]: r for r in json.loads(out)["judges"]}
    selected = sum(1 for r in read_table(files / f"esc.judges{suffix}") if r["model"] == EXPENSIVE)
    assert rows[f"openai:{EXPENSIVE}"]["n"] == selected and rows[f"openai:{CHEAP}"]["n"] == N
    assert rows["escalated (final labels)"]["n"] == N


def read_table(path: Path) -> list[dict]:
    from labeller.io.tables import read_rows

    return [row for _, row in read_rows(path)]


def test_a_pair_one_judge_cannot_grade_gets_no_jury_grade_and_a_rerun_pays_only_for_it(files, api, capsys):
    api.poison["passage 7 [["] = "400"  # every judge's request for d7 is refused
    code, _, err = cli(capsys, *BASE, *JURY[:4])
    assert code == 1 and "1 of 40 pairs lack a grade from every judge" in err.splitlines()[-1], err
    assert [r["doc_id"] for r in read(files / "labels.jsonl")] == [f"d{i}" for i in range(N) if i != 7]
    failures = read(files / "labels.failures.jsonl")
    assert {(f["judge"], f["doc_id"]) for f in failures} == {(f"openai:{CHEAP}", "d7"), (f"openai:{EXPENSIVE}", "d7")}
    api.poison.clear()
    api.reset()
    code, _, err = cli(capsys, *BASE, *JURY[:4])
    assert code == 0 and by_model(api) == {CHEAP: 1, EXPENSIVE: 1}, err
    assert len(read(files / "labels.jsonl")) == N and not (files / "labels.failures.jsonl").exists()


def test_max_cost_is_shared_by_the_judges_of_a_jury(files, api, capsys):
    """The cheap judge costs about $0.006 for the slice; the second judge gets only what is left of $0.01."""
    code, out, err = cli(capsys, *BASE, *JURY[:4], "--max-cost", "0.01", "--json")
    assert code == 3 and f"--max-cost reached during openai:{EXPENSIVE}" in err.splitlines()[-1], err
    counts = by_model(api)
    assert counts[CHEAP] == N and 0 < counts[EXPENSIVE] < N
    stats = json.loads(out)
    assert stats["cost_usd"] <= 0.01 and stats["labelled"] == stats["judges"][f"openai:{EXPENSIVE}"]["new"]
    assert len(read(files / "labels.jsonl")) == stats["labelled"]  # only pairs every judge graded


def test_a_jury_dry_run_needs_no_key_and_a_jury_goes_through_provider_batches(files, api, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    code, out, err = cli(capsys, *BASE, *JURY, "--dry-run", "--json")
    stats = json.loads(out)
    assert code == 0 and api.total == 0 and not (files / "labels.jsonl").exists(), err
    assert [j["new"] for j in stats["judges"].values()] == [N, N, N]
    assert stats["estimated_cost_usd"] == pytest.approx(sum(j["estimated_cost_usd"] for j in stats["judges"].values()))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    code, _, err = cli(capsys, *BASE, "--judge", f"openai:{CHEAP}", "--judge", f"anthropic:{OTHER}", "--batch",
                       "--poll-interval", "0.02")
    assert code == 0 and sum(api.batched.values()) == 2 * N and api.batched_twice == 0, err
    assert err.count("at batch prices") == 2 and len(read(files / "labels.jsonl")) == N
