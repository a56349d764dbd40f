"""Assets: a tenant's uploaded files and tar archives, placed into a session's workspace when
it starts, and ``{{asset:NAME}}`` placeholders that resolve to where they were placed.

A file asset becomes one file; an archive asset is unpacked into a directory (members that
would land outside it are refused). Placeholders are resolved in every string of an activity's
or a process's JSON arguments; naming an asset the session does not have is a 422.
"""

from __future__ import annotations

import builtins
import hashlib
import re
from collections.abc import AsyncIterable, AsyncIterator, Mapping, Sequence
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col, select

from sandlot.domain.errors import Conflict, InvalidInput, NotFound
from sandlot.domain.keys import Scope
from sandlot.runtime.bridge import tee
from sandlot.services.accounts import Principal
from sandlot.services.transfers import Transfers
from sandlot.store.blobs import BlobStore
from sandlot.store.tables import Asset, Sandbox

__all__ = ["NAME_RE", "AssetService", "resolve_placeholders"]

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
_PLACEHOLDER = re.compile(r"\{\{asset:([^{}]*)\}\}")


def resolve_placeholders(value: Any, placed: Mapping[str, str]) -> Any:
    """``value`` with every ``{{asset:NAME}}`` in its strings replaced by NAME's path."""
    if isinstance(value, str):
        if "{{asset:" not in value:
            return value

        def path(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in placed:
                raise InvalidInput(f"this session has no asset {name!r}", field="asset")
            return placed[name]

        return _PLACEHOLDER.sub(path, value)
    if isinstance(value, dict):
        return {k: resolve_placeholders(v, placed) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_placeholders(v, placed) for v in value]
    return value


async def _hashed(chunks: AsyncIterable[bytes], digest: Any) -> AsyncIterator[bytes]:
    async for chunk in chunks:
        digest.update(chunk)
        yield chunk


class AssetService:
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], blobs: BlobStore, transfers: Transfers
    ) -> None:
        self._sessions = sessions
        self._blobs = blobs
        self._transfers = transfers

    async def upload(
        self, principal: Principal, name: str, chunks: AsyncIterable[bytes], *, archive: bool
    ) -> Asset:
        """Store an asset. An archive is checked as it arrives (as strictly as any upload into
        a workspace, bombs included) and kept as it came, compressed."""
        principal.require(Scope.SANDBOXES_WRITE)
        if not NAME_RE.match(name):
            raise InvalidInput("asset names are 1-100 of [A-Za-z0-9_.-]", field="name")
        row = Asset(
            tenant_id=principal.tenant_id, name=name, kind="archive" if archive else "file", blob_key=""
        )
        row.blob_key = f"assets/{principal.tenant_id}/{row.id}"
        digest = hashlib.sha256()
        try:
            if archive:  # kept as it came (compressed), checked on the way in and again when placed
                row.size_bytes, _ = await tee(
                    _hashed(chunks, digest),
                    lambda kept: self._blobs.put(row.blob_key, kept),
                    self._transfers.check_only,
                )
            else:
                row.size_bytes = await self._blobs.put(row.blob_key, _hashed(chunks, digest))
        except BaseException:
            await self._blobs.delete(row.blob_key)
            raise
        row.sha256 = digest.hexdigest()
        try:
            async with self._sessions.begin() as session:
                session.add(row)
        except IntegrityError as exc:
            await self._blobs.delete(row.blob_key)
            raise Conflict(f"an asset named {name!r} exists; delete it first", name=name) from exc
        return row

    async def get(self, principal: Principal, name: str) -> Asset:
        principal.require(Scope.SANDBOXES_READ)
        async with self._sessions() as session:
            query = select(Asset).where(col(Asset.tenant_id) == principal.tenant_id, col(Asset.name) == name)
            row = (await session.scalars(query)).first()
        if row is None:
            raise NotFound(f"no asset {name!r}", name=name)
        return row

    async def list(self, principal: Principal) -> Sequence[Asset]:
        principal.require(Scope.SANDBOXES_READ)
        async with self._sessions() as session:
            query = select(Asset).where(col(Asset.tenant_id) == principal.tenant_id).order_by(col(Asset.name))
            return (await session.scalars(query)).all()

    async def delete(self, principal: Principal, name: str) -> None:
        row = await self.get(principal, name)
        principal.require(Scope.SANDBOXES_WRITE)
        async with self._sessions.begin() as session:
            found = await session.get(Asset, row.id)
            if found is not None:
                await session.delete(found)
        await self._blobs.delete(row.blob_key)

    async def resolve(
        self, principal: Principal, wanted: Sequence[tuple[str, str | None]]
    ) -> builtins.list[tuple[Asset, str]]:
        """The requested assets and where each goes (relative to the workspace; default: its
        name), checked before any sandbox is taken."""
        out: list[tuple[Asset, str]] = []
        for name, path in wanted:
            row = await self.get(principal, name)
            where = (path or row.name).strip("/")
            if not where or "\x00" in where or any(p in ("", ".", "..") for p in where.split("/")):
                raise InvalidInput(f"bad path for asset {row.name!r}", field="assets")
            out.append((row, where))
        return out

    async def place(self, box: Sandbox, assets: Sequence[tuple[Asset, str]]) -> dict[str, str]:
        """Put each asset into ``box``'s workspace (a file as one file, an archive unpacked into
        a directory); name -> path relative to the workspace."""
        for row, where in assets:
            chunks = self._blobs.get(row.blob_key)
            if row.kind == "file":
                path = f"{box.workspace.rstrip('/')}/{where}"
                await self._transfers.write_file(box, path, chunks, row.size_bytes)
            else:
                await self._transfers.import_upload(box, chunks, prefix=where)
        return {row.name: where for row, where in assets}
