"""`labeller probe` against the fake provider over real HTTP (openai and anthropic SDKs), with biases planted.

Every document carries a `[[grade:N]]` marker, so the fake's grade of each original is known; a planted
bias (tests/fakeapi.py: length_bias, stuffing_bias, obeys_injection, lowercase_bias) then moves the grade
of exactly the perturbed copies it targets, and the expected shift is computed from the markers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakeapi import FakeAPI

from labeller.cli import main

KEY = "sk-probe-test-0123456789"
GRADES = (1, 2, 4, 5)  # each query's documents, by marker
JUDGES = {"openai": ("openai:gpt-4.1-mini", "openai_url"), "anthropic": ("anthropic:claude-haiku-4-5", "url")}


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def inputs(root: Path, n_queries: int = 6) -> Path:
    """Queries q1.. with four documents each, graded GRADES by marker; gold says the same grades."""
    queries = [{"query_id": f"q{i}", "text": f"Find topic{i} details"} for i in range(1, n_queries + 1)]
    corpus, gold = [], []
    for q in range(1, n_queries + 1):
        for j, g in enumerate(GRADES):
            did = f"d{q}-{j}"
            corpus.append({"doc_id": did, "text": f"Note {did} about topic{q} [[grade:{g}]] kept on file."})
            gold.append({"query_id": f"q{q}", "doc_id": did, "grade": g, "annotator": "a", "note": ""})
    write_jsonl(root / "queries.jsonl", queries)
    write_jsonl(root / "corpus.jsonl", corpus)
    write_jsonl(root / "gold.jsonl", gold)
    return root


def probe(api: FakeAPI, root: Path, *extra: str, provider: str = "openai", monkeypatch=None) -> tuple[int, dict]:
    judge, url = JUDGES[provider]
    args = ["probe", "--queries", str(root / "queries.jsonl"), "--corpus", str(root / "corpus.jsonl"),
            "--labels", str(root / "gold.jsonl"), "--judge", judge, "--base-url", getattr(api, url),
            "--cache", str(root / "cache"), "--json", *extra]
    with pytest.raises(SystemExit) as done:
        main(args)
    return int(done.value.code or 0), done


@pytest.fixture
def keyed(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def run_json(api, root, capsys, *extra, provider="openai"):
    code, _ = probe(api, root, *extra, provider=provider)
    out = capsys.readouterr().out
    return code, json.loads(out)


def by_probe(report: dict) -> dict[str, dict]:
    return {p["probe"]: p for p in report["probes"]}


def clipped_shift(grades, bias: int) -> float:
    return sum(min(max(g + bias, 1), 5) - g for g in grades) / len(grades)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_unbiased_judge_passes_every_probe_and_a_rerun_pays_nothing(provider, tmp_path, keyed, capsys):
    root = inputs(tmp_path)
    with FakeAPI(long_document=300) as api:
        code, report = run_json(api, root, capsys, provider=provider)
        assert code == 0 and report["passed"]
        for p in report["probes"]:
            assert p["verdict"] == "pass" and p["mean_shift"] == 0 and p["share_changed"] == 0, p
            assert p["failed"] == 0 and p["graded"] == p["pairs"] > 0
        sent = api.total
        assert sent == report["cost"]["new"] > 0
        api.reset()
        code, again = run_json(api, root, capsys, provider=provider)
        assert code == 0 and api.total == 0 and again["cost"]["new"] == 0
        assert again["cost"]["cached"] == report["cost"]["new"] + report["cost"]["cached"]


PLANTED = {  # probe -> fake knob, and the shift it must produce on the pairs the probe runs on
    "length": ({"length_bias": 1}, lambda gs: clipped_shift(gs, 1)),
    "stuffing": ({"stuffing_bias": 2}, lambda gs: clipped_shift(gs, 2)),
    "injection": ({"obeys_injection": True}, lambda gs: sum(5 - g for g in gs) / len(gs)),
    "near-duplicate": ({"lowercase_bias": -1}, lambda gs: clipped_shift(gs, -1)),
}


@pytest.mark.parametrize("planted", list(PLANTED))
def test_a_planted_bias_shows_its_shift_and_fails_only_its_probe(planted, tmp_path, keyed, capsys):
    root = inputs(tmp_path)
    knobs, expected = PLANTED[planted]
    with FakeAPI(long_document=300, **knobs) as api:
        code, report = run_json(api, root, capsys)
    assert code == 1 and not report["passed"]
    results = by_probe(report)
    hit = results[planted]
    originals = [s["original"] for s in hit["shifts"]]
    assert originals == [s["reference"] for s in hit["shifts"]]  # the fake graded every original by its marker
    assert hit["mean_shift"] == pytest.approx(expected(originals))
    assert hit["verdict"] == "fail"
    assert all(s["perturbed"] - s["original"] == round(expected([s["original"]])) for s in hit["shifts"])
    if planted in ("stuffing", "injection"):  # these run on irrelevant pairs only
        assert set(originals) <= {1, 2} and len(originals) == 12
    else:
        assert len(originals) == 24
    for name, other in results.items():
        if name != planted:
            assert other["verdict"] == "pass" and other["mean_shift"] == 0, (name, other)


def test_planted_length_bias_expected_value_and_interval(tmp_path, keyed, capsys):
    """+1 on every padded document, clipped at 5: grades 1, 2, 4, 5 shift by 1, 1, 1, 0, so 0.75 exactly,
    and every query has the same mean, so the query-resampled interval is that point."""
    root = inputs(tmp_path)
    with FakeAPI(long_document=300, length_bias=1) as api:
        code, report = run_json(api, root, capsys, "--probes", "length")
    length = by_probe(report)["length"]
    assert code == 1 and [p["probe"] for p in report["probes"]] == ["length"]
    assert length["mean_shift"] == pytest.approx(0.75) and length["share_changed"] == pytest.approx(0.75)
    assert length["mean_shift_interval"] == {"low": pytest.approx(0.75), "high": pytest.approx(0.75)}
    assert all("#probe:length" in s["probe_doc_id"] for s in length["shifts"])


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_small_sample_of_five_queries_still_fails(provider, tmp_path, keyed, capsys):
    root = inputs(tmp_path, n_queries=5)
    with FakeAPI(long_document=300, obeys_injection=True) as api:
        code, report = run_json(api, root, capsys, "--probes", "injection", "--pairs-per-probe", "5",
                                provider=provider)
        assert api.total == api.counts["/v1/messages" if provider == "anthropic" else "/v1/chat/completions"] > 0
    injection = by_probe(report)["injection"]
    assert code == 1 and injection["verdict"] == "fail" and injection["pairs"] == 5
    assert injection["mean_shift"] >= 3  # originals graded 1 or 2, all moved to 5


def test_the_threshold_decides_and_is_per_probe(tmp_path, keyed, capsys):
    root = inputs(tmp_path)
    with FakeAPI(long_document=300, length_bias=1) as api:
        code, report = run_json(api, root, capsys, "--probes", "length,stuffing", "--threshold", "0.1,length=0.8")
        assert code == 0 and by_probe(report)["length"]["threshold"] == 0.8
        assert by_probe(report)["stuffing"]["threshold"] == 0.1
        code, report = run_json(api, root, capsys, "--probes", "length", "--threshold", "0.74")
        assert code == 1


def test_the_seed_picks_the_pairs_and_a_rerun_is_identical(tmp_path, keyed, capsys):
    root = inputs(tmp_path)
    with FakeAPI(long_document=300) as api:
        _, first = run_json(api, root, capsys, "--pairs-per-probe", "5", "--seed", "1")
        _, again = run_json(api, root, capsys, "--pairs-per-probe", "5", "--seed", "1")
        _, other = run_json(api, root, capsys, "--pairs-per-probe", "5", "--seed", "2")
    pick = lambda r: {p["probe"]: [(s["query_id"], s["doc_id"]) for s in p["shifts"]] for p in r["probes"]}  # noqa: E731
    assert pick(first) == pick(again) and pick(first) != pick(other)


def test_judge_failures_are_counted_never_a_grade(tmp_path, keyed, capsys):
    root = inputs(tmp_path)
    with FakeAPI(long_document=300) as api:
        api.poison["d1-0 about topic1 [[grade:1]] kept on file. Find topic1 details"] = "malformed"  # its stuffed copy
        code, report = run_json(api, root, capsys, "--probes", "stuffing")
    stuffing = by_probe(report)["stuffing"]
    assert code == 0 and stuffing["failed"] == 1 and stuffing["graded"] == stuffing["pairs"] - 1
    failed = [s for s in stuffing["shifts"] if s["perturbed"] is None]
    assert [(s["query_id"], s["doc_id"]) for s in failed] == [("q1", "d1-0")] and failed[0]["original"] == 1
    assert report["cost"]["failed"] == 1


def test_copies_never_reach_the_corpus_and_reports_are_written(tmp_path, keyed, capsys):
    root = inputs(tmp_path)
    before = (root / "corpus.jsonl").read_bytes()
    with FakeAPI(long_document=300, stuffing_bias=1) as api:
        code, _ = probe(api, root, "--report", str(root / "out"))
    capsys.readouterr()
    assert code == 1 and (root / "corpus.jsonl").read_bytes() == before
    assert json.loads((root / "out" / "probes.json").read_text())["passed"] is False
    markdown = (root / "out" / "probes.md").read_text()
    assert "| stuffing | FAIL |" in markdown
    table = [line for line in markdown.splitlines() if line.startswith("|")]
    assert len(table) == 2 + 4 and len({line.count("|") for line in table}) == 1  # one column per cell
    assert "Judge bias probes: FAIL" in (root / "out" / "probes.html").read_text()


def test_bare_pairs_use_the_judges_own_grades(tmp_path, keyed, capsys):
    root = inputs(tmp_path)
    write_jsonl(root / "pairs.jsonl", [{"query_id": r["query_id"], "doc_id": r["doc_id"]}
                                       for r in map(json.loads, (root / "gold.jsonl").read_text().splitlines())])
    with FakeAPI(long_document=300, obeys_injection=True) as api:
        args = ["probe", "--queries", str(root / "queries.jsonl"), "--corpus", str(root / "corpus.jsonl"),
                "--pairs", str(root / "pairs.jsonl"), "--judge", "openai:gpt-4.1-mini", "--base-url",
                api.openai_url, "--cache", str(root / "cache"), "--json", "--probes", "injection"]
        with pytest.raises(SystemExit) as done:
            main(args)
    report = json.loads(capsys.readouterr().out)
    assert done.value.code == 1 and "judge's own grades" in report["reference"]
    assert by_probe(report)["injection"]["mean_shift"] == pytest.approx(3.5)  # (5-1 + 5-2) / 2


def test_the_offline_judge_probes_the_bundled_sample_with_no_key(tmp_path, capsys):
    """No key, no server: the default judge on the shipped sample. The lexical heuristic counts query
    words, so keyword stuffing inflates it, and the probe says so; it reads lower case as upper case."""
    with pytest.raises(SystemExit) as done:
        main(["probe", "--sample", "--cache", str(tmp_path / "cache"), "--json", "--pairs-per-probe", "20"])
    report = json.loads(capsys.readouterr().out)
    results = by_probe(report)
    assert report["judge"] == "offline:lexical" and report["rubric"].startswith("transactions@")
    assert results["stuffing"]["mean_shift"] > 0.5 and results["stuffing"]["verdict"] == "fail"
    assert results["near-duplicate"]["mean_abs_shift"] == 0 and results["near-duplicate"]["verdict"] == "pass"
    assert done.value.code == 1


def test_the_python_api_takes_dataframes_and_gates_like_the_cli(tmp_path, keyed):
    import pandas as pd

    import labeller

    root = inputs(tmp_path)
    frame = lambda name: pd.read_json(root / name, lines=True)  # noqa: E731
    with FakeAPI(long_document=300, length_bias=1) as api:
        report = labeller.probe(frame("gold.jsonl"), queries=frame("queries.jsonl"), corpus=frame("corpus.jsonl"),
                                judge="openai:gpt-4.1-mini", base_url=api.openai_url, cache=tmp_path / "c",
                                probes=["length", "near-duplicate"], threshold={"length": 0.7, "*": 0.2})
        assert not report.passed and api.total > 0
        figures = {r.probe: r for r in report.probes}
        assert figures["length"].mean_shift == pytest.approx(0.75) and figures["length"].verdict == "fail"
        assert figures["near-duplicate"].verdict == "pass" and figures["near-duplicate"].threshold == 0.2
        api.reset()
        again = labeller.probe(root / "gold.jsonl", queries=root / "queries.jsonl", corpus=root / "corpus.jsonl",
                               judge="openai:gpt-4.1-mini", base_url=api.openai_url, cache=tmp_path / "c",
                               probes="length", threshold=0.8)
        assert again.passed and api.total == 0
    from labeller.errors import BadInputError

    with pytest.raises(BadInputError, match="unknown probe 'speed'"):
        labeller.probe(root / "gold.jsonl", queries=root / "queries.jsonl", corpus=root / "corpus.jsonl",
                       threshold={"speed": 1})


def test_a_judge_that_punishes_length_fails_too(tmp_path, keyed, capsys):
    """The gate reads the size of the shift: a bias downwards is a bias."""
    root = inputs(tmp_path)
    with FakeAPI(long_document=300, length_bias=-1) as api:
        code, report = run_json(api, root, capsys, "--probes", "length")
    length = by_probe(report)["length"]
    assert code == 1 and length["verdict"] == "fail"
    assert length["mean_shift"] == pytest.approx(clipped_shift([1, 2, 4, 5], -1)) == pytest.approx(-0.75)


def test_a_dry_run_counts_and_sends_nothing_then_the_run_pays_only_what_it_said(tmp_path, capsys, monkeypatch):
    root = inputs(tmp_path)
    with FakeAPI(long_document=300) as api:
        code, dry = run_json(api, root, capsys, "--dry-run")  # no key set: a dry run needs none
        assert code == 0 and api.total == 0 and dry["probes"] == [] and not (root / "cache").exists()
        estimate = dry["estimate"]
        assert estimate["new"] > 0 and estimate["cached"] >= 0 and estimate["input_tokens"] > 0
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        code, report = run_json(api, root, capsys)
        assert code == 0 and api.total == report["cost"]["new"] == estimate["new"]
        api.reset()
        _, again = run_json(api, root, capsys, "--dry-run")
        assert again["estimate"]["new"] == 0 and api.total == 0


def test_probe_files_takes_labelling_inputs_and_builds_the_judge_as_label_does(tmp_path, keyed):
    """probe_files(LabelInputs, judge): the judge gets the inputs' output mode and temperature (as label_job
    builds it), and a run with a depth, which probes have no use for, is refused by name."""
    from labeller.errors import BadInputError
    from labeller.labelling import LabelInputs, LabelOptions
    from labeller.probes import ProbeSettings, probe_files

    root = inputs(tmp_path)
    with FakeAPI(api_key=KEY) as api:
        texts = LabelInputs(queries=root / "queries.jsonl", corpus=root / "corpus.jsonl", cache=root / "cache",
                            out=None, base_url=api.openai_url, output_mode="json_object", temperature=0.3,
                            options=LabelOptions(progress=False))
        report, _ = probe_files(texts, "openai:gpt-4.1-mini", labels=root / "gold.jsonl",
                                settings=ProbeSettings(probes=("length",), pairs_per_probe=4))
        bodies = [r.body for r in api.requests if r.path.endswith("/chat/completions")]
        assert report.probes[0].graded > 0 and bodies
        assert all(b["response_format"]["type"] == "json_object" and b["temperature"] == 0.3 for b in bodies)
        with pytest.raises(BadInputError, match="not --run with --depth"):
            probe_files(texts.model_copy(update={"run": root / "run.trec", "depth": 3}), "openai:gpt-4.1-mini",
                        labels=root / "gold.jsonl")
