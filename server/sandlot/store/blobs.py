"""Blob storage for snapshots: a small interface and the filesystem store behind it.

An S3-compatible store implements the same four methods (keys are ``/``-separated, made only of
``[A-Za-z0-9_.-]`` segments by the service, never by a client).
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import Protocol

from sandlot.domain.errors import NotFound

__all__ = ["BlobStore", "FileBlobStore"]

_KEY = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$")


class BlobStore(Protocol):
    async def put(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key`` atomically (readers see all of it or nothing)."""
        ...

    async def get(self, key: str) -> bytes: ...

    async def delete(self, key: str) -> None: ...

    async def exists(self, key: str) -> bool: ...


class FileBlobStore:
    """Blobs as files under ``root``, written to a temporary name, fsynced, then renamed."""

    def __init__(self, root: Path) -> None:
        self._root = root

    def _path(self, key: str) -> Path:
        if not _KEY.match(key) or ".." in key.split("/"):
            raise ValueError(f"bad blob key {key!r}")
        return self._root / key

    async def put(self, key: str, data: bytes) -> None:
        path = self._path(key)

        def write() -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)

        await asyncio.to_thread(write)

    async def get(self, key: str) -> bytes:
        path = self._path(key)
        try:
            return await asyncio.to_thread(path.read_bytes)
        except FileNotFoundError as exc:
            raise NotFound(f"no blob {key!r}") from exc

    async def delete(self, key: str) -> None:
        await asyncio.to_thread(self._path(key).unlink, True)

    async def exists(self, key: str) -> bool:
        return await asyncio.to_thread(self._path(key).is_file)
