"""Canaries as the method describes them (issue 25): suite criteria as a gate, the optimisation hook,
live-infra and self-exam canaries, one corpus file per store, and scoring a whole workflow's output."""

import json
import random

import pytest

from labeller.canaries import (CanaryProbeOptions, SuiteCriteria, date_forms, load_canaries, plant_files,
                               probe_files, score_canaries)
from labeller.canaries.dates import planted_date
from labeller.cli import main
from labeller.errors import BadInputError
from labeller.io import read_corpus
from labeller.retrieval import make_retriever

SUPPLIERS = ["Paperline Stationers", "Viking Direct", "Octopus Energy", "Thames Water", "BT Business"]
ITEMS = ["A4 copier paper", "toner cartridge", "electricity bill", "water rates", "broadband"]

SUITE = """
[suite]
mean_score = 0.9
score_floor = 0.5
floors = { kite = 1.0 }

[[canary]]
id = "kite"
question = "Which consignment number did Kite Couriers put on the same-day courier invoice?"
payload = "Kite Couriers same-day courier invoice, consignment number X9-KITE-42."
planted_at = "2026-01-05T09:00:00Z"
facts = [{ value = "X9-KITE-42" }]

[[canary]]
id = "fan"
question = "Which server fan model and lock code did Coolhaus Components supply?"
payload = "Coolhaus Components supplied the server fan model NF-A12x25 with lock code LO1923."
planted_at = "2026-01-05T09:00:00Z"
facts = [{ value = "NF-A12x25" }, { value = "LO1923" }]
pass_threshold = 0.5
"""


def _corpus(path, n=60):
    rng = random.Random(0)
    rows = [{"doc_id": f"tx-{i:03d}", "text": f"{rng.choice(SUPPLIERS)} — {rng.choice(ITEMS)} — £{rng.uniform(5, 500):.2f}"}
            for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def suite(tmp_path):
    canaries = tmp_path / "canaries.toml"
    canaries.write_text(SUITE)
    out = tmp_path / "corpus.test.jsonl"
    plant_files(corpus=_corpus(tmp_path / "corpus.jsonl"), canaries=canaries, out=out)
    return tmp_path, canaries, out


def _answers(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _probe(args, capsys):
    try:
        main(["canaries", "probe", *map(str, args)])
        code = 0
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- suite criteria ------------------------------------------------------------------------------

def test_suite_scores_pass_with_good_answers_and_each_criterion_can_fail(suite, capsys):
    tmp, canaries, _ = suite
    good = _answers(tmp / "good.jsonl", [{"canary_id": "kite", "answer": "It was X9-KITE-42."},
                                         {"canary_id": "fan", "answer": "NF-A12x25, lock LO1923"}])
    code, out, _ = _probe(["--canaries", canaries, "--answers", good], capsys)
    assert code == 0, out
    assert "suite: mean score 1.000, lowest 1.000" in out and "PASS mean_score: 1.000 (required 0.900)" in out
    # fan recalls one fact of two: it passes its own threshold (0.5) with score 0.5, but the mean
    # (0.75) is below 0.9: the suite fails, on the mean alone.
    half = _answers(tmp / "half.jsonl", [{"canary_id": "kite", "answer": "X9-KITE-42"},
                                         {"canary_id": "fan", "answer": "NF-A12x25"}])
    code, out, err = _probe(["--canaries", canaries, "--answers", half], capsys)
    assert code == 1 and "2 of 2 canaries passed" in out
    assert "FAIL mean_score: 0.750 (required 0.900)" in out and "PASS score_floor: 0.500" in out
    assert "mean_score 0.750 below 0.900" in err
    # The command line overrides the file: a lower mean passes; a higher floor fails.
    assert _probe(["--canaries", canaries, "--answers", half, "--min-mean-score", "0.7"], capsys)[0] == 0
    code, out, err = _probe(["--canaries", canaries, "--answers", half, "--min-mean-score", "0.7",
                             "--score-floor", "0.6"], capsys)
    assert code == 1 and "score_floor 0.500 below 0.600" in err
    # A per-canary floor: kite must reach 1.0 (file); fan 0.8 (command line).
    code, out, err = _probe(["--canaries", canaries, "--answers", half, "--min-mean-score", "0.7",
                             "--floor", "fan=0.8"], capsys)
    assert code == 1 and "floor fan 0.500 below 0.800" in err and "PASS floor kite" in out


def test_a_single_canary_suite_fails_on_its_floor(tmp_path, capsys):
    """The tiniest sample: one canary, one fact; a wrong answer fails every criterion it is under."""
    canaries = tmp_path / "one.toml"
    canaries.write_text(SUITE.split("[[canary]]")[0] + "[[canary]]" + SUITE.split("[[canary]]")[1])
    wrong = _answers(tmp_path / "a.jsonl", [{"canary_id": "kite", "answer": "X9-KITE-24"}])
    code, out, err = _probe(["--canaries", canaries, "--answers", wrong], capsys)
    assert code == 1 and "score 0.00" in out
    assert "1 of 1 canaries failed" in err and "floor kite 0.000 below 1.000" in err


def test_all_pass_false_gates_on_the_scores_alone(suite, capsys):
    tmp, canaries, _ = suite
    canaries.write_text(SUITE.replace("floors = { kite = 1.0 }", "all_pass = false").replace("mean_score = 0.9",
                                                                                             "mean_score = 0.5"))
    one_wrong = _answers(tmp / "a.jsonl", [{"canary_id": "kite", "answer": "X9-KITE-42"},
                                           {"canary_id": "fan", "answer": "nothing"}])
    code, out, err = _probe(["--canaries", canaries, "--answers", one_wrong, "--score-floor", "0.01"], capsys)
    assert code == 1 and "1 of 2 canaries passed" in out and "score_floor 0.000 below 0.010" in err
    code, out, _ = _probe(["--canaries", canaries, "--answers", one_wrong], capsys)
    assert code == 1  # the file's score_floor 0.5 holds: fan scores 0
    canaries.write_text(canaries.read_text().replace("score_floor = 0.5\n", ""))
    code, out, _ = _probe(["--canaries", canaries, "--answers", one_wrong], capsys)
    assert code == 0 and "1 of 2 canaries passed: PASS" in out  # mean 0.5 reaches 0.5; no canary need pass


def test_suite_criteria_that_could_never_fail_are_refused(suite, capsys):
    tmp, canaries, _ = suite
    answers = _answers(tmp / "a.jsonl", [{"canary_id": "kite", "answer": "x"}])
    code, _, err = _probe(["--canaries", canaries, "--answers", answers, "--min-mean-score", "0"], capsys)
    assert code == 2 and "--min-mean-score" in err
    canaries.write_text(SUITE.replace("floors = { kite = 1.0 }", "floors = { nope = 1.0 }"))
    code, _, err = _probe(["--canaries", canaries, "--answers", answers], capsys)
    assert code == 2 and "unknown canary 'nope'" in err
    canaries.write_text("[suite]\nall_pass = false\n" + SUITE.split("\n\n", 2)[2])
    code, _, err = _probe(["--canaries", canaries, "--answers", answers], capsys)
    assert code == 2 and "could never fail" in err


def test_the_optimisation_hook_returns_the_scores(suite):
    """score_canaries: in memory, a retriever in, the suite's scores out: bm25 finds both, a broken one neither."""
    _, canaries_path, corpus_path = suite
    canaries, corpus = load_canaries(canaries_path), read_corpus(corpus_path)
    good = score_canaries(canaries, corpus=corpus, retriever=make_retriever("bm25", list(corpus.values())), k=5)
    assert good.scores == {"kite": 1.0, "fan": 1.0} and good.mean_score == 1.0 and good.passed
    broken = score_canaries(canaries, corpus=corpus, retriever=make_retriever("random", list(corpus.values())), k=1,
                            criteria=SuiteCriteria(mean_score=0.9))
    assert broken.mean_score < 0.9 and not broken.passed
    assert [c.name for c in broken.criteria if not c.passed] == ["all_pass", "mean_score"]
    # An agent as a function: question in, answer out; the scores follow what it says.
    said = score_canaries(canaries, answer=lambda q: "X9-KITE-42" if "Kite" in q else "NF-A12x25")
    assert said.scores == {"kite": 1.0, "fan": 0.5} and said.mean_score == 0.75
    blob = score_canaries(canaries, output="log: X9-KITE-42\nlog: NF-A12x25 and LO1923\n")
    assert blob.scores == {"kite": 1.0, "fan": 1.0} and blob.passed
    with pytest.raises(BadInputError, match="planted corpus"):
        score_canaries(canaries, retriever=make_retriever("bm25", list(corpus.values())))


# -- live-infra canaries -------------------------------------------------------------------------

LIVE = """
[[canary]]
id = "calendar-empty"
question = "Which meetings do I have on 2026-02-30?"
planted_at = "2026-01-05T09:00:00Z"
forbidden = ["standup", "1:1"]
[canary.live]
service = "calendar"
markers = ["[checked: calendar]"]
tools = ["calendar.search"]
"""


@pytest.mark.parametrize("answer, passed, reason", [
    ({"answer": "[checked: calendar] You have no meetings that day."}, True, None),
    ({"answer": "You have no meetings that day.", "tool_calls": ["calendar.search"]}, True, None),
    ({"answer": "You have no meetings.", "tool_calls": [{"name": "calendar.search", "args": {"day": "x"}}]}, True, None),
    ({"answer": "You have no meetings that day."}, False, "does not show that calendar was checked"),
    ({"answer": "Nothing.", "tool_calls": ["mail.search"]}, False, "does not show that calendar was checked"),
    ({"answer": "[checked: calendar] Your standup at 9."}, False, "forbidden text in answer: standup"),
])
def test_a_live_canary_passes_empty_but_checked_and_fails_unchecked(tmp_path, capsys, answer, passed, reason):
    canaries = tmp_path / "live.toml"
    canaries.write_text(LIVE)
    answers = _answers(tmp_path / "a.jsonl", [{"canary_id": "calendar-empty", **answer}])
    report = probe_files(CanaryProbeOptions(canaries=canaries, answers=answers))
    (result,) = report.canaries
    assert result.kind == "live" and result.passed is passed and report.passed is passed
    assert result.score == (1.0 if passed else 0.0)
    if reason:
        assert any(reason in r for r in result.reasons), result.reasons
    code, out, _ = _probe(["--canaries", canaries, "--answers", answers], capsys)
    assert code == (0 if passed else 1)


def test_a_live_canary_needs_an_answer_and_is_not_scored_on_passages(tmp_path):
    canaries = tmp_path / "live.toml"
    canaries.write_text(LIVE)
    corpus = _corpus(tmp_path / "corpus.test.jsonl")
    report = probe_files(CanaryProbeOptions(canaries=canaries, corpus=corpus, retriever="bm25"))
    (result,) = report.canaries
    assert result.passages is None and not result.passed and "give answers" in result.reasons[0]


def test_a_live_canary_with_a_payload_is_refused(tmp_path):
    path = tmp_path / "live.toml"
    path.write_text(LIVE.replace('planted_at =', 'payload = "x"\nplanted_at ='))
    with pytest.raises(BadInputError, match="a live canary plants nothing"):
        load_canaries(path)
    path.write_text(LIVE.replace('markers = ["[checked: calendar]"]\ntools = ["calendar.search"]\n', ""))
    with pytest.raises(BadInputError, match="declares how a check shows"):
        load_canaries(path)


# -- self-exam canaries --------------------------------------------------------------------------

SELF_EXAM = """
[[canary]]
id = "kite-date"
question = "On which date was the Kite Couriers consignment X-record created?"
payload = "Kite Couriers same-day courier invoice, consignment number X9-KITE-42."
planted_at = "2026-01-05T09:00:00+01:00"
self_exam = true
facts = [{ value = "X9-KITE-42" }]
"""


def test_the_planted_date_and_its_usual_forms_are_a_fact():
    forms = date_forms(planted_date("2026-01-05T09:00:00Z"))
    assert forms[0] == "2026-01-05"
    assert {"5 January 2026", "January 5, 2026", "5th January 2026", "Monday, 5 January 2026", "05/01/2026",
            "01/05/2026", "5 Jan 2026"} <= set(forms)
    assert "22nd March 2031" in date_forms(planted_date("2031-03-22")) and len(forms) == len(set(forms))


@pytest.mark.parametrize("answer, passed", [
    ("Created on 5 January 2026, consignment X9-KITE-42.", True),
    ("X9-KITE-42, created January 5, 2026", True),
    ("X9-KITE-42 (2026-01-05)", True),
    ("X9-KITE-42, created 6 January 2026", False),
    ("X9-KITE-42, created 15 January 2026", False),  # "5 January 2026" is not inside "15 January 2026"
    ("Created on 5 January 2026.", False),  # the code is still a fact
])
def test_a_self_exam_canary_is_answered_with_its_planted_date(tmp_path, answer, passed):
    canaries = tmp_path / "self.toml"
    canaries.write_text(SELF_EXAM)
    (canary,) = load_canaries(canaries)
    assert "2026" not in canary.payload  # the date need not be in the payload
    answers = _answers(tmp_path / "a.jsonl", [{"canary_id": "kite-date", "answer": answer}])
    report = probe_files(CanaryProbeOptions(canaries=canaries, answers=answers))
    assert report.canaries[0].passed is passed, report.canaries[0].reasons


def test_a_self_exam_canary_plants_its_date_beside_the_payload(tmp_path):
    canaries = tmp_path / "self.toml"
    canaries.write_text(SELF_EXAM)
    out = tmp_path / "corpus.test.jsonl"
    plant_files(corpus=_corpus(tmp_path / "corpus.jsonl"), canaries=canaries, out=out)
    row = read_corpus(out)["canary-kite-date"]
    assert row.fields["planted_at"] == "2026-01-05T09:00:00+01:00"  # where a system can find it


# -- a whole workflow's output --------------------------------------------------------------------

def test_a_workflow_output_is_scored_without_a_run_or_passages(tmp_path, capsys):
    canaries = tmp_path / "c.toml"
    canaries.write_text(SUITE + LIVE)
    log = tmp_path / "workflow.log"
    log.write_text("step 1: answered the courier question: consignment X9-KITE-42\n"
                   '{"tool": "calendar.search", "args": {"day": "2026-02-30"}}\n'
                   "step 2: fan NF-A12x25, lock LO1923; no meetings found\n")
    code, out, _ = _probe(["--canaries", canaries, "--output", log], capsys)
    assert code == 0, out
    assert out.startswith(f"canary probe of workflow output {log}\n") and "check shown" in out
    # The same blob without the tool record, and with one code wrong: the live canary and kite fail.
    log.write_text("consignment X9-KITE-24\nfan NF-A12x25, lock LO1923; no meetings found\n")
    code, out, err = _probe(["--canaries", canaries, "--output", log], capsys)
    assert code == 1 and "FAIL kite" in out and "FAIL calendar-empty" in out and "check NOT shown" in out
    assert "2 of 3 canaries failed" in err


def test_scoring_needs_something_to_score(tmp_path, capsys):
    canaries = tmp_path / "c.toml"
    canaries.write_text(SUITE)
    code, _, err = _probe(["--canaries", canaries], capsys)
    assert code == 2 and "nothing to probe" in err
    code, _, err = _probe(["--canaries", canaries, "--retriever", "bm25"], capsys)
    assert code == 2 and "a corpus is needed" in err


# -- one corpus file per store --------------------------------------------------------------------

CROSS = """
[[canary]]
id = "deposit"
question = "Which crate hire order did Quayside Pallets book, and which collection slot did Omar agree?"
planted_at = "2026-01-05T09:00:00Z"
sources.chat = { payload = "Omar: Quayside Pallets will collect the crates in slot CS-0419-QP.", facts = [{ value = "CS-0419-QP" }] }
sources.ledger = { payload = "Quayside Pallets crate hire, order QP-2287-M.", facts = [{ value = "QP-2287-M" }] }
"""


@pytest.fixture
def two_stores(tmp_path, capsys):
    (tmp_path / "c.toml").write_text(CROSS)
    _corpus(tmp_path / "ledger.jsonl")
    (tmp_path / "chat.jsonl").write_text("".join(json.dumps({"doc_id": f"msg-{i}", "text": f"chat message {i}"}) + "\n"
                                                 for i in range(5)))
    with pytest.raises(SystemExit) as exit_:
        main(["canaries", "plant", "--canaries", str(tmp_path / "c.toml"),
              "--store-corpus", f"ledger={tmp_path / 'ledger.jsonl'}", "--store-out", f"ledger={tmp_path / 'ledger.test.jsonl'}",
              "--store-corpus", f"chat={tmp_path / 'chat.jsonl'}", "--store-out", f"chat={tmp_path / 'chat.test.jsonl'}"])
    assert exit_.value.code == 0
    assert "store chat: planted 1 documents of 1 canaries" in capsys.readouterr().err
    return tmp_path


def test_each_store_gets_its_own_half_of_a_cross_source_canary(two_stores):
    ledger, chat = read_corpus(two_stores / "ledger.test.jsonl"), read_corpus(two_stores / "chat.test.jsonl")
    assert "canary-deposit-ledger" in ledger and "canary-deposit-chat" not in ledger and len(ledger) == 61
    assert "canary-deposit-chat" in chat and "canary-deposit-ledger" not in chat and len(chat) == 6


def test_a_cross_source_probe_over_two_store_files(two_stores, capsys):
    d = two_stores
    run = d / "run.trec"
    run.write_text("deposit Q0 canary-deposit-chat 1 2 sys\ndeposit Q0 canary-deposit-ledger 2 1 sys\n")
    files = ["--corpus", d / "ledger.test.jsonl", "--corpus", d / "chat.test.jsonl"]
    code, out, _ = _probe(["--canaries", d / "c.toml", *files, "--run", run], capsys)
    assert code == 0 and "PASS deposit (cross-source)" in out
    run.write_text("deposit Q0 canary-deposit-chat 1 2 sys\ndeposit Q0 msg-1 2 1 sys\n")  # the ledger half missed
    code, out, _ = _probe(["--canaries", d / "c.toml", *files, "--run", run], capsys)
    assert code == 1 and "per store: chat 1.00, ledger 0.00" in out
    # One store's file alone does not hold the other half: refused, not scored as a miss.
    code, _, err = _probe(["--canaries", d / "c.toml", "--corpus", d / "chat.test.jsonl", "--run", run], capsys)
    assert code == 2 and "canary-deposit-ledger" in err


def test_per_store_planting_refuses_a_store_left_out_or_unknown(two_stores, capsys):
    d = two_stores
    base = ["canaries", "plant", "--canaries", str(d / "c.toml")]
    with pytest.raises(SystemExit) as exit_:
        main([*base, "--store-corpus", f"ledger={d / 'ledger.jsonl'}", "--store-out", f"ledger={d / 'l2.test.jsonl'}"])
    assert exit_.value.code == 2 and "no corpus given for store(s) chat" in capsys.readouterr().err
    assert not (d / "l2.test.jsonl").exists()
    with pytest.raises(SystemExit) as exit_:
        main([*base, "--store-corpus", f"ledger={d / 'ledger.jsonl'}", "--store-out", f"ledger={d / 'l3.test.jsonl'}",
              "--store-corpus", f"chat={d / 'chat.jsonl'}", "--store-out", f"chat={d / 'c3.test.jsonl'}",
              "--store-corpus", f"mail={d / 'chat.jsonl'}", "--store-out", f"mail={d / 'm3.test.jsonl'}"])
    assert exit_.value.code == 2 and "mail hold no canary document" in capsys.readouterr().err
    assert not (d / "l3.test.jsonl").exists()


def test_a_self_exam_canary_is_not_judge_checked(tmp_path):
    """Its document does not hold the date its question asks for: the judge is not asked to grade it 5."""
    canaries = tmp_path / "c.toml"
    canaries.write_text(SUITE + SELF_EXAM.replace("X9-KITE-42", "K7-ORBIT-19"))
    out = tmp_path / "corpus.test.jsonl"
    plant_files(corpus=_corpus(tmp_path / "corpus.jsonl"), canaries=canaries, out=out)
    report = probe_files(CanaryProbeOptions(canaries=canaries, corpus=out, retriever="bm25", judge="offline:lexical",
                         cache_dir=tmp_path / "cache"))
    assert set(report.judge_check.grades) == {"kite", "fan"}
    assert report.canaries[2].canary_id == "kite-date" and report.canaries[2].judge_grades is None
