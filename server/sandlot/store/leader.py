"""A cluster-wide "only one of us does this round" lock.

On PostgreSQL it is a session-level advisory lock held on a dedicated connection for the round;
on SQLite (one process by design) it is always granted.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["leader"]


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
