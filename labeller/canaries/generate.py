"""Deterministic canary facts and a starter canary file.

`fact_code(seed)` turns a seed into a code shaped like X9-KITE-42: a letter and a digit, a word,
two digits. The same seed always gives the same code; `unique_codes` skips any code that already
occurs in the corpus (as whole tokens, case folded: factrecall.py), so planted facts stay globally unique.
`starter_file` writes a canary file to edit: the questions and payloads are placeholders to reword
the way your users ask, while ids, facts and the planted timestamp are fixed in the file.
"""

from __future__ import annotations

import hashlib
import json
import string
from collections.abc import Iterable

from labeller.canaries.factrecall import token_text

WORDS = ("KITE", "ORBIT", "FERN", "QUILL", "BASALT", "COMET", "EMBER", "GLYPH", "HAZEL", "JUNO", "LARCH",
         "NOVA", "OPAL", "PIKE", "QUARTZ", "RAVEN", "SABLE", "TUNDRA", "UMBRA", "VIOLA", "WREN", "YARROW")


def fact_code(seed: str) -> str:
    digest = hashlib.sha256(seed.encode("utf-8")).digest()
    letter = string.ascii_uppercase[digest[0] % 26]
    return f"{letter}{digest[1] % 10}-{WORDS[digest[2] % len(WORDS)]}-{digest[3] % 90 + 10}"


def unique_codes(count: int, seed: str, corpus_texts: Iterable[str]) -> list[str]:
    """`count` distinct codes from `seed`, none occurring in the corpus texts."""
    joined = "\n".join(token_text(t) for t in corpus_texts)
    codes: list[str] = []
    attempt = 0
    while len(codes) < count:
        code = fact_code(f"{seed}/{attempt}")
        attempt += 1
        if code not in codes and token_text(code) not in joined:
            codes.append(code)
    return codes


def starter_file(count: int, seed: str, corpus_texts: Iterable[str], planted_at: str) -> str:
    """TOML text of `count` single-store canaries with fresh, corpus-unique codes."""
    lines = ["# Starter canaries: reword each question and payload the way your users and documents do,",
             "# keeping the fact inside the payload. See docs/canaries-and-serve.md.", ""]
    for i, code in enumerate(unique_codes(count, seed, corpus_texts), start=1):
        spaced = code.replace("-", " ")
        lines += ["[[canary]]", f'id = "record-{i:02d}"',
                  f"question = {json.dumps(f'Which reference code is recorded for test record {i:02d}?')}",
                  f"payload = {json.dumps(f'Test record {i:02d}: the reference code is {code}.')}",
                  'store = "default"', f"planted_at = {json.dumps(planted_at)}",
                  f"facts = [{{ value = {json.dumps(code)}, aliases = [{json.dumps(spaced)}] }}]", ""]
    return "\n".join(lines)
