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
from contextlib import asynccontextmanager

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

__all__ = ["Exclusive", "leader", "lock_key"]


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


class Exclusive:
    """Mutual exclusion by name across every process of the deployment: one holder at a time,
    the others wait (at most ``wait`` seconds: ``TimeoutError``). Waiters of this process queue
    on an asyncio lock, so only the holder takes a connection for the advisory lock; a process
    that dies releases it with its connection. ``waited`` lets a transaction that is about to
    change what the holders guard wait for the current holder without holding the lock itself."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._pg = engine.dialect.name == "postgresql"
        self._local: dict[str, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def hold(self, name: str, wait: float = 60.0) -> AsyncIterator[None]:
        lock, users = self._local.get(name) or (asyncio.Lock(), 0)
        self._local[name] = (lock, users + 1)
        try:
            async with asyncio.timeout(wait):
                await lock.acquire()
            try:
                if not self._pg:
                    yield
                    return
                async with self._engine.connect() as conn:
                    await self._lock(conn, name, wait)
                    try:
                        yield
                    finally:
                        await conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": lock_key(name)})
                        await conn.commit()
            finally:
                lock.release()
        finally:
            lock, users = self._local[name]
            if users == 1:
                del self._local[name]
            else:
                self._local[name] = (lock, users - 1)

    @staticmethod
    async def _lock(conn: AsyncConnection, name: str, wait: float) -> None:
        await conn.execute(text(f"SET LOCAL lock_timeout = '{int(wait * 1000)}ms'"))
        try:
            await conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": lock_key(name)})
        except Exception as exc:  # past lock_timeout: SQLSTATE 55P03
            orig = getattr(exc, "orig", None)
            if (getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)) == "55P03":
                raise TimeoutError(f"lock {name} is held elsewhere") from exc
            raise
        await conn.commit()  # the lock outlives the transaction; SET LOCAL does not

    async def waited(self, conn: AsyncConnection, name: str) -> None:
        """Inside ``conn``'s transaction: wait until no process holds ``name`` (PostgreSQL: a
        transaction-level shared lock, released with the transaction; SQLite: this process's
        holder, if any, finishes first)."""
        if self._pg:
            await conn.execute(text("SELECT pg_advisory_xact_lock_shared(:k)"), {"k": lock_key(name)})
            return
        local = self._local.get(name)
        if local is not None:
            async with local[0]:
                pass
