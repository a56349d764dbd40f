"""Snapshots and checkpoints of a session's workspace.

A snapshot is a manifest of the workspace (every entry's name, kind, mode, mtime, a file's
size and SHA-256, a link's target: :mod:`sandlot.runtime.manifest`) whose file contents are
blobs of the tenant's content store, each stored once per tenant; plus the session's shell
state (its cwd and exported variables). Taking one reads only what changed since the
session's last snapshot on the same sandbox (:mod:`sandlot.services.capture`) and stores only
contents the tenant does not have yet; the manifest, the new blobs' rows and the references to
every blob it needs are committed together (:mod:`sandlot.services.snapshot_commit`). A
checkpoint is a snapshot whose diff against the session's previous one (paths added, modified,
deleted) is what the client asked for. Restoring streams a workspace archive rebuilt from the
manifest into an empty workspace and puts the shell state back. Snapshots made by older
versions (one tar blob each) still restore, download and diff.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Sequence
from typing import IO

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col, select

from sandlot.domain.errors import Conflict, NotFound, SandboxStateError, SandlotError
from sandlot.domain.keys import Scope
from sandlot.domain.status import SESSION_SUSPENDED
from sandlot.observability.tracing import span
from sandlot.runtime.archives import ArchiveReport
from sandlot.runtime.base import SandboxRuntime
from sandlot.runtime.bridge import BULK, produce
from sandlot.runtime.manifest import FILE, content_archive, decode
from sandlot.runtime.shell import shell_state_dir
from sandlot.services.accounts import Principal
from sandlot.services.capture import WorkspaceCapture
from sandlot.services.quotas import check_snapshots
from sandlot.services.snapshot_commit import SnapshotCommit
from sandlot.services.transfers import Transfers, primed
from sandlot.settings import Settings
from sandlot.store.blobs import BlobStore
from sandlot.store.repositories.content import ContentRepository
from sandlot.store.tables import STORAGE_TAR, Sandbox, Session, Snapshot

__all__ = ["SnapshotService", "shell_cwd"]

_CWD = re.compile(r"__SL_CWD='((?:[^']|'\"'\"')*)'")


def shell_cwd(state: str) -> str | None:
    """The cwd recorded in a shell state file (``export __SL_CWD='...'``), if any."""
    found = _CWD.search(state)
    return found.group(1).replace("'\"'\"'", "'") if found else None


class SnapshotService:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        blobs: BlobStore,
        runtime: SandboxRuntime,
        settings: Settings,
        transfers: Transfers,
    ) -> None:
        self._sessions = sessions
        self._blobs = blobs
        self._runtime = runtime
        self._settings = settings
        self.transfers = transfers
        self.capture = WorkspaceCapture(runtime, blobs, settings, transfers)
        self._commit = SnapshotCommit(sessions, blobs, self.capture)

    def _shell_file(self, box: Sandbox, session_id: str) -> str:
        assert box.runtime_ref is not None
        return f"{shell_state_dir(self._runtime, box.runtime_ref, session_id)}/env"

    async def _read_shell_state(self, box: Sandbox, session_id: str) -> str:
        assert box.runtime_ref is not None
        path = self._shell_file(box, session_id)
        script = 'cat "$1" 2>/dev/null || true'
        res = await self._runtime.run_program(
            box.runtime_ref, script, [path], timeout=15, output_limit=1 << 20
        )
        return res.stdout.decode(errors="replace")

    async def _write_shell_state(self, box: Sandbox, session_id: str, state: str) -> None:
        assert box.runtime_ref is not None
        path = self._shell_file(box, session_id)
        script = 'mkdir -p "$(dirname "$1")" && cat > "$1"'
        res = await self._runtime.run_program(
            box.runtime_ref, script, [path], stdin=state.encode(), timeout=15
        )
        if res.exit_code != 0:
            raise SandboxStateError(f"could not restore the shell state: {res.stderr[-300:]!r}")

    async def latest(self, session_id: str) -> Snapshot | None:
        async with self._sessions() as session:
            return await _latest(session, session_id)

    async def take(self, sess: Session, box: Sandbox, kind: str) -> Snapshot:
        """Snapshot the workspace and shell state of ``sess`` (on ``box``): read what changed,
        store what is new, commit the manifest with its references (see the module doc)."""
        assert box.runtime_ref is not None
        async with self._sessions() as session:
            await check_snapshots(session, sess.tenant_id)  # 429 once its storage quota is full
        with span("snapshot.take", tenant=sess.tenant_id, session=sess.id, sandbox=box.id) as sp:
            previous = await self.latest(sess.id)
            capture = asyncio.ensure_future(self.capture.take(box, previous))
            try:  # the shell state is read while the workspace is
                shell_state = await self._read_shell_state(box, sess.id)
            except BaseException:
                capture.cancel()
                with contextlib.suppress(BaseException):
                    await self.capture.discard((await capture).staged.values())
                raise
            taken = await capture
            sp.set_attribute("sandlot.entries_read", taken.read)
            sp.set_attribute("sandlot.through_engine", taken.through_engine)
            return await self._commit.store(
                sess, box, kind, previous, taken, shell_state, shell_cwd(shell_state)
            )

    async def restore(self, snap: Snapshot, box: Sandbox, session_id: str) -> None:
        """Unpack ``snap`` into ``box``'s (empty) workspace; its shell state becomes the state
        of session ``session_id``."""
        assert box.runtime_ref is not None
        with span("snapshot.restore", session=session_id, sandbox=box.id):
            if snap.storage == STORAGE_TAR:
                await self.transfers.restore(box, self._blobs.get(snap.blob_key))
            else:
                report = ArchiveReport()
                await self.transfers.unpack(box, await self._content(snap, report), report)
            if snap.shell_state:
                await self._write_shell_state(box, session_id, snap.shell_state)

    async def _content(self, snap: Snapshot, report: ArchiveReport) -> AsyncIterator[bytes]:
        """The workspace archive of a content snapshot, rebuilt from its manifest and the
        tenant's blobs (only the tenant's own: every lookup is by tenant and hash)."""
        items = decode(snap.manifest)
        wanted = {i.ref for i in items if i.kind == FILE}
        async with self._sessions() as session:
            keys = await ContentRepository(session, snap.tenant_id).keys(wanted)
        if len(keys) != len(wanted):
            raise SandlotError(f"snapshot {snap.id} lacks {len(wanted) - len(keys)} of its contents")
        limit, blobs = self._settings.max_snapshot_bytes, self._blobs

        def write(writer: IO[bytes]) -> None:
            opener = lambda digest: blobs.open_blocking(keys[digest])  # noqa: E731
            content_archive(items, opener, writer, limit=limit, report=report)

        return produce(write, piece=BULK)

    async def export_live(self, sess: Session, box: Sandbox) -> AsyncIterator[bytes]:
        """The workspace as it is now, as a workspace archive stream, without storing it."""
        with span("workspace.export", tenant=sess.tenant_id, session=sess.id, sandbox=box.id):
            return await self.transfers.export(box)

    async def import_upload(self, sess: Session, box: Sandbox, chunks: AsyncIterator[bytes]) -> int:
        """Unpack an uploaded tar (any compression) over the workspace: the files it holds are
        replaced, the others kept; every member comes to belong to the sandbox user. A member
        or link that would land outside the workspace (also through a link already there)
        refuses the whole archive (422). Returns the bytes of content unpacked."""
        with span("workspace.import", tenant=sess.tenant_id, session=sess.id, sandbox=box.id):
            report = await self.transfers.import_upload(box, chunks)
        return report.bytes

    # -- reads and deletion ------------------------------------------------------------------

    async def get(self, principal: Principal, snapshot_id: str) -> Snapshot:
        principal.require(Scope.SANDBOXES_READ)
        async with self._sessions() as session:
            row = await session.get(Snapshot, snapshot_id)
        if row is None or (
            principal.visible_tenant is not None and row.tenant_id != principal.visible_tenant
        ):
            raise NotFound(f"no snapshot {snapshot_id!r}", snapshot_id=snapshot_id)
        return row

    async def archive(self, principal: Principal, snapshot_id: str) -> AsyncIterator[bytes]:
        snap = await self.get(principal, snapshot_id)
        if snap.storage == STORAGE_TAR:
            return await primed(self._blobs.get(snap.blob_key))
        return await primed(await self._content(snap, ArchiveReport()))

    async def of_session(self, principal: Principal, session_id: str) -> Sequence[Snapshot]:
        principal.require(Scope.SANDBOXES_READ)
        async with self._sessions() as session:
            query = select(Snapshot).where(col(Snapshot.session_id) == session_id)
            if principal.visible_tenant is not None:
                query = query.where(col(Snapshot.tenant_id) == principal.visible_tenant)
            return (await session.scalars(query.order_by(col(Snapshot.created_at)))).all()

    async def delete(self, principal: Principal, snapshot_id: str) -> None:
        """Delete a snapshot. Its contents go once no other snapshot needs them (garbage
        collection, :mod:`sandlot.services.snapshot_gc`). The last snapshot of a suspended
        session is refused (409): resuming onto a new sandbox starts from it."""
        principal.require(Scope.SANDBOXES_WRITE)
        snap = await self.get(principal, snapshot_id)
        async with self._sessions.begin() as session:
            owner = await session.get(Session, snap.session_id, with_for_update=True)
            if owner is not None and owner.status == SESSION_SUSPENDED:
                last = await _latest(session, owner.id)  # in this transaction: one connection
                if last is not None and last.id == snap.id:
                    raise Conflict(
                        f"snapshot {snapshot_id} is what suspended session {owner.id} resumes from",
                        session_id=owner.id,
                    )
            await ContentRepository(session, snap.tenant_id).drop_refs(snap.id)
            row = await session.get(Snapshot, snap.id)
            if row is not None:
                await session.delete(row)
        if snap.storage == STORAGE_TAR and snap.blob_key:
            await self._blobs.delete(snap.blob_key)


async def _latest(session: AsyncSession, session_id: str) -> Snapshot | None:
    query = (
        select(Snapshot)
        .where(col(Snapshot.session_id) == session_id)
        .order_by(col(Snapshot.created_at).desc())
        .limit(1)
    )
    return (await session.scalars(query)).first()
