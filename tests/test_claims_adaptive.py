"""--samples auto:N for claim verdicts: every claim asked twice, more only while its samples disagree, at most N;
the real SDK clients over real HTTP to the fake API, which plants each request's verdict ([[claimseq:...]]), so
every claim's sample count is known in advance."""

from __future__ import annotations

from collections import Counter

import pytest
from test_tasks_claims import FAST, PASSAGES, api, openai_judge, run  # noqa: F401 (api: a fixture)

from labeller.errors import BadInputError
from labeller.store import open_store
from labeller.tasks.claims import ClaimItem, ClaimSplitTask, ClaimVerdictTask, SplitItem, load_claim_rubric

# claim id -> the verdict of each request for its prompt (the last repeats), and the samples auto:5 must ask
SEQUENCES = {
    "c_agree": (["supported:d1"], 2),  # two agree at once
    "c_late": (["supported:d1", "not_supported", "not_supported", "not_supported"], 5),  # 1 disagrees: never unanimous
    "c_turn": (["contradicted:d2", "not_supported", "contradicted:d2"], 5),
    "c_flat": (["not_supported"], 2),
}


def _claims() -> list[ClaimItem]:
    return [ClaimItem(query_id="q1", claim_id=cid, question="Tell me about the tower",
                      claim=f"claim {cid} [[claimseq:{','.join(seq)}]]", passages=PASSAGES)
            for cid, (seq, _) in SEQUENCES.items()]


def _planted_verdicts(cid: str, n: int) -> list[str]:
    seq = SEQUENCES[cid][0]
    return [seq[min(k, len(seq) - 1)].split(":")[0] for k in range(n)]


def test_extra_samples_only_where_the_first_disagree(api, tmp_path):
    judge = openai_judge(api, temperature=0.7)
    task = ClaimVerdictTask(_claims(), load_claim_rubric())
    auto = FAST.model_copy(update={"samples": 5, "adaptive": True})
    with open_store(tmp_path / "cache") as store:
        result = run(task, judge, store, auto)
        asked = {row["item_id"]: row["samples"] for row in result.rows}
        assert asked == {cid: n for cid, (_, n) in SEQUENCES.items()}
        assert api.total == sum(asked.values()) == 14 == result.stats.requests
        assert result.stats.sample_counts == {"2": 2, "5": 2}
        by_claim = {row["item_id"]: row for row in result.rows}
        for cid, row in by_claim.items():
            assert row["sample_verdicts"] == _planted_verdicts(cid, asked[cid])
        assert by_claim["c_late"]["verdict"]["verdict"] == "not_supported"  # 4 of 5
        assert by_claim["c_late"]["sample_agreement"] == 0.8
        assert by_claim["c_turn"]["verdict"]["verdict"] == "contradicted"  # 4 of 5 (the last repeats)
        assert by_claim["c_agree"]["sample_agreement"] == 1.0
        api.reset()
        again = run(task, judge, store, auto)
        assert api.total == 0 and [r["sample_verdicts"] for r in again.rows] == [r["sample_verdicts"]
                                                                                  for r in result.rows]
        fixed = run(task, judge, store, FAST.model_copy(update={"samples": 5}))
        assert api.total == 5 * len(SEQUENCES) - 14  # --samples 5 reuses the adaptive run's samples
        assert Counter(row["samples"] for row in fixed.rows) == {5: 4}


def test_the_maximum_bounds_the_samples(api, tmp_path):
    judge = openai_judge(api, temperature=0.7)
    with open_store(tmp_path / "cache") as store:
        result = run(ClaimVerdictTask(_claims(), load_claim_rubric()), judge, store,
                     FAST.model_copy(update={"samples": 3, "adaptive": True}))
    assert {row["item_id"]: row["samples"] for row in result.rows} == {"c_agree": 2, "c_late": 3, "c_turn": 3,
                                                                       "c_flat": 2}
    assert api.total == 10


@pytest.mark.parametrize("update,words", [({"batch": True}, "does not take --batch"),
                                          ({}, "does not apply to the claim_split task")])
def test_refused_where_it_cannot_apply(api, tmp_path, update, words):
    judge = openai_judge(api, temperature=0.7)
    options = FAST.model_copy(update={"samples": 3, "adaptive": True, **update})
    task = (ClaimVerdictTask(_claims(), load_claim_rubric()) if update else
            ClaimSplitTask([SplitItem(query_id="q1", question="q", answer="It is tall.")], load_claim_rubric()))
    with open_store(tmp_path / "cache") as store, pytest.raises(BadInputError, match=words):
        run(task, judge, store, options)
    assert api.total == 0


def test_a_dry_run_prices_the_two_samples_every_claim_is_asked(api, tmp_path):
    judge = openai_judge(api, temperature=0.7)
    with open_store(tmp_path / "cache") as store:
        dry = run(ClaimVerdictTask(_claims(), load_claim_rubric()), judge, store,
                  FAST.model_copy(update={"samples": 5, "adaptive": True, "dry_run": True}))
    assert api.total == 0 and dry.stats.new == 2 * len(SEQUENCES) and dry.stats.estimated_input_tokens > 0
    assert any("the two samples every item is asked are priced" in n and "up to 3 more" in n
               for n in dry.stats.estimate_notes)
