"""The suite file: every field used or refused, errors naming file, line and field (exit 2)."""

import json

import pytest
from acceptance_helpers import CASES, write_suite

from labeller.acceptance.suite import read_suite
from labeller.errors import BadInputError


def error_of(path):
    with pytest.raises(BadInputError) as err:
        read_suite(path)
    return err.value


def line_of(path, text):
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_a_valid_suite_keeps_every_field_and_has_a_stable_digest(tmp_path):
    suite = read_suite(write_suite(tmp_path))
    c1 = suite.cases[0]
    assert (c1.identity.user, c1.identity.groups, c1.expected, c1.split, c1.reviewer) == (
        "alice", ("finance",), "answerable", "held_out", "rita")
    assert (c1.evidence[0].source_uri, c1.evidence[0].revision) == ("kb://inv-1", "r2")
    assert [c.id for c in suite.held_out()] == ["c1", "c2", "c3", "c4"]
    assert suite.thresholds.approved_by == "priya" and suite.conditions.workload.concurrency == 2
    assert read_suite(write_suite(tmp_path)).digest == suite.digest
    changed = read_suite(write_suite(tmp_path, cases=CASES.replace("toner invoice", "toner invoices")))
    assert changed.digest != suite.digest


@pytest.mark.parametrize("old, new, field, at", [
    ('reviewer = "rita"\nreviewed_at = "2026-11-20"\n[[cases.evidence]]\ndoc_id = "inv-1"',
     'reviewer = "rita"\nreviewed_at = "2026-11-20"\nowner = "x"\n[[cases.evidence]]\ndoc_id = "inv-1"',
     "cases.0.owner", 'owner = "x"'),
    ('expected = "no_answer"', 'expected = "unanswerable"', "cases.2.expected", 'expected = "unanswerable"'),
    ('identity = { user = "bob", groups = ["sales"] }', 'identity = { user = "bob", team = ["sales"] }',
     "cases.3.identity.team", 'team = ["sales"]'),
    ('revision = "r2"', 'checksum = "r2"', "cases.0.evidence.0.checksum", 'checksum = "r2"'),
    ('split = "held_out"\nreviewer = "rita"\nreviewed_at = "2026-11-20"\n\n[[cases]]\nid = "c4"',
     'split = "held_out"\nreviewer = "rita"\n\n[[cases]]\nid = "c4"', "cases.2", "[[cases]] of c3"),
])
def test_a_bad_case_field_names_file_line_and_field(tmp_path, old, new, field, at):
    assert old in CASES
    path = write_suite(tmp_path, cases=CASES.replace(old, new, 1))
    err = error_of(path)
    assert err.path == str(path) and err.field == field, str(err)
    expected = line_of(path, 'id = "c3"') - 1 if at == "[[cases]] of c3" else line_of(path, at)
    assert err.line == expected, (str(err), at)


def test_revision_or_immutable_id_is_required_for_evidence(tmp_path):
    path = write_suite(tmp_path, cases=CASES.replace('revision = "r2"', ""))
    err = error_of(path)
    assert "revision or an immutable_id" in str(err) and err.field == "cases.0.evidence.0"
    ok = read_suite(write_suite(tmp_path, cases=CASES.replace('revision = "r2"', 'immutable_id = "sha:abc"')))
    assert ok.cases[0].evidence[0].immutable_id == "sha:abc"


def test_unknown_thresholds_and_sections_are_refused(tmp_path):
    err = error_of(write_suite(tmp_path, {"p90_ms": 10}))
    assert err.field == "thresholds.p90_ms" and "unknown field" in str(err) and err.line
    err = error_of(write_suite(tmp_path, extra="[extras]\nx = 1\n"))
    assert err.field == "extras"
    err = error_of(write_suite(tmp_path, workload="warmup = 1\nthreads = 4"))
    assert err.field == "conditions.workload.threads"


def test_thresholds_need_their_approver(tmp_path):
    path = write_suite(tmp_path)
    path.write_text(path.read_text().replace('approved_by = "priya"\n', ""))
    err = error_of(path)
    assert err.field == "thresholds.approved_by" and "missing" in str(err)


def test_mixing_retrieval_units_is_refused(tmp_path):
    path = write_suite(tmp_path, cases=CASES.replace('revision = "r2"', 'revision = "r2"\nunit = "chunk"'))
    assert "one comparison takes one retrieval unit" in str(error_of(path))


def test_evidence_on_a_no_answer_case_and_duplicate_ids_are_refused(tmp_path):
    bad = CASES.replace('expected = "answerable"', 'expected = "no_answer"', 1)
    assert "cannot require evidence" in str(error_of(write_suite(tmp_path, cases=bad)))
    twice = CASES.replace('id = "c2"', 'id = "c1"')
    assert "used twice" in str(error_of(write_suite(tmp_path, cases=twice)))


def test_cases_in_a_jsonl_file_name_their_line(tmp_path):
    rows = [{"id": "c1", "query": "kite", "identity": {"user": "a"}, "expected": "no_answer", "split": "tuning",
             "reviewer": "r"},
            {"id": "c2", "query": "kite", "identity": {"user": "a"}, "expected": "no_answer", "split": "held_out",
             "reviewer": "r", "reviewed_at": "2026-11-01", "priority": "high"}]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    path = write_suite(tmp_path, cases="", extra="")
    path.write_text(path.read_text().replace('k = 5\n', 'k = 5\ncases_file = "cases.jsonl"\n'))
    err = error_of(path)
    assert err.path.endswith("cases.jsonl") and err.line == 2 and err.field == "priority"
    rows[1].pop("priority")
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [c.id for c in read_suite(path).held_out()] == ["c2"]


def test_bad_toml_and_a_missing_file(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text("[suite\nname = 1\n")
    assert error_of(path).line == 1
    assert "not found" in str(error_of(tmp_path / "nope.toml"))


def test_a_suite_built_in_memory_is_checked_like_a_file(tmp_path):
    import tomllib

    from labeller.acceptance import suite_from_dict

    raw = tomllib.loads(write_suite(tmp_path).read_text())
    suite = suite_from_dict(raw, tmp_path / "suite.toml")
    assert suite.digest == read_suite(tmp_path / "suite.toml").digest
    raw["cases"][1]["id"] = "c1"
    with pytest.raises(BadInputError, match="used twice"):
        suite_from_dict(raw)
