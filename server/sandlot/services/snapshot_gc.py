"""Garbage collection of snapshot contents: blobs no snapshot refers to any more (their
snapshots deleted) and files no blob row names (a snapshot that failed, or a process killed,
between writing a content and committing it).

A blob row goes only when it is older than the grace period and, at the moment of its
deletion, no reference names it; a snapshot committing a reference to it at that same moment
either makes the deletion fail (the foreign key, checked when the delete ends) or fails its own
commit and stores the content again (:mod:`sandlot.services.snapshot_commit`). Its file is
removed only after the row's deletion is committed, and no other row ever names that file
(each copy has a key of its own). A file without a row goes once it is older than the grace
period and :data:`FILE_GRACE_FLOOR`, which a snapshot's adopt-to-commit step never takes.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sandlot.store.blobs import BlobStore
from sandlot.store.repositories.content import collectible, delete_collectible, keys_known
from sandlot.store.types import utcnow

__all__ = ["FILE_GRACE_FLOOR", "Collected", "SnapshotCollector"]

log = logging.getLogger(__name__)

FILE_GRACE_FLOOR = 3600.0  # seconds: a file adopted this recently may be a commit in progress
_BATCH = 200


@dataclass(frozen=True, slots=True)
class Collected:
    blobs: int = 0
    files: int = 0


class SnapshotCollector:
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], blobs: BlobStore, *, grace_seconds: float
    ) -> None:
        self._sessions = sessions
        self._blobs = blobs
        self.grace_seconds = grace_seconds

    async def collect(self) -> Collected:
        """One round: unreferenced blobs, then files without rows. A tenant whose deletion
        fails is logged and left for the next round; the others go on."""
        blobs = await self._unreferenced()
        files = await self._sweep()
        if blobs or files:
            log.info("snapshot contents collected: %d blobs, %d stray files", blobs, files)
        return Collected(blobs, files)

    async def _unreferenced(self) -> int:
        before = utcnow() - timedelta(seconds=self.grace_seconds)
        done = 0
        async with self._sessions() as session:
            found = await collectible(session, before, 10_000)
        by_tenant: dict[str, list[str]] = defaultdict(list)
        for tenant_id, digest in found:
            by_tenant[tenant_id].append(digest)
        for tenant_id, digests in by_tenant.items():
            try:
                for start in range(0, len(digests), _BATCH):
                    done += await self._delete(tenant_id, digests[start : start + _BATCH], before)
            except Exception:
                log.exception("could not collect the snapshot contents of tenant %s", tenant_id)
        return done

    async def _delete(self, tenant_id: str, digests: list[str], before: object) -> int:
        """Delete a batch; when a snapshot took a reference meanwhile (the foreign key fails
        the statement), one by one, keeping those now referred to."""
        try:
            keys = await self._delete_rows(tenant_id, digests, before)
        except IntegrityError:
            keys = []
            for digest in digests:
                try:
                    keys += await self._delete_rows(tenant_id, [digest], before)
                except IntegrityError:
                    continue  # referred to again: it stays
        for key in keys:  # the rows are gone (committed): nothing can name these files now
            await self._blobs.delete(key)
        return len(keys)

    async def _delete_rows(self, tenant_id: str, digests: list[str], before: object) -> list[str]:
        async with self._sessions.begin() as session:
            return await delete_collectible(session, tenant_id, digests, before)  # type: ignore[arg-type]

    async def _sweep(self) -> int:
        age = max(self.grace_seconds, FILE_GRACE_FLOOR)
        found = await self._blobs.keys("cas", older_than=age)
        if not found:
            return 0
        async with self._sessions() as session:
            named = await keys_known(session, found)
        stray = [key for key in found if key not in named]
        for key in stray:
            await self._blobs.delete(key)
        return len(stray)
