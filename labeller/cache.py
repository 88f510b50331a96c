"""Moved to labeller.store (the verdict store interface and its backends); these names stay importable
so code written against labeller.cache keeps working."""

from labeller.store.base import (BUSY, DONE, LEASE_TTL, MINE, CachedVerdict, StoreStats, export_row, new_owner,
                                 now_iso, owner_is_dead)
from labeller.store.directory import DirectoryStore as VerdictCache

CacheStats = StoreStats

__all__ = ["BUSY", "DONE", "LEASE_TTL", "MINE", "CacheStats", "CachedVerdict", "VerdictCache", "export_row",
           "new_owner", "now_iso", "owner_is_dead"]
