"""The rate limit per key: a token bucket in the store, so every API process draws from the same
one, taken from in leases so that a busy key does not cost a database round trip per request.

Each process takes a key's tokens from its bucket a few at a time and spends them itself for
up to :data:`LEASE_SECONDS`. A key whose lease ran out within that time gets a lease twice as
large the next time (at most :attr:`RateLimiter.max_lease`, a hundredth of the burst, so never
more than one for a small burst); one whose lease lapsed unused gets half. Requests of one key
that arrive while its tokens are being taken wait for that take, and the next take is sized
for all of them: a burst of fifty requests of one key costs a handful of round trips, not
fifty. Taking is all or nothing (a bucket holding fewer than a lease's tokens is asked for one),
so the store never lets more through than the bucket holds; what a lease leaves unspent when it
lapses is lost, at most ``max_lease`` tokens a process and key a second, and the
``RateLimit-Remaining`` a process reports counts its own lease with the bucket's tokens.
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass, field

from cachetools import TTLCache
from sqlalchemy.ext.asyncio import AsyncEngine

from sandlot.domain.errors import RateLimited
from sandlot.services.accounts import Principal
from sandlot.store.repositories import take_tokens

__all__ = ["LEASE_SECONDS", "Allowance", "RateLimiter"]

#: How long a process may spend tokens it took from a key's bucket.
LEASE_SECONDS = 1.0
_KEYS_KEPT = 10_000  # leases of this many keys at most, least recently used out first


@dataclass(frozen=True, slots=True)
class Allowance:
    """Where a key's bucket stands after a request: what the ``RateLimit-*`` headers say."""

    limit: int
    remaining: int
    reset: int  # seconds until the bucket is full again

    def headers(self) -> dict[str, str]:
        return {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset),
        }


@dataclass(slots=True)
class _Lease:
    """A key's tokens taken by this process: ``tokens`` left to spend until ``until``."""

    tokens: int = 0
    until: float = 0.0
    left: float = 0.0  # the bucket's tokens after the last take
    size: int = 1  # how many to take next time
    waiting: int = 0  # requests waiting for a take under way
    taking: asyncio.Future[None] | None = field(default=None, repr=False)


class RateLimiter:
    """``rate`` requests a second per key (``per_tenant``: per tenant, all its keys together)
    on average, ``burst`` at once (``rate`` 0: no limit); the buckets live in the store behind
    ``counters`` (see ``make_engine(durable=False)``), named by the key's or the tenant's id."""

    def __init__(self, counters: AsyncEngine, rate: float, burst: int, *, per_tenant: bool = False) -> None:
        self._counters = counters.execution_options(isolation_level="AUTOCOMMIT")
        self.rate = rate
        self.burst = burst
        self.per_tenant = per_tenant
        self.max_lease = max(1, burst // 100)
        self._leases: TTLCache[str, _Lease] = TTLCache(maxsize=_KEYS_KEPT, ttl=10 * LEASE_SECONDS)

    async def admit(self, principal: Principal) -> Allowance | None:
        """Take a token for the key's request, or raise :class:`RateLimited` with how long to
        wait. None when there is no limit."""
        if self.rate <= 0:
            return None
        key = principal.tenant_id if self.per_tenant else principal.key_id
        lease = self._leases.get(key)
        if lease is None:
            lease = self._leases[key] = _Lease()
        while True:
            if lease.tokens > 0 and time.monotonic() < lease.until:
                lease.tokens -= 1
                return self._allowance(lease)
            if lease.taking is None:
                return await self._take(key, lease)
            lease.waiting += 1
            try:
                await asyncio.shield(lease.taking)
            finally:
                lease.waiting -= 1

    async def _take(self, key: str, lease: _Lease) -> Allowance:
        """Take a lease for this request and those waiting for it (one token when that many
        are not there), spending one; a refusal raises :class:`RateLimited`."""
        now = time.monotonic()
        if lease.tokens == 0 and now < lease.until:
            lease.size = min(lease.size * 2, self.max_lease)  # spent in time: more next time
        elif lease.tokens > 0:
            lease.size = max(lease.size // 2, 1)  # lapsed unspent: fewer
        want = min(max(lease.size, lease.waiting + 1), self.max_lease)
        lease.taking = asyncio.get_running_loop().create_future()
        try:
            async with self._counters.connect() as conn:  # one statement: no ORM session
                taken, left = await take_tokens(conn, key, time.time(), self.rate, self.burst, want)
                if not taken and want > 1:
                    want = 1
                    taken, left = await take_tokens(conn, key, time.time(), self.rate, self.burst, 1)
        finally:
            lease.taking.set_result(None)
            lease.taking = None
        lease.left, lease.tokens = left, 0
        if not taken:
            allowance = self._allowance(lease)
            wait = max(math.ceil((1 - left) / self.rate), 1)
            who = "this tenant's keys together" if self.per_tenant else "this key"
            raise RateLimited(
                f"{who} made more than {self.burst} requests at once or {self.rate:g} a second; "
                f"retry in {wait} s",
                retry_after=wait,
                allowance=allowance,
            )
        lease.tokens, lease.until = want - 1, time.monotonic() + LEASE_SECONDS
        return self._allowance(lease)

    def _allowance(self, lease: _Lease) -> Allowance:
        remaining = lease.left + lease.tokens
        reset = math.ceil((self.burst - remaining) / self.rate)
        return Allowance(self.burst, max(math.floor(remaining), 0), reset)
