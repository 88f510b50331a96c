"""offline:lexical, the lexical-overlap heuristic, and the judge registry."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from labeller.errors import ConfigError, MissingKeyError
from labeller.judges import OfflineLexicalJudge, make_judge
from labeller.judges.offline import (THRESHOLDS, as_number, grade_for, number_closeness, text_overlap, value_match,
                                     words)
from labeller.records import Doc, Query
from labeller.rubric import Rubric

JUDGE = OfflineLexicalJudge()
TX_FIELDS = ["text", "supplier", "amount", "vat", "category"]


def grade(query: Query, doc: Doc, q_fields=("text",), d_fields=("text",)):
    return JUDGE.grade(query, doc, list(q_fields), list(d_fields))


def q(text, **fields):
    return Query(query_id="q", text=text, fields=fields)


def d(text, **fields):
    return Doc(doc_id="d", text=text, fields=fields)


def test_words_drop_stopwords_and_fold_simple_endings():
    assert words("How does a bounty hunter make money?") == ["bounty", "hunter", "make", "money"]
    assert words("Hunters, hunting and hunted bounties") == ["hunter", "hunt", "hunt", "bounty"]
    assert words("the of and") == []


def test_text_overlap_is_the_share_of_query_words_in_the_document_with_phrase_credit():
    assert text_overlap("bounty hunter money", "nothing in common here") == 0.0
    assert text_overlap("bounty hunter money", "A bounty hunter earns money from bail bonds.") == 1.0
    # Two of three words, no shared adjacent pair: exactly 2/3.
    assert text_overlap("bounty hunter money", "hunter of bounty") == pytest.approx(2 / 3)
    # Two of three words and one of two adjacent pairs: 2/3 raised by a quarter.
    assert text_overlap("bounty hunter money", "a bounty hunter") == pytest.approx(2 / 3 * 1.25)
    assert text_overlap("the of", "anything") == 0.0


def test_thresholds_map_scores_to_grades():
    assert THRESHOLDS == (0.2, 0.4, 0.6, 0.8)
    assert [grade_for(s) for s in (0.0, 0.19, 0.2, 0.39, 0.4, 0.59, 0.6, 0.79, 0.8, 1.0)] == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]


def test_passage_relevance_orders_good_above_bad():
    query = q("how long do you blanch spinach")
    good = grade(query, d("Blanch spinach for about two minutes: how long you blanch it depends on the leaves."))
    partial = grade(query, d("Spinach is a leafy green vegetable."))
    bad = grade(query, d("The stock market closed higher today."))
    assert good.grade == 5 and bad.grade == 1
    assert good.grade > partial.grade > bad.grade
    assert good.justification.startswith("lexical overlap heuristic (not an LLM)")


def test_numbers_compare_by_relative_closeness():
    assert as_number("€1,234.50") == 1234.5 and as_number("20%") == 20.0 and as_number("12 EUR") == 12.0
    assert as_number("GBP 12.00") == 12.0 and as_number("-3") == -3.0
    assert as_number("Office supplies") is None and as_number(True) is None
    assert as_number("HP 305XL black ink cartridge") is None and as_number("standard 20%") is None
    assert number_closeness(100, 100.5) == 1.0
    assert number_closeness(100, 108) == 0.7
    assert number_closeness(100, 140) == 0.3
    assert number_closeness(100, 300) == 0.0
    assert number_closeness(0, 0) == 1.0


def test_short_values_match_exactly_or_by_word_overlap():
    assert value_match("ACME Ltd.", "acme ltd") == 1.0
    assert value_match("ACME Ltd", "ACME Corporation") == pytest.approx(1 / 3)
    assert value_match("Travel", "Meals") == 0.0


def test_transactions_weigh_supplier_amount_vat_and_category():
    new = q("Taxi ride to client meeting", supplier="Uber BV", amount="23.40", vat="21%", category="Travel")
    same = d("Uber trip to client office", supplier="Uber BV", amount=24.10, vat="21%", category="Travel")
    other = d("Monthly office rent", supplier="Regus", amount=1200, vat="0%", category="Rent")
    near = d("Taxi ride to the airport", supplier="Bolt", amount=31.0, vat="21%", category="Travel")
    graded = [grade(new, doc, TX_FIELDS, TX_FIELDS) for doc in (same, near, other)]
    assert [g.grade for g in graded] == sorted((g.grade for g in graded), reverse=True)
    assert graded[0].grade >= 4 and graded[2].grade == 1
    assert "supplier 1.00" in graded[0].justification and "category 1.00" in graded[0].justification


def test_dates_are_not_compared():
    query = q("x", supplier="ACME", date="2026-01-05")
    doc = d("y", supplier="ACME", date="2023-04-01T10:00:00")
    verdict = grade(query, doc, ["supplier", "date"], ["supplier", "date"])
    assert verdict.grade == 5 and "date" not in verdict.justification


def test_fields_missing_on_either_side_or_not_shown_are_ignored():
    query = q("invoice", supplier="ACME")
    doc = d("invoice", category="Office")
    # supplier is missing from the document, category from the query: only the texts compare.
    assert grade(query, doc, TX_FIELDS, TX_FIELDS).justification.endswith("from text 1.00.")
    # A rubric showing different fields on each side still compares the texts.
    assert "text" in grade(query, doc, ["supplier"], ["category"]).justification


def test_it_grades_the_structured_pair_of_a_rendered_prompt():
    rubric = Rubric(name="tx", version="v", path="x", body="grades", query_fields=TX_FIELDS, doc_fields=TX_FIELDS)
    query = q("Coffee beans", supplier="Bean Co", category="Meals")
    doc = d("Coffee beans for the office", supplier="Bean Co", category="Meals")
    prompt = rubric.render(query, doc)
    reply = asyncio.run(JUDGE.generate(prompt))
    assert reply.verdict == grade(query, doc, TX_FIELDS, TX_FIELDS)
    assert reply.input_tokens is None and reply.output_tokens is None
    assert asyncio.run(JUDGE.generate(prompt)) == reply  # deterministic


def test_registry_builds_the_offline_judge_and_rejects_unknown_names():
    assert isinstance(make_judge("offline:lexical"), OfflineLexicalJudge)
    assert make_judge("offline").name == "offline:lexical"
    for bad in ("gpt-4", "foo:bar", "openai:", "offline:llama"):
        with pytest.raises(ConfigError) as err:
            make_judge(bad)
        assert "offline:lexical" in str(err.value)
    assert "openai:<model>" in str(pytest.raises(ConfigError, make_judge, "nope:x").value)


def test_registry_needs_the_provider_key_and_names_the_variable(monkeypatch):
    with pytest.raises(MissingKeyError, match="OPENAI_API_KEY"):
        make_judge("openai:gpt-4.1-mini")
    with pytest.raises(MissingKeyError, match="ANTHROPIC_API_KEY"):
        make_judge("anthropic:claude-haiku-4-5")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-real")
    judge = make_judge("openai:gpt-4.1-mini", base_url="http://127.0.0.1:9/v1", timeout=5, temperature=0.2)
    assert (judge.name, judge.base_url, judge.decoding_settings()["temperature"]) == (
        "openai:gpt-4.1-mini", "http://127.0.0.1:9/v1", 0.2)


def test_offline_runs_never_import_the_provider_sdks():
    code = ("import sys; from labeller.judges import make_judge; import labeller.cli, labeller.labelling; "
            "make_judge('offline:lexical'); print(sorted(m for m in ('openai', 'anthropic', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
