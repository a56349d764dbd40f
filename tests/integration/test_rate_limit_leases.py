"""The rate limit's leases on real PostgreSQL: a busy key costs a few round trips, not one per
request, and the shared bucket still never lets more through than it holds, whichever of two
API processes serves the requests."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from sandlot.domain.errors import RateLimited
from sandlot.services.accounts import Principal
from sandlot.services.rate_limits import RateLimiter
from sandlot.store.engine import make_engine

pytestmark = pytest.mark.postgres


@pytest.fixture
async def counters(pg_url: str) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(pg_url, durable=False)
    yield engine
    await engine.dispose()


def _statements(engine: AsyncEngine) -> list[str]:
    seen: list[str] = []

    @event.listens_for(engine.sync_engine, "before_cursor_execute")
    def _count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "rate_buckets" in statement:
            seen.append(statement)

    return seen


def _key() -> Principal:
    return Principal(tenant_id="ten_x", key_id=f"key_{secrets.token_hex(8)}", scopes=frozenset())


async def _admit_all(limiters: list[RateLimiter], key: Principal, n: int) -> int:
    async def one(i: int) -> bool:
        try:
            await limiters[i % len(limiters)].admit(key)
            return True
        except RateLimited:
            return False

    return sum(await asyncio.gather(*(one(i) for i in range(n))))


async def test_a_burst_of_one_key_costs_a_few_round_trips(counters: AsyncEngine) -> None:
    seen = _statements(counters)
    limiter = RateLimiter(counters, rate=1000, burst=1000)
    key = _key()
    assert await _admit_all([limiter], key, 50) == 50
    assert len(seen) <= 8, len(seen)  # one take, then leases of up to max_lease (10) each
    # one request after another within the lease time: the lease grows, round trips stay few
    seen.clear()
    for _ in range(40):
        await limiter.admit(key)
    assert len(seen) <= 10, len(seen)


async def test_a_small_burst_is_exact_and_never_leased(counters: AsyncEngine) -> None:
    """A burst under a hundred tokens is taken one token a request, as before leases: every
    token is spent, by whichever process."""
    here, there = (RateLimiter(counters, rate=0.001, burst=20) for _ in range(2))
    assert here.max_lease == 1
    assert await _admit_all([here, there], _key(), 30) == 20


async def test_two_processes_never_let_more_through_than_the_bucket_holds(counters: AsyncEngine) -> None:
    """Leases take tokens from the shared bucket: together they pass at most the burst; what a
    lease leaves unspent is at most ``max_lease`` tokens a process."""
    here, there = (RateLimiter(counters, rate=0.001, burst=500) for _ in range(2))
    allowed = await _admit_all([here, there], _key(), 700)
    assert 500 - 2 * here.max_lease <= allowed <= 500, allowed
    # a refusal carries the allowance: nothing left, and when to come back
    key = _key()
    for _ in range(500):
        await here.admit(key)
    with pytest.raises(RateLimited) as refused:
        await here.admit(key)
    assert refused.value.retry_after >= 1
    assert refused.value.allowance.remaining == 0  # type: ignore[attr-defined]
