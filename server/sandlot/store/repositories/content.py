"""Content blobs of one tenant (snapshots' file contents, stored once per tenant), the
references snapshots hold on them, and what garbage collection may take.

Every lookup is by (tenant, hash): a tenant's manifest can only ever reach its own blobs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, exists, func, insert, text
from sqlalchemy.dialects import sqlite
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col, select

from sandlot.store.tables import STORAGE_TAR, ContentBlob, Snapshot, SnapshotBlob
from sandlot.store.types import utcnow

__all__ = ["ContentRepository", "collectible", "delete_collectible", "keys_known", "snapshot_storage"]

_BATCH = 500  # parameters per statement stay far below every driver's limit
_BLOBS_PG = text(
    "INSERT INTO content_blobs (tenant_id, digest, size_bytes, blob_key, created_at) "
    "SELECT :t, d, s, k, CAST(:at AS timestamptz) "
    "FROM unnest(CAST(:d AS varchar[]), CAST(:s AS bigint[]), CAST(:k AS varchar[])) AS u(d, s, k) "
    "ON CONFLICT DO NOTHING RETURNING digest"
)
_REFS_PG = text(
    "INSERT INTO snapshot_blobs (snapshot_id, digest, tenant_id) "
    "SELECT :s, d, :t FROM unnest(CAST(:d AS varchar[])) AS d"
)


def _batches(values: Sequence[Any], size: int = _BATCH) -> Iterable[Sequence[Any]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


class ContentRepository:
    """The content blobs of tenant ``tenant_id``."""

    def __init__(self, session: AsyncSession, tenant_id: str) -> None:
        self.session = session
        self.tenant_id = tenant_id

    async def add_blobs(self, blobs: Sequence[tuple[str, int, str]]) -> set[str]:
        """Record blobs (hash, size, key); the hashes recorded by this call (a hash another
        snapshot recorded first keeps its row, and the caller removes its own copy)."""
        if not blobs:
            return set()
        if self.session.get_bind().dialect.name == "postgresql":  # one statement, three arrays
            digests, sizes, keys = (list(column) for column in zip(*blobs, strict=True))
            found = await self.session.execute(
                _BLOBS_PG, {"t": self.tenant_id, "d": digests, "s": sizes, "k": keys, "at": utcnow()}
            )
            return set(found.scalars())
        table: Any = ContentBlob.__table__  # type: ignore[attr-defined]
        added: set[str] = set()
        for batch in _batches(blobs):
            rows = [
                {
                    "tenant_id": self.tenant_id,
                    "digest": d,
                    "size_bytes": s,
                    "blob_key": k,
                    "created_at": utcnow(),
                }
                for d, s, k in batch
            ]
            statement = sqlite.insert(table).values(rows).on_conflict_do_nothing().returning(table.c.digest)
            added.update((await self.session.execute(statement)).scalars())
        return added

    async def add_refs(self, snapshot_id: str, digests: Iterable[str]) -> None:
        """The snapshot needs these blobs (an ``IntegrityError`` when one is gone). On
        PostgreSQL one statement whatever their number (the hashes as one array)."""
        wanted = sorted(set(digests))
        if not wanted:
            return
        if self.session.get_bind().dialect.name == "postgresql":
            await self.session.execute(_REFS_PG, {"s": snapshot_id, "t": self.tenant_id, "d": wanted})
            return
        rows = [{"snapshot_id": snapshot_id, "digest": d, "tenant_id": self.tenant_id} for d in wanted]
        for batch in _batches(rows):
            await self.session.execute(insert(SnapshotBlob), list(batch))

    async def keys(self, digests: Iterable[str]) -> dict[str, str]:
        """Hash -> blob key, for those of ``digests`` the tenant has."""
        wanted = sorted(set(digests))
        found: dict[str, str] = {}
        for batch in _batches(wanted):
            query = select(col(ContentBlob.digest), col(ContentBlob.blob_key)).where(
                col(ContentBlob.tenant_id) == self.tenant_id, col(ContentBlob.digest).in_(batch)
            )
            found.update({d: k for d, k in (await self.session.execute(query)).all()})
        return found

    async def drop_refs(self, snapshot_id: str) -> None:
        await self.session.execute(delete(SnapshotBlob).where(col(SnapshotBlob.snapshot_id) == snapshot_id))


async def snapshot_storage(session: AsyncSession, tenant_id: str) -> tuple[int, int]:
    """(bytes, blobs) the tenant's snapshots keep: each content once, plus the tar snapshots
    older versions made."""
    content = select(func.coalesce(func.sum(col(ContentBlob.size_bytes)), 0), func.count()).where(
        col(ContentBlob.tenant_id) == tenant_id
    )
    tars = select(func.coalesce(func.sum(col(Snapshot.size_bytes)), 0), func.count()).where(
        col(Snapshot.tenant_id) == tenant_id, col(Snapshot.storage) == STORAGE_TAR
    )
    content_bytes, blobs = (await session.execute(content)).one()
    tar_bytes, tar_count = (await session.execute(tars)).one()
    return int(content_bytes or 0) + int(tar_bytes or 0), int(blobs) + int(tar_count)


def _unreferenced() -> Any:
    return ~exists().where(
        col(SnapshotBlob.tenant_id) == col(ContentBlob.tenant_id),
        col(SnapshotBlob.digest) == col(ContentBlob.digest),
    )


async def collectible(session: AsyncSession, before: datetime, limit: int) -> list[tuple[str, str]]:
    """(tenant, hash) of blobs recorded before ``before`` that no snapshot refers to."""
    query = (
        select(col(ContentBlob.tenant_id), col(ContentBlob.digest))
        .where(col(ContentBlob.created_at) < before, _unreferenced())
        .order_by(col(ContentBlob.tenant_id), col(ContentBlob.digest))
        .limit(limit)
    )
    return [(t, d) for t, d in (await session.execute(query)).all()]


async def delete_collectible(
    session: AsyncSession, tenant_id: str, digests: Sequence[str], before: datetime
) -> list[str]:
    """Delete those of ``digests`` (of ``tenant_id``) still unreferenced and recorded before
    ``before``; their blob keys. A snapshot committing a reference at the same moment makes
    this fail (the foreign key) rather than lose its blob."""
    statement = (
        delete(ContentBlob)
        .where(
            col(ContentBlob.tenant_id) == tenant_id,
            col(ContentBlob.digest).in_(list(digests)),
            col(ContentBlob.created_at) < before,
            _unreferenced(),
        )
        .returning(col(ContentBlob.blob_key))
    )
    return list((await session.execute(statement)).scalars())


async def keys_known(session: AsyncSession, keys: Sequence[str]) -> set[str]:
    """Those of ``keys`` that a content blob row names."""
    found: set[str] = set()
    for batch in _batches(keys):
        query = select(col(ContentBlob.blob_key)).where(col(ContentBlob.blob_key).in_(batch))
        found.update((await session.execute(query)).scalars())
    return found
