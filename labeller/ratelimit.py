"""Requests-per-minute and tokens-per-minute limits: an async token bucket.

The bucket refills continuously at limit/60 per second and holds at most ten seconds' worth, so
a run starts promptly but never bursts a whole minute's quota at once (providers enforce their
per-minute limits over shorter windows). Waiters are served in arrival order.
"""

from __future__ import annotations

import asyncio
import time


class TokenBucket:
    def __init__(self, per_minute: float, burst_seconds: float = 10.0) -> None:
        if per_minute <= 0:
            raise ValueError("a rate limit must be positive")
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * burst_seconds)
        self.tokens = self.capacity
        self.updated = time.monotonic()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now

    async def acquire(self, amount: float = 1.0) -> None:
        """Wait until `amount` can be spent. More than the capacity waits for a full bucket instead."""
        amount = min(amount, self.capacity)
        async with self._lock:  # one waiter at a time keeps the order fair
            self._refill()
            while self.tokens < amount:
                await asyncio.sleep((amount - self.tokens) / self.rate)
                self._refill()
            self.tokens -= amount


class RateLimits:
    """The limits a run honours; either may be None (unlimited)."""

    def __init__(self, requests_per_minute: float | None = None, tokens_per_minute: float | None = None) -> None:
        self.requests = TokenBucket(requests_per_minute) if requests_per_minute else None
        self.tokens = TokenBucket(tokens_per_minute) if tokens_per_minute else None

    @property
    def active(self) -> bool:
        return self.requests is not None or self.tokens is not None

    async def acquire(self, estimated_tokens: int) -> None:
        if self.requests is not None:
            await self.requests.acquire(1)
        if self.tokens is not None:
            await self.tokens.acquire(estimated_tokens)
