"""The Task interface the labelling engine runs: what one judged item is, and everything that depends on the task.

An item is one prompt: a (query_id, item_id) pair, carried in a records.Pair (`doc_id` holds the item id: a
document for relevance, a claim for a claim verdict, the answer for a claim split). Per task:

- render(i): the prompt of item i, carrying the task's ReplySpec (None for relevance);
- keys(judge, settings, served): the function (lo, hi) -> cache keys of items lo..hi. The default renders and
  hashes each item (cache_key.cache_key over provider, model, base URL, settings sent, schema version, system
  and user text, sample); relevance keeps its incremental fast path (labelling.planning.PairKeys);
- row(query_id, item_id, record, from_cache): the output row of an item answered by a stored record;
- stored(reply): the reply as the store keeps it (relevance: the Verdict; others: its JSON object);
- aggregate(rows): one row from the successful samples of an item (--samples N); sample_answer(row): what two
  samples must share to agree (--samples auto);
- combine(votes): a jury's row from each judge's row of an item; subset(indices): the task over some of its
  items (escalation). Strategies over any task: labelling/task_panel.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from labeller.cache_key import cache_key, judge_fields
from labeller.judges.base import Judge
from labeller.records import Pair
from labeller.rubric import JudgePrompt
from labeller.tasks.reply import ReplySpec

Keys = Callable[[int, int], list[str]]


class Task:
    """A task over `items`, each item `n` times in a row (sample k of item j at position j * n + k)."""

    name: str = ""
    reply: ReplySpec | None = None  # None: the relevance verdict
    rubric_name: str = ""
    rubric_version: str = ""
    lines: bool = False  # whether a cached item's row can come straight from the store's projected row (relevance)

    def __init__(self, items: Sequence[Pair], n: int = 1) -> None:
        self.base_items, self.n = list(items), n
        self.items: Sequence[Pair] = self.base_items if n == 1 else [p for p in self.base_items for _ in range(n)]
        self.query_ids = [p.query_id for p in self.items]
        self.doc_ids = [p.doc_id for p in self.items]  # the item ids

    @property
    def schema_version(self) -> str:
        assert self.reply is not None
        return self.reply.schema_version

    def sample_of(self, position: int) -> int:
        return position % self.n

    def with_samples(self, n: int) -> Task:
        """The same task with each item asked n times (its cache keys hash the sample index k > 0)."""
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        Task.__init__(clone, self.base_items, n)
        return clone

    def settings(self, judge: Judge) -> dict[str, Any]:
        return judge.settings_for(self.reply)

    def render(self, position: int) -> JudgePrompt:
        return self.render_item(position // self.n)

    def render_item(self, index: int) -> JudgePrompt:
        raise NotImplementedError

    def check_inputs(self) -> None:
        """Refuse inputs that cannot be judged, before anything is planned or sent."""

    def keys(self, judge: Judge, settings: dict[str, Any], served: str | None) -> Keys:
        def keys_of(lo: int, hi: int) -> list[str]:
            fields = judge_fields(judge, settings, served)  # the judge's part, as every other path keys it
            return [cache_key(**fields, prompt=self.render(i), schema_version=self.schema_version,
                              sample=self.sample_of(i)) for i in range(lo, hi)]
        return keys_of

    def stored(self, reply: Any) -> Any:
        return reply.model_dump()

    def row(self, query_id: str, item_id: str, record: dict[str, Any], from_cache: bool) -> dict[str, Any]:
        return {"query_id": query_id, "item_id": item_id, "verdict": record["verdict"], "judge": record["judge"],
                "cache_key": record["cache_key"], "input_tokens": record.get("input_tokens"),
                "output_tokens": record.get("output_tokens"), "cost_usd": record.get("cost_usd"),
                "created_at": record["created_at"], "from_cache": from_cache}

    def aggregate(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """One row from the successful samples of one item, in sample order (default: the first)."""
        return {**rows[0], "samples": self.n}

    def sample_answer(self, row: dict[str, Any]) -> Any:
        """What two samples of an item must share to agree (--samples auto: labelling.task_adaptive); None: the task
        cannot be sampled adaptively."""
        return None

    def combine(self, votes: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """A jury's row from each judge's row of one item, by judge name in the order asked (default: the first's)."""
        return next(iter(votes.values()))

    def subset(self, indices: list[int]) -> Task:
        """The same task over the items at `indices` (escalation asks another judge about some of them)."""
        raise NotImplementedError(f"the {self.name} task cannot be escalated")
