"""A labelling run planned a chunk at a time: every pair's cache key, then what the store holds of the chunk.

Keys hash the same bytes as cache_key() (cache_key.UserKeyer): the system prompt's part once, each query's
part once (kept across chunks: pairs rarely come grouped by query), the document's part per pair (its text
as the corpus file holds it, where it can: io.corpus_index). A store
whose lookups spend their time in C or on a server (reads_ahead) is read on threads, LOOKUPS_AHEAD chunks at
once while the next chunk is hashed: SQLite's work and labeller's on both cores.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from labeller.cache_key import UserKeyer, judge_fields
from labeller.io.inputs import text_and_fields
from labeller.judges.base import Judge
from labeller.rubric import JudgePrompt, Rubric, escape, escape_utf8

# Two lookups at once: twice one's speed once SQLite's allocation count is off (store.sqlite_memory); three
# measured no faster
LOOKUPS_AHEAD = 2
QUERY_HEADS = 200_000  # hash states of queries' parts kept across chunks (~0.2 KB each)
Found = tuple[dict[str, bytes], dict[str, Any]]  # (projected rows, records as stored: str or bytes) by key


class PairKeys:
    """keys(lo, hi): the cache keys of the pairs at positions lo..hi."""

    def __init__(self, *, judge: Judge, settings: dict[str, Any], served: str | None, rubric: Rubric,
                 queries: dict, corpus: dict, query_ids: Sequence[str], doc_ids: Sequence[str],
                 sample_of: Callable[[int], int]) -> None:
        self.judge, self.settings, self.served, self.rubric = judge, settings, served, rubric
        self.queries, self.doc_of = queries, text_and_fields(corpus)
        self.query_ids, self.doc_ids, self.sample_of = query_ids, doc_ids, sample_of
        self.system = JudgePrompt(system=rubric.system_prompt(), user="")
        self.keyers: dict[int, tuple[UserKeyer, bytes]] = {}  # per sample index (--samples: k > 0 is hashed too)
        self.heads: dict[Any, Any] = {}  # (query, sample) -> the hash state of the user text before the document's
        # A rubric showing a document's text alone: a document whose text is its bytes in the file is hashed
        # from those bytes (io.corpus_index), its row not read again.
        self.around = rubric.around_doc_text()
        self.text_bytes = getattr(corpus, "text_bytes", None) if self.around else None
        self.check_unchanged = getattr(corpus, "check_unchanged", None) if self.text_bytes else None
        # The pairs' documents as numbers into this very corpus (io.inputs.IdColumn over an IndexedCorpus's ids):
        # their names, to read a document by its number
        self.text_bytes_at = getattr(corpus, "text_bytes_at", None) if self.text_bytes else None
        corpus_names = getattr(getattr(corpus, "rows", None), "names", None)
        self.by_number = (corpus_names if self.text_bytes_at is not None and corpus_names is not None
                          and getattr(doc_ids, "names", None) is corpus_names else None)

    def keyer_of(self, sample: int) -> tuple[UserKeyer, bytes]:
        """The sample's keyer, and what it hashes after a document's text (around_doc_text)."""
        found = self.keyers.get(sample)
        if found is None:
            keyer = UserKeyer(**judge_fields(self.judge, self.settings, self.served), prompt=self.system,
                              sample=sample)
            found = self.keyers[sample] = (keyer, keyer.ending(self.around[1]) if self.around else b"")
        return found

    def __call__(self, lo: int, hi: int) -> list[str]:
        if len(self.heads) > QUERY_HEADS:
            self.heads.clear()
        keys = self.by_text(lo, hi) if self.around else self.by_rest(lo, hi)
        if self.check_unchanged is not None:  # before any key read from the file is looked up
            self.check_unchanged()
        return keys

    def by_rest(self, lo: int, hi: int) -> list[str]:
        """Each pair's key from its query's state and the rest of its user text."""
        heads, rubric, queries, doc_of, sample_of = self.heads, self.rubric, self.queries, self.doc_of, self.sample_of
        user_rest = rubric.user_rest
        keys = []
        for i, qid, did in zip(range(lo, hi), self.query_ids[lo:hi], self.doc_ids[lo:hi]):
            sample = sample_of(i)
            keyer = self.keyer_of(sample)[0]
            head = heads.get((qid, sample))
            if head is None:
                head = heads[qid, sample] = keyer.start(rubric.user_head(rubric.query_block(queries[qid])))
            keys.append(keyer.key(head, user_rest(*doc_of(did))))
        return keys

    def by_text(self, lo: int, hi: int) -> list[str]:
        """by_rest() where the user text is the query's part, then `before` + escape(text) + `after` (the
        query's state covers `before` too): from the text's bytes where the corpus has them."""
        heads, rubric, queries, doc_of, sample_of = self.heads, self.rubric, self.queries, self.doc_of, self.sample_of
        before, after = self.around
        names = self.by_number
        if names is not None:  # each document by its number: no lookup of its id per pair (io.id_index)
            docs, text_bytes = self.doc_ids.numbers[lo:hi], self.text_bytes_at
        else:
            docs, text_bytes = self.doc_ids[lo:hi], self.text_bytes or (lambda did: None)
        keys = []
        for i, qid, doc in zip(range(lo, hi), self.query_ids[lo:hi], docs):
            sample = sample_of(i)
            keyer, ending = self.keyer_of(sample)
            head = heads.get((qid, sample))
            if head is None:
                head = heads[qid, sample] = keyer.start(rubric.user_head(rubric.query_block(queries[qid])) + before)
            body = text_bytes(doc)
            if body is None or not keyer.exact:
                keys.append(keyer.key(head, escape(doc_of(doc if names is None else names[doc])[0]) + after))
            else:
                keys.append(keyer.key_of_body(head, escape_utf8(body), ending))
        return keys


def looked_up(total: int, size: int, keys_of: Callable[[int, int], list[str]], lookup: Callable[[list[str]], Found],
              reads_ahead: bool, known: Callable[[str], bool]) -> Iterator[tuple[int, int, list[str], Found]]:
    """(lo, hi, keys, what the store holds of them) for each chunk of `size` pairs, in order. A key `known`
    already (queued or failed earlier in the run) is not asked for; one known only by the time its chunk is
    yielded is the caller's to look at first."""
    def wanted(keys: list[str]) -> list[str]:
        return [key for key in dict.fromkeys(keys) if not known(key)]

    if not reads_ahead:
        for lo in range(0, total, size):
            hi = min(lo + size, total)
            keys = keys_of(lo, hi)
            yield lo, hi, keys, lookup(wanted(keys))
        return
    with ThreadPoolExecutor(LOOKUPS_AHEAD, thread_name_prefix="labeller-lookup") as ahead:
        pending: deque = deque()  # (lo, hi, keys, the lookup's future), oldest first
        for lo in range(0, total, size):
            hi = min(lo + size, total)
            keys = keys_of(lo, hi)
            pending.append((lo, hi, keys, ahead.submit(lookup, wanted(keys))))
            if len(pending) > LOOKUPS_AHEAD:
                lo, hi, keys, future = pending.popleft()
                yield lo, hi, keys, future.result()
        while pending:
            lo, hi, keys, future = pending.popleft()
            yield lo, hi, keys, future.result()
