"""The output row a stored verdict becomes in a cached rerun, as a Projection of the stored record.

A label row (records.Label.model_dump()) of a pair answered from the store is the pair's ids, then the
verdict's grade and justification, then what the record says about itself (provenance, tokens, cost,
served model), then Label's defaults. CACHED_ROW is that row after the ids, read from the record. Both
stores build it once, in Python, as they write a verdict (cached_row_of), and keep it with the record: the
PostgreSQL store in a column, the directory store in the entry's tag. For a verdict stored without one the
directory store builds it in SQLite as it reads (projection.sqlite_json_object), and labelling.rows builds the
same row from a record in Python (label_row); cached_lines puts the pair's ids in front.
"""

from __future__ import annotations

import orjson

from labeller.records import OPTIONAL_COLUMNS, Label
from labeller.store.base import CachedVerdict
from labeller.store.projection import Projection

LABEL_FIELDS = tuple(Label.model_fields)
LABEL_DEFAULTS = {name: field.default for name, field in Label.model_fields.items() if not field.is_required()}
OWN_FIELDS = ("query_id", "doc_id", "grade", "justification")  # the pair's and the verdict's; the rest from the record
# What a stored verdict records about itself (provenance, tokens, cost, served model) and a label copies.
COPIED_FIELDS = tuple(name for name in LABEL_FIELDS if name not in OWN_FIELDS and name != "from_cache"
                      and name not in OPTIONAL_COLUMNS and name in CachedVerdict.model_fields)
# A row as Label.model_dump() gives it for one judge's verdict: the jury and grade-probability columns are left
# out when unset (a verdict with grade probabilities gets them from labelling.rows.label_row)
# (records.Label's serializer), the sample columns are None until labelling.samples collapses samples.
ROW_TEMPLATE = {name: LABEL_DEFAULTS.get(name) for name in LABEL_FIELDS if name not in OPTIONAL_COLUMNS}

CACHED_ROW = Projection(
    fields=tuple((name, ("verdict", name) if name in OWN_FIELDS else (name,) if name in COPIED_FIELDS else
                  "true" if name == "from_cache" else orjson.dumps(ROW_TEMPLATE[name]).decode())
                 for name in ROW_TEMPLATE if name not in ("query_id", "doc_id")),
    required=((("verdict", "grade"), "integer"), (("verdict", "justification"), "text")))


def cached_row_of(record: CachedVerdict) -> str | None:
    """CACHED_ROW's object of a verdict as the text a store keeps, from the values its stored JSON holds
    (pydantic's JSON mode: an integer stays exact, where orjson would read one past 64 bits as a float), or None
    where it has none."""
    row = CACHED_ROW.json_of(record.model_dump(mode="json"))
    return None if row is None else row.decode("utf-8")
