"""The reaper's choice of due sessions, and its bounded fan-out."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from sandlot.services.expiry import at_most, due_reason
from sandlot.store.tables import Environment, Session
from sandlot.store.types import utcnow


def _session(**fields: object) -> Session:
    return Session(id="ses_1", tenant_id="t", environment_id="e", image="i", **fields)


def test_a_session_is_due_for_its_ttl_first_then_for_idling() -> None:
    now = utcnow()
    env = Environment(id="e", tenant_id="t", name="n", idle_timeout_seconds=60)
    idle = now - timedelta(seconds=61)
    assert due_reason(_session(status="active", last_activity_at=idle), env, now) == "idle timeout"
    assert due_reason(_session(status="suspended", last_activity_at=idle), env, now) is None
    assert due_reason(_session(status="active", last_activity_at=now), env, now) is None
    expired = _session(status="suspended", last_activity_at=idle, expires_at=now)
    assert due_reason(expired, env, now) == "ttl expired"
    assert due_reason(_session(status="active", last_activity_at=idle), None, now) is None


async def test_one_slow_item_does_not_hold_up_the_rest_and_the_bound_holds() -> None:
    running = peak = 0
    slow_released = asyncio.Event()
    finished: list[int] = []

    async def item(n: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        if n == 0:
            await slow_released.wait()
        else:
            await asyncio.sleep(0)
        running -= 1
        finished.append(n)
        if len(finished) == 19:
            slow_released.set()  # every other item ended while the slow one still ran
        return n

    assert await at_most(4, [item(n) for n in range(20)]) == list(range(20))
    assert finished[-1] == 0 and peak == 4
