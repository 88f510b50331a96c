"""The verdict store: one interface (base.VerdictStore), one file per backend, open_store() to pick one.

    labeller/store/base.py       the interface and the records it stores
    labeller/store/directory.py  a local directory (diskcache on SQLite): the embedded default
    labeller/store/postgres.py   a shared PostgreSQL database (psycopg 3)
    labeller/store/registry.py   open_store(spec): a URL scheme or a directory, to its backend
    labeller/store/copy.py       copy_store(src, dst): move verdicts between stores, idempotently
    labeller/store/importing.py  import_verdicts(file, dst): a `cache export` file into a store, idempotently
"""

from labeller.store.base import (BUSY, DONE, IN_BATCH, LEASE_TTL, MINE, BatchRecord, CachedVerdict, StoreStats,
                                 VerdictStore, export_row, new_owner, now_iso, owner_is_dead)
from labeller.store.copy import CopyResult, copy_store
from labeller.store.registry import DEFAULT_STORE, ENV_VAR, default_spec, is_url, open_store, redact_url

__all__ = ["BUSY", "DEFAULT_STORE", "DONE", "ENV_VAR", "IN_BATCH", "LEASE_TTL", "MINE", "BatchRecord", "CachedVerdict",
           "CopyResult", "StoreStats", "VerdictStore", "copy_store", "default_spec", "export_row", "is_url", "new_owner",
           "now_iso", "open_store", "owner_is_dead", "redact_url"]
