"""When the reaper settles a session, and settling many at once without letting one hold up
the rest."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from datetime import datetime, timedelta
from typing import TypeVar

from sandlot.domain.status import SESSION_ACTIVE
from sandlot.store.tables import Environment, Session

__all__ = ["SWEEP_PARALLEL", "at_most", "due_reason"]

T = TypeVar("T")

#: How many due sessions one reaper sweep settles at once: a sweep that met a few hundred idle
#: sessions at the same moment (each a reset or a snapshot) once held up a newer one for minutes.
SWEEP_PARALLEL = 8


def due_reason(row: Session, env: Environment | None, now: datetime) -> str | None:
    """Why the reaper should settle session ``row`` now ("ttl expired", "idle timeout"), or None."""
    if row.expires_at is not None and row.expires_at <= now:
        return "ttl expired"
    if (
        row.status == SESSION_ACTIVE
        and env is not None
        and env.idle_timeout_seconds
        and row.last_activity_at + timedelta(seconds=env.idle_timeout_seconds) <= now
    ):
        return "idle timeout"
    return None


async def at_most(parallel: int, work: Sequence[Awaitable[T]]) -> list[T]:
    """Await every item of ``work``, at most ``parallel`` at a time; results in order."""
    gate = asyncio.Semaphore(parallel)

    async def one(item: Awaitable[T]) -> T:
        async with gate:
            return await item

    return await asyncio.gather(*(one(item) for item in work))
