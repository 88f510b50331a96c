"""Stored verdicts that are not a verdict's JSON (a disk fault, a copy cut short, a hand edit): set aside.

One such record used to stop every run on its pair, and `cache export`, with a traceback. A store that
reads one now (a lookup, records()) names its key on stderr, keeps its text as that key's failure (for
`cache stats` and for a person to look at), and removes the verdict: the key reads as missing, so the
pair is judged again and the new verdict takes its place. A record that is JSON of a shape this labeller
does not know (a newer labeller's) is not touched.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from labeller.io.tables import load_own
from labeller.records import LabelFailure
from labeller.store.base import now_iso

KEPT_CHARACTERS = 300  # of a damaged record, in its failure's reason


def is_damaged(raw: str | bytes) -> bool:
    try:
        record = load_own(raw)
    except ValueError:
        return True
    return not (isinstance(record, dict) and isinstance(record.get("verdict"), dict))


def failure_of(key: str, raw: str | bytes) -> LabelFailure:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    return LabelFailure(query_id="", doc_id="", judge="", rubric="", rubric_version="", cache_key=key, attempts=0,
                        reason=f"damaged record in the verdict store, set aside: {text[:KEPT_CHARACTERS]!r}",
                        created_at=now_iso())


def without_damaged(found: dict[str, Any], location: str,
                    set_aside: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """`found` (key -> stored record) without its damaged records, which go to `set_aside` and are named."""
    bad = [key for key, raw in found.items() if is_damaged(raw)]
    if bad:
        set_aside({key: found.pop(key) for key in bad})
        print(f"labeller: warning: {location}: {len(bad)} stored verdict{'s are' if len(bad) > 1 else ' is'} "
              f"damaged (not a verdict's JSON), set aside as failures; the pair is judged again: "
              f"{', '.join(bad[:5])}{' ...' if len(bad) > 5 else ''}", file=sys.stderr, flush=True)
    return found
