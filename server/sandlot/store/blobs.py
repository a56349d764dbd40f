"""Blob storage for snapshots and assets: a small interface and the filesystem store behind it.

Blobs move as streams of chunks, never whole in memory. An S3-compatible store implements the
same methods (keys are ``/``-separated, made only of ``[A-Za-z0-9_.-]`` segments by the
service, never by a client).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import re
import secrets
from collections.abc import AsyncIterable, AsyncIterator
from pathlib import Path
from typing import IO, Protocol

from sandlot.domain.errors import DiskFull, NotFound

__all__ = ["BlobStore", "FileBlobStore", "one_chunk"]

_KEY = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$")
_CHUNK = 1 << 16
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


class BlobStore(Protocol):
    async def put(self, key: str, chunks: AsyncIterable[bytes]) -> int:
        """Store the chunks under ``key`` atomically (readers see all of it or nothing); the
        number of bytes stored. If ``chunks`` fails, nothing is stored and the error goes on;
        a store with no room left raises ``DiskFull``, having stored nothing."""
        ...

    def get(self, key: str) -> AsyncIterator[bytes]:
        """The blob's bytes as chunks (``NotFound`` from the first one when there is none)."""
        ...

    async def delete(self, key: str) -> None: ...

    async def exists(self, key: str) -> bool: ...


async def one_chunk(data: bytes) -> AsyncIterator[bytes]:
    """``data`` as a stream (for small blobs that are already in memory)."""
    yield data


class FileBlobStore:
    """Blobs as files under ``root``, written to a temporary name, fsynced, then renamed. A
    full filesystem (or quota) is ``DiskFull`` (507), and the partial file is removed."""

    def __init__(self, root: Path) -> None:
        self._root = root.absolute()

    def _path(self, key: str) -> Path:
        if not _KEY.match(key) or ".." in key.split("/"):
            raise ValueError(f"bad blob key {key!r}")
        return self._root / key

    async def put(self, key: str, chunks: AsyncIterable[bytes]) -> int:
        path = self._path(key)
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")

        def open_tmp() -> IO[bytes]:
            path.parent.mkdir(parents=True, exist_ok=True)
            return open(tmp, "wb")

        try:
            handle = await asyncio.to_thread(open_tmp)
        except OSError as exc:
            if (full := _full(exc, key)) is not None:
                raise full from exc
            raise
        size = 0
        try:
            async for chunk in chunks:
                await asyncio.to_thread(handle.write, chunk)
                size += len(chunk)
            await asyncio.to_thread(_sync_and_close, handle)
            await asyncio.to_thread(os.replace, tmp, path)
        except BaseException as exc:
            with contextlib.suppress(OSError):  # closing flushes: on a full disk that fails too
                handle.close()
            with contextlib.suppress(OSError):
                tmp.unlink()
            if (full := _full(exc, key)) is not None:
                raise full from exc
            raise
        return size

    async def get(self, key: str) -> AsyncIterator[bytes]:
        path = self._path(key)
        try:
            handle = await asyncio.to_thread(open, path, "rb")
        except FileNotFoundError as exc:
            raise NotFound(f"no blob {key!r}") from exc
        try:
            while chunk := await asyncio.to_thread(handle.read, _CHUNK):
                yield chunk
        finally:
            handle.close()

    async def delete(self, key: str) -> None:
        await asyncio.to_thread(self._path(key).unlink, True)

    async def exists(self, key: str) -> bool:
        return await asyncio.to_thread(self._path(key).is_file)

    async def clean_partial(self) -> None:
        """Remove temporary files a crash left behind (at start-up)."""

        def clean() -> None:
            if not self._root.is_dir():
                return
            for tmp in self._root.rglob(".*.tmp"):
                with contextlib.suppress(OSError):
                    tmp.unlink()

        await asyncio.to_thread(clean)


def _full(exc: BaseException, key: str) -> DiskFull | None:
    """``DiskFull`` for an error that says the filesystem (or a quota) has no room left."""
    if isinstance(exc, OSError) and exc.errno in _FULL:
        return DiskFull("no space left in blob storage", kind=key.split("/")[0])
    return None


def _sync_and_close(handle: IO[bytes]) -> None:
    handle.flush()
    os.fsync(handle.fileno())
    handle.close()
