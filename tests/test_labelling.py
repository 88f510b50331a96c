"""The labelling engine, driven with a scripted judge (tests/fakejudge.py) and the offline judge."""

from __future__ import annotations

import asyncio
import time

import pytest
from fakejudge import CACHED_TOKENS, INPUT_TOKENS, OUTPUT_TOKENS, FakeJudge, expected_grade, sample, write_rubric

from labeller.store.directory import DirectoryStore as VerdictCache
from labeller.errors import ConfigError
from labeller.judges.offline import OfflineLexicalJudge
from labeller.labelling import LabelOptions, label_pairs
from labeller.labelling.budget import DEFAULT_OUTPUT_CAP
from labeller.prices import EXPECTED_OUTPUT_TOKENS, ModelPrice, PriceTable, estimate_tokens
from labeller.ratelimit import TokenBucket
from labeller.records import Doc, Pair
from labeller.retry import RetryPolicy
from labeller.rubric import load_rubric

FAST = RetryPolicy(initial_wait=0, max_wait=0, max_retry_after=0)
PRICE = ModelPrice(input=2.0, cached_input=0.5, output=8.0)  # USD per million tokens
PRICES = PriceTable({"fake": {"scripted": PRICE}})


@pytest.fixture
def env(tmp_path):
    queries, corpus, pairs = sample()
    rubric = load_rubric(write_rubric(tmp_path))
    cache = VerdictCache(tmp_path / "cache")
    yield queries, corpus, pairs, rubric, cache
    cache.close()


def run(env, judge, **options):
    queries, corpus, pairs, rubric, cache = env
    prices = options.pop("prices", PRICES)
    pairs = options.pop("pairs", pairs)
    opts = LabelOptions(retry=options.pop("retry", FAST), progress=False, **options)
    return asyncio.run(label_pairs(pairs, queries, corpus, judge, rubric, cache, opts, prices=prices))


def test_every_pair_gets_its_grade_in_input_order(env):
    judge = FakeJudge()
    result = run(env, judge, concurrency=4)
    pairs = env[2]
    assert [(lb.query_id, lb.doc_id) for lb in result.labels] == [(p.query_id, p.doc_id) for p in pairs]
    assert [lb.grade for lb in result.labels] == [expected_grade(p.query_id, p.doc_id) for p in pairs]
    assert result.failures == []
    s = result.stats
    assert (s.requested, s.new, s.cached, s.failed, s.requests) == (12, 12, 0, 0, 12)
    assert (s.input_tokens, s.output_tokens, s.cached_input_tokens) == (12 * INPUT_TOKENS, 12 * OUTPUT_TOKENS,
                                                                       12 * CACHED_TOKENS)
    one = PRICE.cost(INPUT_TOKENS, OUTPUT_TOKENS, CACHED_TOKENS)
    assert one == pytest.approx((800 * 2.0 + 200 * 0.5 + 50 * 8.0) / 1e6)
    assert s.cost_usd == pytest.approx(12 * one)
    label = result.labels[0]
    assert (label.judge, label.rubric, label.rubric_version) == ("fake:scripted", "testing", env[3].version)
    assert label.cost_usd == pytest.approx(one) and not label.from_cache


def test_rerun_makes_no_calls_and_gives_the_same_labels(env):
    first = run(env, FakeJudge(), concurrency=3)
    again = FakeJudge()
    second = run(env, again, concurrency=11)  # concurrency is not part of the cache key
    assert again.calls == []
    assert second.stats.cached == 12 and second.stats.new == 0 and second.stats.requests == 0
    assert second.stats.cost_usd == 0
    strip = lambda labels: [lb.model_dump(exclude={"from_cache"}) for lb in labels]  # noqa: E731
    assert strip(second.labels) == strip(first.labels)  # created_at and cost come from the cache
    assert all(lb.from_cache for lb in second.labels)


def test_concurrency_is_bounded_and_used(env):
    judge = FakeJudge(latency=0.02)
    run(env, judge, concurrency=5)
    assert judge.max_in_flight == 5


def test_transient_errors_are_retried_and_counted(env):
    judge = FakeJudge(script={"d0-0": ["transient", "transient"]})
    result = run(env, judge)
    assert result.failures == [] and len(result.labels) == 12
    assert result.stats.requests == 14
    assert len(judge.calls) == 14


def test_malformed_replies_fail_the_pair_then_a_rerun_completes_it(env):
    judge = FakeJudge(script={"d1-2": ["malformed"] * 3})
    result = run(env, judge)
    assert len(result.labels) == 11 and len(result.failures) == 1
    failure = result.failures[0]
    assert (failure.query_id, failure.doc_id, failure.attempts) == ("q1", "d1-2", 3)
    assert "malformed reply: grade 9" in failure.reason
    assert result.stats.failed == 1 and result.stats.requests == 14
    # The malformed replies were paid for: their tokens count.
    assert result.stats.input_tokens == 11 * INPUT_TOKENS + 3 * INPUT_TOKENS
    assert env[4].stats().failures_recorded == 1

    rerun = FakeJudge()
    second = run(env, rerun)
    assert rerun.calls == [("q1", "d1-2")]
    assert len(second.labels) == 12 and second.failures == []
    assert env[4].stats().failures_recorded == 0


def test_a_fatal_error_stops_the_run_and_accounts_for_every_pair(env):
    judge = FakeJudge(script={"d1-0": ["fatal"]})
    result = run(env, judge, concurrency=1)
    assert len(judge.calls) == 5  # q0's four pairs, then the fatal one; nothing after it
    assert len(result.labels) == 4
    assert len(result.labels) + len(result.failures) == 12
    assert "rejected the API key" in result.failures[0].reason
    assert all(f.reason.startswith("not sent: the run stopped") for f in result.failures[1:])
    assert result.stats.stopped_by and result.stats.skipped == 7
    assert env[4].stats().entries == 4  # what was done is kept


def test_a_refused_request_fails_only_its_pair_without_a_retry(env):
    """HTTP 400 for one pair (say, a document past the context window) must not halt the run."""
    judge = FakeJudge(script={"d1-2": ["rejected"]})
    result = run(env, judge)
    assert len(result.labels) == 11 and len(result.failures) == 1
    failure = result.failures[0]
    assert failure.doc_id == "d1-2" and failure.attempts == 1 and "HTTP 400" in failure.reason
    assert result.stats.stopped_by is None and result.stats.requests == 12


def test_refusals_with_no_success_at_all_stop_the_run(env):
    """Every request refused means the request itself is wrong: stop instead of paying for all of them."""
    _, _, pairs, _, _ = env
    judge = FakeJudge(script={p.doc_id: ["rejected"] for p in pairs})
    result = run(env, judge, concurrency=1)
    assert len(judge.calls) == 5 and result.labels == []
    assert "the first 5 requests were all rejected" in result.stats.stopped_by
    assert len(result.failures) == 12 and sum(f.reason.startswith("not sent") for f in result.failures) == 7


def test_an_unexpected_judge_exception_stops_the_run_without_losing_pairs(env):
    result = run(env, FakeJudge(script={"d0-1": ["boom"]}), concurrency=1)
    assert len(result.labels) + len(result.failures) == 12
    assert "unexpected RuntimeError: fake bug" in result.failures[0].reason


def test_max_cost_stops_before_the_estimate_passes_the_budget(env):
    queries, corpus, pairs, rubric, _ = env
    prompt = rubric.render(queries["q0"], corpus["d0-0"])
    per_request = PRICE.cost(estimate_tokens(prompt), DEFAULT_OUTPUT_CAP)  # the worst case: the whole output cap
    actual = PRICE.cost(INPUT_TOKENS, OUTPUT_TOKENS, CACHED_TOKENS)
    budget = 3 * actual + per_request * 0.9  # room for three requests, not a fourth
    judge = FakeJudge()
    result = run(env, judge, concurrency=1, max_cost=budget)
    assert len(judge.calls) == 3
    assert result.stats.budget_stopped and result.stats.skipped_by_budget == 9
    assert result.stats.cost_usd <= budget
    assert len(result.labels) == 3 and len(result.failures) == 9
    assert "max-cost" in result.failures[0].reason and result.failures[0].attempts == 0


def test_max_cost_counts_requests_in_flight(env):
    queries, corpus, pairs, rubric, _ = env
    per_request = PRICE.cost(estimate_tokens(rubric.render(queries["q0"], corpus["d0-0"])), DEFAULT_OUTPUT_CAP)
    judge = FakeJudge(latency=0.05)
    budget = per_request * 2.5
    result = run(env, judge, concurrency=8, max_cost=budget)
    assert judge.max_in_flight == 2  # the third would pass the budget while two are still in flight...
    # ...so it waited for them; they cost less than their worst case, and then it fitted. A fourth did not.
    assert len(judge.calls) == 3 and 3 * PRICE.cost(INPUT_TOKENS, OUTPUT_TOKENS, CACHED_TOKENS) + per_request > budget
    assert result.stats.budget_stopped and result.stats.cost_usd <= budget


def test_max_cost_needs_a_known_price(env):
    with pytest.raises(ConfigError, match="--max-cost needs a price for fake:scripted"):
        run(env, FakeJudge(), max_cost=1.0, prices=PriceTable({}))


def test_unknown_price_gives_tokens_and_no_cost(env):
    result = run(env, FakeJudge(), prices=PriceTable({}))
    assert result.stats.cost_usd is None and result.stats.input_tokens == 12 * INPUT_TOKENS
    assert all(lb.cost_usd is None for lb in result.labels)


def test_dry_run_counts_and_estimates_without_sending(env):
    queries, corpus, pairs, rubric, cache = env
    run(env, FakeJudge(), pairs=pairs[:5])
    judge = FakeJudge()
    result = run(env, judge, dry_run=True)
    assert judge.calls == []
    s = result.stats
    assert (s.dry_run, s.new, s.cached, s.requests) == (True, 7, 5, 0)
    tokens = sum(estimate_tokens(rubric.render(queries[p.query_id], corpus[p.doc_id])) for p in pairs[5:])
    assert s.estimated_input_tokens == tokens
    assert s.estimated_output_tokens == 7 * EXPECTED_OUTPUT_TOKENS
    assert s.estimated_cost_usd == pytest.approx(PRICE.cost(tokens, 7 * EXPECTED_OUTPUT_TOKENS), rel=1e-4)
    assert cache.stats().entries == 5


def test_identical_pairs_are_sent_once(env):
    queries, corpus, pairs, rubric, cache = env
    corpus["twin"] = Doc(doc_id="twin", text=corpus["d0-0"].text)
    queries_twin = dict(queries)
    judge = FakeJudge()
    twin_pairs = [Pair(query_id="q0", doc_id="d0-0"), Pair(query_id="q0", doc_id="twin")]
    result = asyncio.run(label_pairs(twin_pairs, queries_twin, corpus, judge, rubric, cache,
                                     LabelOptions(progress=False), prices=PRICES))
    assert len(judge.calls) == 1
    assert [lb.doc_id for lb in result.labels] == ["d0-0", "twin"]
    assert [lb.from_cache for lb in result.labels] == [False, True]
    assert result.labels[0].grade == result.labels[1].grade


def test_offline_judge_runs_through_the_engine(env):
    result = run(env, OfflineLexicalJudge(), prices=None)
    assert len(result.labels) == 12 and result.stats.cost_usd == 0
    assert all("lexical overlap heuristic" in lb.justification for lb in result.labels)
    assert all(lb.input_tokens is None for lb in result.labels)


def test_rate_limit_spaces_requests():
    bucket = TokenBucket(per_minute=600, burst_seconds=0.1)  # 10 per second, one at a time

    async def take(n):
        for _ in range(n):
            await bucket.acquire()

    started = time.monotonic()
    asyncio.run(take(5))
    assert time.monotonic() - started >= 0.35  # four waits of 0.1 s after the first token


def test_requests_per_minute_applies_to_the_run(env):
    judge = FakeJudge()
    started = time.monotonic()
    result = run(env, judge, concurrency=12, requests_per_minute=60)  # one a second, ten in the bucket
    assert len(result.labels) == 12
    assert time.monotonic() - started >= 1.5  # twelve requests need two refills after the burst of ten


@pytest.mark.parametrize("stop", ["budget", "fatal", "none"])
def test_no_lease_is_left_behind_whatever_ends_the_run(env, stop):
    """Leases are claimed for the next --concurrency queued pairs at once, ahead of the workers: those never sent
    (a budget or fatal stop) are released, not left to block another process until they expire."""
    queries, corpus, pairs, rubric, cache = env
    per_request = PRICE.cost(estimate_tokens(rubric.render(queries["q0"], corpus["d0-0"])), DEFAULT_OUTPUT_CAP)
    options = {"budget": {"max_cost": per_request * 2.5}, "fatal": {}, "none": {}}[stop]
    judge = FakeJudge(latency=0.02, script={"d0-2": ["boom"]} if stop == "fatal" else {})
    result = run(env, judge, concurrency=4, **options)
    assert len(result.labels) + len(result.failures) == 12
    assert (len(result.failures) > 0) == (stop != "none")
    assert cache.stats().leases_held == 0
    assert cache.stats().entries == len(result.labels)
