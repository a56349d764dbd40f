"""Snapshots and checkpoints of a session's workspace.

A snapshot is the workspace as a tar (see :mod:`sandlot.runtime.archives`) in blob storage,
plus the session's shell state (its cwd and exported variables). A checkpoint is a snapshot
that also records its manifest and the diff against the session's previous snapshot (paths
added, modified, deleted). Restoring unpacks the tar into an empty workspace and puts the
shell state back, so the next command starts where the last one left off.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Sequence

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col, select

from sandlot.domain.errors import NotFound, SandboxStateError
from sandlot.domain.keys import Scope
from sandlot.observability.tracing import span
from sandlot.runtime.archives import Manifest, diff, manifest
from sandlot.runtime.base import ExecRequest, SandboxRuntime
from sandlot.runtime.bridge import consume, tee
from sandlot.runtime.shell import shell_state_dir
from sandlot.services.accounts import Principal
from sandlot.services.quotas import check_snapshots
from sandlot.services.transfers import Transfers, primed
from sandlot.settings import Settings
from sandlot.store.blobs import BlobStore
from sandlot.store.tables import Sandbox, Session, Snapshot

__all__ = ["SnapshotService", "shell_cwd"]

_CWD = re.compile(r"__SL_CWD='((?:[^']|'\"'\"')*)'")


def shell_cwd(state: str) -> str | None:
    """The cwd recorded in a shell state file (``export __SL_CWD='...'``), if any."""
    found = _CWD.search(state)
    return found.group(1).replace("'\"'\"'", "'") if found else None


async def _close(archive: AsyncIterator[bytes]) -> None:
    """Close an export whose blob failed (a full disk): it releases the engine's response (one
    left open keeps the container locked, and its next exec would hang). An error in closing
    is the first error's business, not this one's."""
    aclose = getattr(archive, "aclose", None)
    if aclose is not None:
        with contextlib.suppress(Exception):
            await aclose()


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

    def _shell_file(self, box: Sandbox, session_id: str) -> str:
        assert box.runtime_ref is not None
        return f"{shell_state_dir(self._runtime, box.runtime_ref, session_id)}/env"

    async def _read_shell_state(self, box: Sandbox, session_id: str) -> str:
        assert box.runtime_ref is not None
        path = self._shell_file(box, session_id)
        req = ExecRequest(["/bin/sh", "-c", 'cat "$1" 2>/dev/null || true', "sh", path], timeout=15)
        res = await self._runtime.exec(box.runtime_ref, req)
        return res.stdout.decode(errors="replace")

    async def _write_shell_state(self, box: Sandbox, session_id: str, state: str) -> None:
        assert box.runtime_ref is not None
        path = self._shell_file(box, session_id)
        script = 'mkdir -p "$(dirname "$1")" && cat > "$1"'
        req = ExecRequest(["/bin/sh", "-c", script, "sh", path], stdin=state.encode(), timeout=15)
        res = await self._runtime.exec(box.runtime_ref, req)
        if res.exit_code != 0:
            raise SandboxStateError(f"could not restore the shell state: {res.stderr[-300:]!r}")

    async def latest(self, session_id: str) -> Snapshot | None:
        async with self._sessions() as session:
            query = (
                select(Snapshot)
                .where(col(Snapshot.session_id) == session_id)
                .order_by(col(Snapshot.created_at).desc())
                .limit(1)
            )
            return (await session.scalars(query)).first()

    async def take(self, sess: Session, box: Sandbox, kind: str) -> Snapshot:
        """Snapshot the workspace and shell state of ``sess`` (on ``box``) into blob storage.
        The archive streams into the blob while its manifest is computed beside it."""
        assert box.runtime_ref is not None
        async with self._sessions() as session:
            await check_snapshots(session, sess.tenant_id)  # 429 once its storage quota is full
        with span("snapshot.take", tenant=sess.tenant_id, session=sess.id, sandbox=box.id):
            archive = await self.transfers.export(box)
            row = Snapshot(tenant_id=sess.tenant_id, session_id=sess.id, kind=kind, blob_key="")
            row.blob_key = f"snapshots/{sess.tenant_id}/{row.id}.tar"
            size, found = await self._store_with_manifest(row.blob_key, archive)
            shell_state = await self._read_shell_state(box, sess.id)
            previous = await self.latest(sess.id)
            row.parent_id = previous.id if previous else None
            row.size_bytes = size
            row.file_count = sum(1 for v in found.values() if v[0] != "dir")
            row.manifest = found
            row.diff = diff(previous.manifest if previous else None, found)
            row.shell_state = shell_state
            async with self._sessions.begin() as session:  # the blob first: a row never lacks it
                session.add(row)
                stored = await session.get(Session, sess.id, with_for_update=True)
                if stored is not None:
                    stored.state = {
                        **stored.state,
                        "snapshot_id": row.id,
                        "shell": {"cwd": shell_cwd(shell_state), "state": shell_state},
                    }
            return row

    async def _store_with_manifest(self, key: str, archive: AsyncIterator[bytes]) -> tuple[int, Manifest]:
        """Write ``archive`` to the blob ``key`` and compute its manifest from the same chunks."""
        try:
            return await tee(
                archive,
                lambda chunks: self._blobs.put(key, chunks),
                lambda chunks: consume(chunks, manifest),
            )
        except BaseException:
            await self._blobs.delete(key)
            await _close(archive)
            raise

    async def restore(self, snap: Snapshot, box: Sandbox, session_id: str) -> None:
        """Unpack ``snap`` into ``box``'s (empty) workspace; its shell state becomes the state
        of session ``session_id``."""
        assert box.runtime_ref is not None
        with span("snapshot.restore", session=session_id, sandbox=box.id):
            await self.transfers.restore(box, self._blobs.get(snap.blob_key))
            if snap.shell_state:
                await self._write_shell_state(box, session_id, snap.shell_state)

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

    # -- reads -------------------------------------------------------------------------------

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
        return await primed(self._blobs.get((await self.get(principal, snapshot_id)).blob_key))

    async def of_session(self, principal: Principal, session_id: str) -> Sequence[Snapshot]:
        principal.require(Scope.SANDBOXES_READ)
        async with self._sessions() as session:
            query = select(Snapshot).where(col(Snapshot.session_id) == session_id)
            if principal.visible_tenant is not None:
                query = query.where(col(Snapshot.tenant_id) == principal.visible_tenant)
            return (await session.scalars(query.order_by(col(Snapshot.created_at)))).all()
