"""The claim tasks through the one labelling engine: real SDK clients over real HTTP to the fake API, which
answers the claim schemas with planted replies (tests/fakeapi.py claim_verdict / claim_split), malformed and
out-of-schema ones included. The relevance path's keys and rows are guarded by the existing labelling tests."""

from __future__ import annotations

import asyncio

import pytest
from fakeapi import FakeAPI

from labeller.errors import ConfigError
from labeller.judges.registry import make_judge
from labeller.labelling.models import LabelOptions
from labeller.labelling.task_run import judge_task
from labeller.prices import ModelPrice, PriceTable
from labeller.retry import RetryPolicy
from labeller.store import open_store
from labeller.tasks.claims import (CLAIM_SPLIT, CLAIM_VERDICT, ClaimItem, ClaimSplitTask, ClaimVerdictTask, SplitItem,
                                   load_claim_rubric)
from labeller.tasks.reply import VERDICT, MalformedReply
from labeller.judges.wire import verdict_schema

KEY = "sk-tasks-SECRET-1234"
FAST = LabelOptions(retry=RetryPolicy(initial_wait=0, max_wait=0, max_retry_after=0), concurrency=4)
PASSAGES = [("d1", "The Eiffel Tower is 330 m tall."), ("d2", "It was completed in 1889."), ("d3", "Paris is in France.")]
PLANTED = {"q1#1": ("supported", ["d1"]), "q1#2": ("contradicted", ["d2"]), "q1#3": ("not_supported", []),
           "q1#4": ("supported", ["d1", "d3"])}


def claims(passages=PASSAGES) -> list[ClaimItem]:
    out = []
    for cid, (verdict, ids) in PLANTED.items():
        marker = f"[[{verdict}{''.join(':' + i for i in ids)}]]"
        out.append(ClaimItem(query_id="q1", claim_id=cid, question="Tell me about the tower",
                             claim=f"claim {cid} {marker}", passages=passages))
    return out


def run(task, judge, store, options=FAST, prices=None):
    """One run in its own event loop, with a fresh judge from `judge` (a factory): an SDK client belongs to one loop."""
    async def go():
        made = judge()
        try:
            return await judge_task(task, made, store, options, prices=prices)
        finally:
            await made.aclose()
    return asyncio.run(go())


@pytest.fixture
def api():
    with FakeAPI(api_key=KEY) as server:
        yield server


def openai_judge(api, **kw):
    return lambda: make_judge("openai:gpt-4.1-mini", base_url=api.openai_url, api_key=KEY, **kw)


def test_relevance_reply_spec_is_the_old_schema():
    assert VERDICT.schema() == verdict_schema() and VERDICT.name == "verdict" and VERDICT.tool == "record_verdict"
    assert VERDICT.schema_version == "verdict-v1"


def test_claim_reply_models_refuse_out_of_schema_replies():
    context = {"passage_ids": ["d1"]}
    good = {"justification": "d1 says so", "verdict": "supported", "supporting": ["d1"], "contradicting": []}
    assert CLAIM_VERDICT.parse(good, context).verdict == "supported"
    for bad in ({**good, "verdict": "maybe"}, {**good, "supporting": []}, {**good, "supporting": ["d9"]},
                {**good, "extra": 1}, {**good, "justification": ""},
                {**good, "verdict": "not_supported"}, {**good, "verdict": "contradicted", "contradicting": []}):
        with pytest.raises(MalformedReply):
            CLAIM_VERDICT.parse(bad, context)
    with pytest.raises(MalformedReply, match="claims"):
        CLAIM_SPLIT.parse({"justification": "x", "abstained": False, "claims": ["  "]})
    with pytest.raises(MalformedReply, match="invalid JSON"):
        CLAIM_SPLIT.parse('{"justification": "x", ')


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_every_claim_verdict_is_the_planted_one_and_a_rerun_sends_nothing(api, tmp_path, provider):
    judge = openai_judge(api) if provider == "openai" else \
        (lambda: make_judge("anthropic:claude-haiku-4-5", base_url=api.url, api_key=KEY))
    task = ClaimVerdictTask(claims(), load_claim_rubric())
    with open_store(tmp_path / "cache") as store:
        first = run(task, judge, store)
        assert not first.failures and first.stats.new == 4
        got = {row["item_id"]: (row["verdict"]["verdict"], row["verdict"]["supporting"] or
                                row["verdict"]["contradicting"]) for row in first.rows}
        assert got == PLANTED
        sent = api.total
        again = run(task, judge, store)
        assert api.total == sent and again.stats.cached == 4 and again.rows[0]["from_cache"]
    body = api.requests[-1].body
    if provider == "openai":
        assert body["response_format"]["json_schema"]["name"] == "claim_verdict"
    else:
        assert body["tool_choice"] == {"type": "tool", "name": "record_claim_verdict"}


def test_a_changed_passage_rejudges_only_the_claims_shown_it(api, tmp_path):
    judge = openai_judge(api)
    rubric = load_claim_rubric()
    other = ClaimItem(query_id="q2", claim_id="q2#1", question="q", claim="x [[supported:e1]]",
                      passages=[("e1", "unchanged")])
    with open_store(tmp_path / "cache") as store:
        run(ClaimVerdictTask(claims() + [other], rubric), judge, store)
        sent = api.total
        changed = [(pid, text + " (edited)" if pid == "d2" else text) for pid, text in PASSAGES]
        rerun = run(ClaimVerdictTask(claims(changed) + [other], rubric), judge, store)
        assert api.total - sent == 4 and rerun.stats.cached == 1  # q1's four claims were shown d2; q2's was not


def test_malformed_and_out_of_schema_replies_are_retried_then_counted(api, tmp_path):
    judge = openai_judge(api)
    task = ClaimVerdictTask(claims(), load_claim_rubric())
    # two bad replies for a claim are retried (max_malformed is 3): the four claims still all come out right
    api.script(["malformed", "range", "ok", "missing", "stray", "ok", "empty", "ok"])
    with open_store(tmp_path / "a") as store:
        result = run(task.with_samples(1), judge, store, FAST.model_copy(update={"concurrency": 1}))
    assert not result.failures
    assert {row["item_id"]: row["verdict"]["verdict"] for row in result.rows} == {k: v for k, (v, _) in PLANTED.items()}
    api.poison["claim q1#3"] = "stray"  # this claim's replies always name a passage it was not shown
    with open_store(tmp_path / "b") as store:
        result = run(task, judge, store)
        assert [f.doc_id for f in result.failures] == ["q1#3"] and "not shown" in result.failures[0].reason
        assert len(result.rows) == 3 and result.stats.failed == 1  # never a verdict made up
        del api.poison["claim q1#3"]
        sent = api.total
        rerun = run(task, judge, store)
        assert api.total == sent + 1 and not rerun.failures  # only the failed claim is sent again


@pytest.mark.parametrize("mode", ["tool", "json_object", "text"])
def test_claim_split_through_the_engine(api, tmp_path, mode):
    judge = openai_judge(api, output_mode=mode)
    items = [SplitItem(query_id="q1", question="How tall?", answer="It is 330 m. It opened in 1889."),
             SplitItem(query_id="q2", question="Salary?", answer="I cannot share that. [[abstain]]")]
    with open_store(tmp_path / "cache") as store:
        result = run(ClaimSplitTask(items, load_claim_rubric()), judge, store)
    rows = {row["query_id"]: row["verdict"] for row in result.rows}
    assert rows["q1"]["claims"] == ["It is 330 m.", "It opened in 1889."] and not rows["q1"]["abstained"]
    assert rows["q2"]["abstained"] and rows["q2"]["claims"] == []
    body = api.requests[-1].body
    if mode == "tool":
        assert body["tool_choice"]["function"]["name"] == "record_claims"
    else:  # no schema reaches the model: the system text says what to reply
        assert '"abstained": true | false' in body["messages"][0]["content"]


def test_samples_dry_run_and_budget_for_claims(api, tmp_path):
    judge = openai_judge(api, temperature=0.7)
    task = ClaimVerdictTask(claims(), load_claim_rubric())
    with open_store(tmp_path / "cache") as store:
        dry = run(task, judge, store, FAST.model_copy(update={"dry_run": True, "samples": 3}))
        assert api.total == 0 and dry.stats.new == 12 and dry.stats.estimated_input_tokens > 0
        sampled = run(task, judge, store, FAST.model_copy(update={"samples": 3}))
        assert api.total == 12 and all(row["samples"] == 3 and row["sample_agreement"] == 1 for row in sampled.rows)
        assert {row["item_id"]: row["verdict"]["verdict"] for row in sampled.rows}["q1#2"] == "contradicted"
    prices = PriceTable({"openai": {"gpt-4.1-mini": ModelPrice(input=1000.0, output=1000.0)}})
    with open_store(tmp_path / "budget") as store:
        capped = run(task, judge, store, FAST.model_copy(update={"max_cost": 0.5, "concurrency": 1}), prices)
    assert capped.stats.budget_stopped and capped.stats.skipped > 0 and len(capped.rows) < 4


BATCH = FAST.model_copy(update={"batch": True, "poll_interval": 0.05})
SYNC_PATHS = ("/v1/chat/completions", "/v1/messages")


def judges(api, provider):
    if provider == "openai":
        return openai_judge(api)
    return lambda: make_judge("anthropic:claude-haiku-4-5", base_url=api.url, api_key=KEY)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_claim_verdicts_through_the_batch_api_then_a_sync_rerun_sends_nothing(api, tmp_path, provider):
    """--batch for the claim task: every claim its planted verdict, no synchronous request, one batch line per
    claim; the batch and sync paths key alike, so a rerun without --batch (and one with it) sends nothing."""
    judge = judges(api, provider)
    with open_store(tmp_path / "cache") as store:
        got = run(ClaimVerdictTask(claims(), load_claim_rubric()), judge, store, BATCH)
        assert not got.failures and got.stats.batch is not None and got.stats.batch.submitted == 1
        assert {r["item_id"]: (r["verdict"]["verdict"], r["verdict"]["supporting"] + r["verdict"]["contradicting"])
                for r in got.rows} == {cid: (v, ids) for cid, (v, ids) in PLANTED.items()}
        assert not any(r["from_cache"] for r in got.rows) and got.stats.new == 4
        assert sum(api.counts[p] for p in SYNC_PATHS) == 0 and sorted(api.batched.values()) == [1, 1, 1, 1]
        sent = api.total
        again = run(ClaimVerdictTask(claims(), load_claim_rubric()), judge, store)  # without --batch
        assert api.total == sent and all(r["from_cache"] for r in again.rows)
        assert [r["verdict"] for r in again.rows] == [r["verdict"] for r in got.rows]
        run(ClaimVerdictTask(claims(), load_claim_rubric()), judge, store, BATCH)
        assert api.total == sent


def test_batch_results_malformed_or_naming_a_passage_not_shown_are_counted_failures(api, tmp_path):
    api.poison["q1#2"] = "stray"  # names a passage it was not shown: the prompt's context checks the batch reply
    api.poison["q1#3"] = "malformed"
    with open_store(tmp_path / "cache") as store:
        got = run(ClaimVerdictTask(claims(), load_claim_rubric()), openai_judge(api), store, BATCH)
        assert sorted(f.doc_id for f in got.failures) == ["q1#2", "q1#3"] and got.stats.failed == 2
        assert all(f.reason.startswith("malformed reply") for f in got.failures), [f.reason for f in got.failures]
        assert sorted(r["item_id"] for r in got.rows) == ["q1#1", "q1#4"]
        api.poison.clear()
        rerun = run(ClaimVerdictTask(claims(), load_claim_rubric()), openai_judge(api), store, BATCH)
    assert not rerun.failures and len(rerun.rows) == 4
    assert sorted(api.batched.values()) == [1, 1, 2, 2]  # only the two that failed were sent again


def test_an_interrupted_batch_is_collected_whole_by_a_run_over_part_of_it(api, tmp_path):
    """A --batch run stopped while polling leaves its batch open in the store; a run without --batch over two of its
    four claims collects the whole batch (the other two checked against the claim schema), so nothing is bought
    again, now or by the full run after it."""
    api.batch_delay = 30.0
    rubric = load_claim_rubric()

    async def interrupted(store):
        made = openai_judge(api)()
        try:
            await asyncio.wait_for(judge_task(ClaimVerdictTask(claims(), rubric), made, store, BATCH), timeout=1.0)
        finally:
            await made.aclose()

    with open_store(tmp_path / "cache") as store:
        with pytest.raises(asyncio.TimeoutError):
            asyncio.run(interrupted(store))
        assert len(store.open_batches("openai")) == 1 and sum(api.batched.values()) == 4
        api.batch_delay = 0.0
        part = run(ClaimVerdictTask(claims()[:2], rubric), openai_judge(api), store)
        assert [r["verdict"]["verdict"] for r in part.rows] == ["supported", "contradicted"] and not part.failures
        assert store.open_batches("openai") == [] and sum(api.counts[p] for p in SYNC_PATHS) == 0
        whole = run(ClaimVerdictTask(claims(), rubric), openai_judge(api), store)
    assert [r["verdict"]["verdict"] for r in whole.rows] == [v for v, _ in PLANTED.values()]
    assert all(r["from_cache"] for r in whole.rows) and sum(api.counts[p] for p in SYNC_PATHS) == 0


def test_batch_is_refused_for_a_judge_with_no_batch_api(tmp_path):
    with open_store(tmp_path / "cache") as store, pytest.raises(ConfigError, match="--batch"):
        run(ClaimVerdictTask(claims(), load_claim_rubric()), lambda: make_judge("offline:lexical"), store, BATCH)


def test_offline_judge_splits_and_judges_without_a_key(tmp_path):
    judge = lambda: make_judge("offline:lexical")  # noqa: E731
    rubric = load_claim_rubric()
    items = [SplitItem(query_id="q1", question="Tower?",
                       answer="The Eiffel Tower is 330 m tall [d1]. It is 500 m wide. The tower is not in Paris.")]
    with open_store(tmp_path / "cache") as store:
        split = run(ClaimSplitTask(items, rubric), judge, store).rows[0]["verdict"]
        assert split["claims"] == ["The Eiffel Tower is 330 m tall.", "It is 500 m wide.", "The tower is not in Paris."]
        passages = [("d1", "The Eiffel Tower is 330 m tall and stands in Paris."), ("d2", "Cats sleep a lot.")]
        tasks = [ClaimItem(query_id="q1", claim_id=f"q1#{i}", question="Tower?", claim=c, passages=passages)
                 for i, c in enumerate(split["claims"], 1)]
        rows = run(ClaimVerdictTask(tasks, rubric), judge, store).rows
    assert [r["verdict"]["verdict"] for r in rows] == ["supported", "not_supported", "contradicted"]
    assert rows[0]["verdict"]["supporting"] == ["d1"] and rows[2]["verdict"]["contradicting"] == ["d1"]


def test_claim_verdicts_in_the_postgresql_store(api, postgres_url):
    """The same store as relevance: a claim verdict written to PostgreSQL is served from it on the rerun."""
    import uuid

    judge = openai_judge(api)
    marker = uuid.uuid4().hex  # the server's database outlives this test: keys of our own
    items = [ClaimItem(query_id="q1", claim_id=f"q1#{i}", question=f"pg {marker}", claim=f"c{i} [[supported:d1]]",
                       passages=PASSAGES) for i in range(3)]
    task = ClaimVerdictTask(items, load_claim_rubric())
    with open_store(postgres_url) as store:
        first = run(task, judge, store)
        assert first.stats.new == 3 and all(r["verdict"]["verdict"] == "supported" for r in first.rows)
    with open_store(postgres_url) as store:
        sent = api.total
        again = run(task, judge, store)
        assert api.total == sent and again.stats.cached == 3
        assert [r["verdict"] for r in again.rows] == [r["verdict"] for r in first.rows]
