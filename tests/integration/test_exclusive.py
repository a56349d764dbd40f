"""Cluster-wide session locks (``store/leader.py``'s ``Exclusive``) on real PostgreSQL: a barrier
waits for a holder in another process, a holder waits for a barrier, and the barrier's common
case (``try_barrier``, one statement in the caller's own transaction) says no while anyone
holds the lock, so the caller can wait without keeping its connection."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from sandlot.domain.errors import Busy
from sandlot.store.engine import make_engine
from sandlot.store.leader import Exclusive

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def engines(pg_url: str) -> AsyncIterator[tuple[AsyncEngine, AsyncEngine]]:
    requests, locks = make_engine(pg_url), make_engine(pg_url, pool_size=1, max_overflow=4)
    yield requests, locks
    await requests.dispose()
    await locks.dispose()


async def test_try_barrier_takes_the_lock_only_when_nobody_holds_it(
    engines: tuple[AsyncEngine, AsyncEngine],
) -> None:
    requests, locks = engines
    here, elsewhere = Exclusive(locks), Exclusive(locks)  # two API processes
    async with requests.begin() as conn:
        assert await here.try_barrier(conn, "ses_free")
        # a holder elsewhere cannot start while that transaction is open
        holding = elsewhere.hold("ses_free", wait=5)  # kept: its generator holds the lock
        held = asyncio.create_task(holding.__aenter__())
        await asyncio.sleep(0.3)
        assert not held.done()
    await asyncio.wait_for(held, 5)  # the transaction ended: now it holds
    async with requests.begin() as conn:
        assert not await here.try_barrier(conn, "ses_free")  # held elsewhere: say no, do not wait
    barrier = here.barrier("ses_free", wait=5)
    ended = asyncio.create_task(barrier.__aenter__())
    await asyncio.sleep(0.3)
    assert not ended.done()  # the full barrier waits for the holder...
    await holding.__aexit__(None, None, None)
    await asyncio.wait_for(ended, 5)  # ...and goes on once it is done
    await barrier.__aexit__(None, None, None)


async def test_try_barrier_defers_to_a_waiter_of_its_own_process(
    engines: tuple[AsyncEngine, AsyncEngine],
) -> None:
    requests, locks = engines
    here = Exclusive(locks)
    async with here.hold("ses_local"), requests.begin() as conn:
        assert not await here.try_barrier(conn, "ses_local")
    async with requests.begin() as conn:
        assert await here.try_barrier(conn, "ses_local")


async def test_a_wait_that_runs_out_is_busy_not_a_bare_timeout(
    engines: tuple[AsyncEngine, AsyncEngine],
) -> None:
    """Waiting past ``wait`` is ``Busy`` (409, retryable), here and across processes."""
    _, locks = engines
    here, elsewhere = Exclusive(locks), Exclusive(locks)
    async with here.hold("ses_long"):
        with pytest.raises(Busy) as local:
            async with here.barrier("ses_long", wait=0.2):
                pass
        with pytest.raises(Busy) as remote:
            async with elsewhere.hold("ses_long", wait=0.2):
                pass
    assert local.value.retryable and "ses_long" in str(remote.value)
    async with elsewhere.hold("ses_long", wait=0.2):  # free again
        pass
