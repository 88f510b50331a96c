"""Fact recall: aliases, case/whitespace normalisation, the forbidden gate, thresholds, cross-source stores."""

from labeller.canaries import Fact, fact_recall, normalise

KITE = Fact(value="X9-KITE-42")
DOSE = Fact(value="36mg", aliases=["36 mg", "thirty-six milligrams"])
LOCK = Fact(value="LO1923")


def test_normalise_folds_case_and_whitespace():
    assert normalise("  Ref\tX9-kite-42 \n now ") == "ref x9-kite-42 now"


def test_a_fact_counts_when_any_alias_appears_after_normalisation():
    score = fact_recall("The dose was 36  MG daily.", {"default": [DOSE]})
    assert score.found == ["36mg"] and score.recall == 1.0 and score.passed
    # "36mg" without a space is its own surface form: only listed aliases count.
    assert not fact_recall("the dose was 3 6mg", {"default": [DOSE]}).found


def test_recall_is_recalled_over_total_and_the_threshold_decides():
    facts = {"default": [KITE, DOSE, LOCK]}
    text = "code x9-kite-42, lock LO1923"
    full = fact_recall(text, facts)
    assert full.recall == 2 / 3 and full.missing == ["36mg"] and not full.passed
    assert fact_recall(text, facts, threshold=0.6).passed
    assert not fact_recall(text, facts, threshold=0.7).passed


def test_a_forbidden_hit_sets_the_score_to_zero_whatever_was_recalled():
    score = fact_recall("X9-KITE-42. As an AI language model I cannot say.", {"default": [KITE]},
                        forbidden=["as an ai language model"], threshold=0.1)
    assert score.recall == 1.0 and score.score == 0.0
    assert score.forbidden_hits == ["as an ai language model"] and not score.passed


def test_empty_facts_with_forbidden_list_is_a_pure_no_hallucination_probe():
    clean = fact_recall("Supplier Zephyr Mills has no IBAN on file.", {}, forbidden=["GB29 NWBK 6016 1331 9268 19"])
    assert clean.score == 1.0 and clean.passed
    made_up = fact_recall("Their IBAN is gb29 nwbk 6016 1331  9268 19.", {}, forbidden=["GB29 NWBK 6016 1331 9268 19"])
    assert made_up.score == 0.0 and not made_up.passed


def test_cross_source_passes_only_when_every_store_is_found():
    facts = {"chat": [Fact(value="NF-A12x25")], "ledger": [LOCK]}
    both = fact_recall(["chat says NF-A12x25", "ledger row LO1923"], facts, threshold=0.5)
    assert both.passed and both.per_store == {"chat": 1.0, "ledger": 1.0}
    one = fact_recall(["chat says NF-A12x25", "unrelated"], facts, threshold=0.5)
    # Overall recall 0.5 meets the threshold, but the ledger store found nothing: it must fail.
    assert one.recall == 0.5 and one.per_store == {"chat": 1.0, "ledger": 0.0} and not one.passed


def test_passages_are_searched_one_by_one_not_across_their_join():
    assert not fact_recall(["ref X9-KITE", "42 was paid"], {"default": [KITE]}).found


# -- whole tokens (issue 25) ---------------------------------------------------------------------

def test_a_fact_matches_whole_tokens_only():
    code = Fact(value="7351")
    assert not fact_recall("the lock code is 17351", {"default": [code]}).found
    assert not fact_recall("ref 73514", {"default": [code]}).found
    assert not fact_recall("code 7351-B", {"default": [code]}).found  # another code: "7351-b" is one token
    assert fact_recall("the lock code is 7351.", {"default": [code]}).found == ["7351"]
    assert fact_recall("(7351)", {"default": [code]}).found == ["7351"]
    # A code with punctuation inside is one token: found whole, not inside a longer code.
    assert fact_recall("consignment X9-KITE-42, paid", {"default": [KITE]}).found == ["X9-KITE-42"]
    assert not fact_recall("consignment X9-KITE-421", {"default": [KITE]}).found
    assert not fact_recall("consignment AX9-KITE-42", {"default": [KITE]}).found


def test_tokens_keep_inner_punctuation_and_split_on_the_rest():
    from labeller.canaries import tokens

    assert tokens("Ref: X9-KITE-42, £1,250.00 on 05/01/2026 (O'Brien).") == [
        "ref", "x9-kite-42", "1,250.00", "on", "05/01/2026", "o'brien"]
    assert tokens("a_b") == ["a", "b"] and tokens("--") == []


def test_a_forbidden_string_is_matched_as_whole_tokens_too():
    assert fact_recall("invoice 12345", {}, forbidden=["1234"]).passed
    assert not fact_recall("invoice 1234 paid", {}, forbidden=["1234"]).passed


def test_a_fact_without_a_letter_or_digit_is_refused():
    import pytest
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="no letter or digit"):
        Fact(value="--")
    with pytest.raises(ValidationError, match="no letter or digit"):
        Fact(value="X9", aliases=["  "])
