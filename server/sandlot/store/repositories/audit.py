"""The audit trail, and the per-key token buckets of the rate limit (one row per key, changed
by one statement, so every API process shares a bucket and none can overdraw it)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Float, String, bindparam, case, insert
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
from sqlmodel import col, select

from sandlot.store.tables import AuditEvent, RateBucket

__all__ = ["AuditRepository", "take_tokens"]


class AuditRepository:
    """Audit events of one tenant (``tenant_id=None``: every tenant)."""

    def __init__(self, session: AsyncSession, tenant_id: str | None) -> None:
        self.session = session
        self.tenant_id = tenant_id

    async def add_many(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """One multi-row insert of events given as column values (building ORM objects would
        cost more than the write)."""
        await self.session.execute(insert(AuditEvent), list(rows))

    async def list(
        self, *, limit: int = 100, offset: int = 0, key_id: str | None = None
    ) -> Sequence[AuditEvent]:
        """Newest first."""
        query = select(AuditEvent).order_by(col(AuditEvent.id).desc())
        if self.tenant_id is not None:
            query = query.where(col(AuditEvent.tenant_id) == self.tenant_id)
        if key_id is not None:
            query = query.where(col(AuditEvent.key_id) == key_id)
        return (await self.session.scalars(query.limit(limit).offset(offset))).all()


@functools.cache
def _take_tokens_statement(dialect: str) -> Any:
    """The bucket upsert for ``dialect``, built once (building it cost more than running it):
    parameters ``key_id``, ``now``, ``rate``, ``burst``, ``want`` and ``first`` (the tokens a
    new bucket keeps)."""
    bucket = RateBucket.__table__  # type: ignore[attr-defined]
    now = bindparam("now", type_=Float)
    burst = bindparam("burst", type_=Float)
    want = bindparam("want", type_=Float)
    refilled = bucket.c.tokens + (now - bucket.c.stamp) * bindparam("rate", type_=Float)
    capped = case((refilled > burst, burst), else_=refilled)
    ok = capped >= want
    insert_into: Any = (postgresql if dialect == "postgresql" else sqlite).insert(bucket)
    return (
        insert_into.values(
            key_id=bindparam("key_id", type_=String),
            tokens=bindparam("first", type_=Float),
            stamp=now,
            allowed=True,
        )
        .on_conflict_do_update(
            index_elements=[bucket.c.key_id],
            set_={
                "tokens": case((ok, capped - want), else_=bucket.c.tokens),
                "stamp": case((ok, now), else_=bucket.c.stamp),
                "allowed": ok,
            },
        )
        .returning(bucket.c.allowed, bucket.c.tokens)
    )


async def take_tokens(
    session: AsyncSession | AsyncConnection, key_id: str, now: float, rate: float, burst: int, want: int = 1
) -> tuple[bool, float]:
    """Take ``want`` tokens (all or none) from ``key_id``'s bucket (``burst`` tokens at most,
    ``rate`` a second back), in one atomic upsert. Returns (taken, tokens left); a refusal
    changes nothing, so the refill goes on from the last take. On a connection of its own
    (``AsyncConnection``, autocommit) it skips the ORM session's overhead, which cost more than
    the statement on every request."""
    want = max(1, min(want, burst))
    bind = session if isinstance(session, AsyncConnection) else session.get_bind()
    statement = _take_tokens_statement(bind.dialect.name)
    params = {
        "key_id": key_id,
        "now": now,
        "rate": float(rate),
        "burst": float(burst),
        "want": float(want),
        "first": float(burst - want),
    }
    allowed, tokens = (await session.execute(statement, params)).one()
    return bool(allowed), float(tokens)
