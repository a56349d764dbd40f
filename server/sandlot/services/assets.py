"""Assets: a tenant's uploaded files and tar archives, placed into a session's workspace when
it starts, and ``{{asset:NAME}}`` placeholders that resolve to where they were placed.

A file asset becomes one file; an archive asset is unpacked into a directory (members that
would land outside it are refused). Placeholders are resolved in every string of an activity's
or a process's JSON arguments; naming an asset the session does not have is a 422.
"""

from __future__ import annotations

import hashlib
import io
import re
import tarfile
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col, select

from sandlot.domain.errors import Conflict, InvalidInput, NotFound
from sandlot.domain.keys import Scope
from sandlot.runtime.archives import add_owned, check_contained, members
from sandlot.services.accounts import Principal
from sandlot.store.blobs import BlobStore
from sandlot.store.tables import Asset

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


class AssetService:
    def __init__(self, sessions: async_sessionmaker[AsyncSession], blobs: BlobStore) -> None:
        self._sessions = sessions
        self._blobs = blobs

    async def upload(self, principal: Principal, name: str, data: bytes, *, archive: bool) -> Asset:
        principal.require(Scope.SANDBOXES_WRITE)
        if not NAME_RE.match(name):
            raise InvalidInput("asset names are 1-100 of [A-Za-z0-9_.-]", field="name")
        if archive:
            check_contained(data)
        row = Asset(
            tenant_id=principal.tenant_id,
            name=name,
            kind="archive" if archive else "file",
            blob_key="",
            size_bytes=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
        )
        row.blob_key = f"assets/{principal.tenant_id}/{row.id}"
        await self._blobs.put(row.blob_key, data)
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

    async def content(self, row: Asset) -> bytes:
        return await self._blobs.get(row.blob_key)

    async def bundle(
        self, principal: Principal, wanted: Sequence[tuple[str, str | None]]
    ) -> tuple[bytes, dict[str, str]]:
        """One workspace archive holding the requested assets, each at its path (default: its
        name; an archive becomes a directory), owned by the sandbox user; and name -> path
        relative to the workspace."""
        rows = [(await self.get(principal, name), path) for name, path in wanted]
        out = io.BytesIO()
        placed: dict[str, str] = {}
        with tarfile.open(fileobj=out, mode="w:") as tar:
            for row, path in rows:
                where = (path or row.name).strip("/")
                if not where or where.startswith("/") or ".." in where.split("/"):
                    raise InvalidInput(f"bad path for asset {row.name!r}", field="assets")
                placed[row.name] = where
                data = await self.content(row)
                if row.kind == "file":
                    add_owned(tar, tarfile.TarInfo(where), data)
                    continue
                for member, content in members(data):
                    member.name = f"{where}/{member.name.removeprefix('./')}".rstrip("/")
                    add_owned(tar, member, content)
        return out.getvalue(), placed
