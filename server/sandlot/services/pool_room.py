"""Room made for a session start by what waits idle: a tenant's idle pool sandboxes, and a
full pool's sandboxes frozen under suspended sessions.

Idle warm members count against their tenant's quotas (sandboxes, memory, CPUs, disk): they
hold what they will use. A tenant whose pools sit full of idle members (an idle pool stays at
the size its busiest moment took it to) had every start elsewhere refused with 429 while
nothing of it was in use (#28). A start such a quota refuses takes one of those members down
first, the longest idle of those its pool holds beyond its minimum, and tries again; a pool is
never taken below its minimum (it would only be refilled, against the same quota). Nor does an
idle pool keep what its busiest moment took it to: housekeeping retires the ready members
beyond its minimum that have waited longer than the environment's ``pool_idle_seconds``.

A suspended session keeps its frozen sandbox, counted in its pool's maximum, so sessions left
suspended filled their pool and every start then failed (#28). A sandbox its full pool turns
away (a start with nothing on its way to ready there, or a resume that hydrates, which cannot
take a warm member as it is) takes room: an idle member of the pool first, else the frozen
sandbox of the pool's session suspended the longest, shut down under that session's lock and
only while it is still suspended; that session's resume hydrates a replacement from its
suspend snapshot (taken before the session was marked suspended).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sandlot.domain.errors import Conflict, QuotaExceeded
from sandlot.domain.pools import bounds_for
from sandlot.domain.status import SESSION_SUSPENDED, SandboxStatus
from sandlot.services.sandboxes import SandboxService
from sandlot.store.leader import Exclusive, session_lock
from sandlot.store.repositories import EnvironmentRepository, PoolRepository, SessionRepository
from sandlot.store.tables import Environment, Sandbox

__all__ = ["HELD_BY_SANDBOXES", "Pick", "give_way", "idle_too_long", "make_room", "oldest", "ready_members"]

#: Picks some of a pool's ready members (given the longest idle first) to retire.
Pick = Callable[[Sequence[Sandbox]], Sequence[Sandbox]]


def _since(row: Sandbox) -> datetime:
    return row.updated_at


def ready_members(live: Iterable[Sandbox], image: str) -> list[Sandbox]:
    """The ready members of a pool's ``image`` among ``live``, the longest idle first."""
    return sorted((r for r in live if r.image == image and r.status == SandboxStatus.READY.value), key=_since)


def oldest(count: int, idle: Sequence[Sandbox]) -> Sequence[Sandbox]:
    return idle[:count]


def idle_too_long(seconds: int, least: int, now: datetime, idle: Sequence[Sandbox]) -> Sequence[Sandbox]:
    """Of a pool's ready members (``idle``, the longest idle first), those beyond its minimum
    (``least``) that have waited longer than ``seconds``: an idle pool gives back what its
    busiest moment took it to (the environment's ``pool_idle_seconds``)."""
    cutoff = now - timedelta(seconds=seconds)
    return [row for row in idle[: max(len(idle) - least, 0)] if _since(row) <= cutoff]


#: The quotas an idle sandbox holds a share of.
HELD_BY_SANDBOXES = frozenset({"sandboxes", "memory_mb", "cpus", "disk_mb"})


async def give_way(
    reads: async_sessionmaker[AsyncSession], sandboxes: SandboxService, refused: QuotaExceeded, tenant_id: str
) -> bool:
    """Shut down one of the tenant's idle pool sandboxes held beyond its pool's minimum, for a
    start that ``refused`` turned away; False when the quota is not one they hold, or there is
    none to take (the caller then answers the refusal)."""
    if refused.extra.get("quota") not in HELD_BY_SANDBOXES:
        return False
    async with reads() as session:
        idle = await PoolRepository(session).idle_of_tenant(tenant_id)
        envs = {e.id: e for e in await EnvironmentRepository(session, tenant_id).list()}
    ready = Counter((r.environment_id, r.image) for r in idle)
    for row in idle:
        env = envs.get(row.environment_id or "")
        if env is None or ready[(env.id, row.image)] <= bounds_for(env.pool_size, row.image).min:
            continue
        reason = f"gave way to a start its tenant's {refused.extra.get('quota')} quota refused"
        if await sandboxes.shutdown(row.id, reason, only_if=SandboxStatus.READY):
            return True
        ready[(env.id, row.image)] -= 1  # claimed meanwhile: no longer idle
    return False


async def make_room(
    reads: async_sessionmaker[AsyncSession],
    sandboxes: SandboxService,
    exclusive: Exclusive,
    env: Environment,
    image: str,
) -> bool:
    """Shut down an idle member of ``env``'s full pool of ``image``, else the frozen sandbox
    of its session suspended the longest (see the module's docstring); False when there is
    neither."""
    async with reads() as session:
        live = await PoolRepository(session).live(env.id)
    for row in ready_members(live, image):
        if await sandboxes.shutdown(row.id, "made room in its full pool", only_if=SandboxStatus.READY):
            return True
    async with reads() as session:  # asked only when no idle member could go
        held = await PoolRepository(session).frozen(env.id, image)
    for sandbox_id, session_id in held:
        try:
            async with exclusive.hold(session_lock(session_id), wait=1.0):  # a resume under way wins
                async with reads() as session:
                    sess = await SessionRepository(session, None).get(session_id)
                if sess.status != SESSION_SUSPENDED or sess.sandbox_id != sandbox_id:
                    continue
                reason = f"reclaimed for its full pool from suspended session {session_id}"
                if await sandboxes.shutdown(sandbox_id, reason, only_if=SandboxStatus.IN_SESSION):
                    return True
        except Conflict:  # busy: that session is being resumed, ended or checkpointed
            continue
    return False
