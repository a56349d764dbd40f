"""Cluster-wide locks: "only one of us does this round" (:func:`leader`) and "one at a time,
the others wait" (:class:`Exclusive`).

On PostgreSQL both are session-level advisory locks held on a dedicated connection; on SQLite
(one process by design) the round is always granted and the others wait on an in-process lock.
"""

from __future__ import annotations

import asyncio
import hashlib
import zlib
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from sandlot.domain.errors import Busy

__all__ = ["Exclusive", "Turns", "leader", "lock_key", "session_lock"]


def lock_key(name: str) -> int:
    """A signed 64-bit advisory lock key for ``name`` (two names sharing one only wait for
    each other)."""
    digest = hashlib.blake2b(f"sandlot:{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


@asynccontextmanager
async def leader(engine: AsyncEngine, name: str) -> AsyncIterator[bool]:
    """Yield True if this process holds lock ``name`` for the block, False if another does."""
    if engine.dialect.name != "postgresql":
        yield True
        return
    key = zlib.crc32(f"sandlot:{name}".encode())
    async with engine.connect() as conn:
        got = bool((await conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": key})).scalar())
        await conn.commit()
        try:
            yield got
        finally:
            if got:
                await conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
                await conn.commit()


class Turns:
    """At most ``at_once`` holders of each key at a time in this process; the others queue,
    each at most the ``wait`` it names, then ``Busy`` with its message. A key is kept only
    while someone holds or waits for it."""

    def __init__(self, at_once: int) -> None:
        self._at_once = at_once
        self._keys: dict[str, tuple[asyncio.Semaphore, int]] = {}

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    @asynccontextmanager
    async def turn(self, key: str, wait: float, busy: str) -> AsyncIterator[None]:
        sem, users = self._keys.get(key) or (asyncio.Semaphore(self._at_once), 0)
        self._keys[key] = (sem, users + 1)
        try:
            try:
                async with asyncio.timeout(wait):
                    await sem.acquire()
            except TimeoutError as exc:
                raise Busy(busy) from exc
            try:
                yield
            finally:
                sem.release()
        finally:
            sem, users = self._keys[key]
            if users == 1:
                del self._keys[key]
            else:
                self._keys[key] = (sem, users - 1)


class Exclusive:
    """Mutual exclusion by name across every process of the deployment: one holder at a time
    (:meth:`hold`), the others wait at most ``wait`` seconds (then ``Busy``: 409, retryable); and
    :meth:`barrier` for a short step that must not run beside a holder (it waits for the
    current one, and none starts while it runs). Waiters of this process queue on an in-process
    lock first, so only the holder, or a barrier meeting a holder in another process, takes a
    connection, and those come from ``engine``'s own small pool, never the one requests use. On
    PostgreSQL these are advisory locks, released with their connection if anything goes wrong
    (a process that dies releases its locks); on SQLite, one process by design, the in-process
    lock is all."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._pg = engine.dialect.name == "postgresql"
        self._local = Turns(1)

    def hold(self, name: str, wait: float = 60.0) -> AbstractAsyncContextManager[None]:
        """Hold ``name``: the only holder in the deployment until the block ends."""
        return self._taken(name, wait, shared=False)

    def barrier(self, name: str, wait: float = 60.0) -> AbstractAsyncContextManager[None]:
        """For a step that changes what holders of ``name`` guard: it starts once no process
        holds ``name``, and no holder starts until it is done. Barriers of one name run one
        at a time in a process, side by side across processes."""
        return self._taken(name, wait, shared=True)

    @asynccontextmanager
    async def _taken(self, name: str, wait: float, *, shared: bool) -> AsyncIterator[None]:
        busy = f"{name} is busy with another step (waited {wait:g} s); try again"
        async with self._local.turn(name, wait, busy):  # this process's waiters queue here first
            if not self._pg:
                yield
                return
            async with self._advisory(name, wait, shared=shared):
                yield

    async def try_barrier(self, conn: AsyncConnection, name: str) -> bool:
        """:meth:`barrier`'s common case for one statement inside ``conn``'s transaction: True
        when no process holds ``name`` (and none of this process waits for it), and then no
        holder starts until that transaction ends (a shared transaction-level advisory lock);
        False when one does, and always on SQLite: then end the transaction and use
        :meth:`barrier`, which waits without holding ``conn``."""
        if not self._pg or name in self._local:
            return False
        got = await conn.execute(text("SELECT pg_try_advisory_xact_lock_shared(:k)"), {"k": lock_key(name)})
        return bool(got.scalar())

    @asynccontextmanager
    async def _advisory(self, name: str, wait: float, *, shared: bool) -> AsyncIterator[None]:
        kind = "_shared" if shared else ""
        key = {"k": lock_key(name)}
        async with self._engine.connect() as conn:
            try:
                await conn.execute(text(f"SET LOCAL lock_timeout = '{int(wait * 1000)}ms'"))
                await conn.execute(text(f"SELECT pg_advisory_lock{kind}(:k)"), key)
                await conn.commit()  # the lock outlives the transaction; SET LOCAL does not
            except BaseException as exc:
                await conn.invalidate()  # whatever it holds goes with the connection
                orig = getattr(exc, "orig", None)
                if (getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)) == "55P03":
                    raise Busy(
                        f"{name} is busy with another step elsewhere (waited {wait:g} s); try again"
                    ) from exc
                raise
            try:
                yield
            finally:
                try:
                    await conn.execute(text(f"SELECT pg_advisory_unlock{kind}(:k)"), key)
                    await conn.commit()
                except BaseException:
                    await conn.invalidate()
                    raise


def session_lock(session_id: str) -> str:
    """The name of the lock that suspend, resume and checkpoints of a session hold, and that
    ending it (and taking its frozen sandbox for a full pool) waits for."""
    return f"session:{session_id}"
