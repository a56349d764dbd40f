"""The audit trail, and the per-key token buckets of the rate limit (one row per key, changed
by one statement, so every API process shares a bucket and none can overdraw it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import case, insert, literal
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col, select

from sandlot.store.tables import AuditEvent, RateBucket

__all__ = ["AuditRepository", "take_token"]


class AuditRepository:
    """Audit events of one tenant (``tenant_id=None``: every tenant)."""

    def __init__(self, session: AsyncSession, tenant_id: str | None) -> None:
        self.session = session
        self.tenant_id = tenant_id

    async def add_many(self, events: Sequence[AuditEvent]) -> None:
        """One multi-row insert (building ORM objects would cost more than the write)."""
        rows = [e.model_dump(exclude={"id"}) for e in events]
        await self.session.execute(insert(AuditEvent), rows)

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


async def take_token(
    session: AsyncSession, key_id: str, now: float, rate: float, burst: int
) -> tuple[bool, float]:
    """Take one token from ``key_id``'s bucket (``burst`` tokens at most, ``rate`` a second
    back), in one atomic upsert. Returns (allowed, tokens left); a refused request changes
    nothing, so the refill goes on from the last allowed one."""
    bucket = RateBucket.__table__  # type: ignore[attr-defined]
    refilled = bucket.c.tokens + (literal(now) - bucket.c.stamp) * rate
    capped = case((refilled > burst, literal(float(burst))), else_=refilled)
    ok = capped >= 1
    insert: Any = (postgresql if session.get_bind().dialect.name == "postgresql" else sqlite).insert(bucket)
    statement = (
        insert.values(key_id=key_id, tokens=float(burst - 1), stamp=now, allowed=True)
        .on_conflict_do_update(
            index_elements=[bucket.c.key_id],
            set_={
                "tokens": case((ok, capped - 1), else_=bucket.c.tokens),
                "stamp": case((ok, literal(now)), else_=bucket.c.stamp),
                "allowed": ok,
            },
        )
        .returning(bucket.c.allowed, bucket.c.tokens)
    )
    allowed, tokens = (await session.execute(statement)).one()
    return bool(allowed), float(tokens)
