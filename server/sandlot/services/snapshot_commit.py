"""Committing a snapshot taken into the tenant's content store.

The contents new to the store are adopted under keys of their own
(``cas/<tenant>/<ab>/<sha256>.<random>``: two snapshots storing the same new content at once
never write the same file) and made durable, then one transaction records their rows (a hash
another snapshot recorded first keeps that row: the copy made here is removed), the snapshot
row, a reference to every blob the manifest needs, and the session's state. The references'
foreign key to the blob rows is what keeps garbage collection safe: when a collection deleted
a blob this snapshot counted on (it was unreferenced a moment before), the commit fails, the
workspace is taken again relying only on blobs that are there, and the commit is retried.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterable

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sandlot.domain.errors import Conflict, QuotaExceeded
from sandlot.runtime.archives import diff
from sandlot.runtime.manifest import DIR, FILE, decode, display, encode
from sandlot.services.capture import Taken, WorkspaceCapture
from sandlot.services.quotas import reserve_snapshot
from sandlot.store.blobs import BlobStore
from sandlot.store.repositories.content import ContentRepository
from sandlot.store.tables import STORAGE_CONTENT, STORAGE_TAR, Sandbox, Session, Snapshot

__all__ = ["SnapshotCommit"]

log = logging.getLogger(__name__)

_ATTEMPTS = 5


def _blob_key(tenant_id: str, digest: str) -> str:
    return f"cas/{tenant_id}/{digest[:2]}/{digest}.{secrets.token_hex(4)}"


def _needed(taken: Taken) -> set[str]:
    return {i.ref for i in taken.items if i.kind == FILE}


class SnapshotCommit:
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], blobs: BlobStore, capture: WorkspaceCapture
    ) -> None:
        self._sessions = sessions
        self._blobs = blobs
        self._capture = capture

    async def store(
        self,
        sess: Session,
        box: Sandbox,
        kind: str,
        previous: Snapshot | None,
        taken: Taken,
        shell_state: str,
        cwd: str | None,
    ) -> Snapshot:
        """Adopt ``taken``'s new contents and commit the snapshot (see the module doc). The
        copies made here that no row names are removed, unless the outcome of a commit is
        unknown (the database went away during it): then the collection's sweep of files
        without rows removes them later, if they are not used after all."""
        owned: dict[str, tuple[int, str]] = {}  # hash -> (size, key) of the copies made here
        inserted: set[str] = set()
        unsure = False
        try:
            for attempt in range(_ATTEMPTS):
                await self._adopt(sess.tenant_id, taken, owned)
                row = self._row(sess, box, kind, previous, taken, shell_state)
                unsure = True
                try:
                    inserted = await self._commit(row, sess, taken, owned, cwd)
                except QuotaExceeded:
                    unsure = False  # refused before anything was written: the copies go
                    raise
                except IntegrityError:
                    unsure = False
                    if attempt + 1 == _ATTEMPTS:
                        raise Conflict("the snapshot's contents kept being collected; try again") from None
                else:
                    unsure = False
                    return row
                log.info("a content snapshot %s relied on was collected: taking the workspace again", row.id)
                usable = await self._present(sess.tenant_id, _needed(taken)) | set(owned)
                taken = await self._capture.take(box, previous, usable.__contains__)
            raise AssertionError("unreachable")
        finally:
            await self._capture.discard(taken.staged.values())
            if not unsure:
                await self._drop([key for digest, (_, key) in owned.items() if digest not in inserted])

    async def _adopt(self, tenant_id: str, taken: Taken, owned: dict[str, tuple[int, str]]) -> None:
        moves = []
        for digest, staged in taken.staged.items():
            if digest in owned:
                continue
            key = _blob_key(tenant_id, digest)
            moves.append((staged.path, key))
            owned[digest] = (staged.size, key)
        if moves:
            taken.staged = {}
            await self._blobs.adopt(moves)
            await self._blobs.sync([key for _, key in moves])  # durable before any row names them

    @staticmethod
    def _row(
        sess: Session, box: Sandbox, kind: str, previous: Snapshot | None, taken: Taken, shell_state: str
    ) -> Snapshot:
        before = None
        if previous is not None:
            stored = previous.manifest
            before = stored if previous.storage == STORAGE_TAR else display(decode(stored))
        return Snapshot(
            tenant_id=sess.tenant_id,
            session_id=sess.id,
            parent_id=previous.id if previous else None,
            kind=kind,
            storage=STORAGE_CONTENT,
            size_bytes=taken.size,
            file_count=sum(1 for i in taken.items if i.kind != DIR),
            manifest=encode(taken.items, sandbox=box.id),
            diff=diff(before, display(taken.items)),
            shell_state=shell_state,
        )

    async def _commit(
        self, row: Snapshot, sess: Session, taken: Taken, owned: dict[str, tuple[int, str]], cwd: str | None
    ) -> set[str]:
        """One transaction: the new blobs' rows, the snapshot, its references, the session's
        state. The hashes whose rows it added."""
        needed = _needed(taken)
        async with self._sessions.begin() as session:
            repo = ContentRepository(session, sess.tenant_id)
            mine = [(d, size, key) for d, (size, key) in owned.items() if d in needed]
            held = set(await repo.keys(d for d, _, _ in mine))
            await reserve_snapshot(session, sess.tenant_id, sum(size for d, size, _ in mine if d not in held))
            inserted = await repo.add_blobs(mine)
            session.add(row)
            await session.flush()
            await repo.add_refs(row.id, needed)
            stored = await session.get(Session, sess.id, with_for_update=True)
            if stored is not None:
                stored.state = {
                    **stored.state,
                    "snapshot_id": row.id,
                    "shell": {"cwd": cwd, "state": row.shell_state},
                }
        return inserted

    async def _present(self, tenant_id: str, digests: Iterable[str]) -> set[str]:
        async with self._sessions() as session:
            return set(await ContentRepository(session, tenant_id).keys(digests))

    async def _drop(self, keys: list[str]) -> None:
        for key in keys:
            await self._blobs.delete(key)
