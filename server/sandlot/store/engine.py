"""The async engine and session factory, for PostgreSQL (asyncpg) or SQLite (aiosqlite)."""

from __future__ import annotations

import asyncio
import logging
from contextlib import AbstractAsyncContextManager
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

__all__ = ["async_url", "fill_pool", "make_engine", "make_sessionmaker", "single_statement_sessions"]

log = logging.getLogger(__name__)


def async_url(url: str) -> str:
    """Normalise a database URL to its async driver (``postgresql://`` -> asyncpg)."""
    for plain, driver in (
        ("postgresql://", "postgresql+asyncpg://"),
        ("postgres://", "postgresql+asyncpg://"),
        ("sqlite://", "sqlite+aiosqlite://"),
    ):
        if url.startswith(plain):
            return driver + url[len(plain) :]
    return url


def make_engine(
    url: str,
    *,
    echo: bool = False,
    durable: bool = True,
    pool_size: int = 10,
    max_overflow: int = 20,
    pre_ping: bool = False,
) -> AsyncEngine:
    """Create the engine; SQLite gets WAL, foreign keys and a busy timeout. ``durable=False``
    (PostgreSQL): commits return before the WAL reaches the disk (``synchronous_commit=off``;
    a crash may lose the last moment of commits, never corrupt anything), for counters whose
    last few changes do not matter, such as the rate limit's buckets. ``pool_size`` connections
    (PostgreSQL) stay open; up to ``max_overflow`` more are opened for a burst and closed after.
    ``pre_ping``: a connection is checked before each use (a round trip), for an engine used
    too rarely for a failed request to clear its pool after the database restarted."""
    url = async_url(url)
    kwargs: dict[str, Any] = {"echo": echo}
    if url.startswith("postgresql"):
        # No pre-ping: it costs a round trip (~0.6 ms) on every checkout; stale connections
        # are recycled instead, and a dropped one fails one request, not every request.
        kwargs.update(
            pool_size=pool_size, max_overflow=max_overflow, pool_recycle=1800, pool_pre_ping=pre_ping
        )
        if not durable:
            # a few connections are enough for one short statement a request; a burst waits
            # for one of them rather than opening (and closing) more, which costs more CPU
            # than the statement
            kwargs.update(pool_size=8, max_overflow=0)
            kwargs["connect_args"] = {"server_settings": {"synchronous_commit": "off"}}
    engine = create_async_engine(url, **kwargs)
    if url.startswith("sqlite"):

        @event.listens_for(engine.sync_engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=5000")
            cur.close()

    return engine


async def fill_pool(engine: AsyncEngine, count: int) -> None:
    """Open ``count`` connections at once and give them back to the pool (PostgreSQL), so the
    first burst of requests finds them open rather than each opening one (a new backend costs
    the database more CPU than a request's statements). Best effort: a store that does not
    answer yet leaves the opening to the requests."""
    if engine.dialect.name != "postgresql" or count <= 0:
        return
    try:
        async with asyncio.timeout(10):
            opened = await asyncio.gather(
                *(engine.connect().start() for _ in range(count)), return_exceptions=True
            )
    except TimeoutError:
        log.info("the database took more than 10 s to open connections ahead of time")
        return
    for conn in opened:
        if isinstance(conn, BaseException):
            log.info("could not open a database connection ahead of time: %s", conn)
        else:
            await conn.close()


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


def single_statement_sessions(
    engine: AsyncEngine,
    sessions: async_sessionmaker[AsyncSession],
    reads: async_sessionmaker[AsyncSession],
) -> AbstractAsyncContextManager[AsyncSession]:
    """A session for a write that the repository makes one statement on PostgreSQL (then
    autocommit is atomic and saves the BEGIN/COMMIT round trips) and several elsewhere (then
    a transaction holds them together)."""
    return reads() if engine.dialect.name == "postgresql" else sessions.begin()
