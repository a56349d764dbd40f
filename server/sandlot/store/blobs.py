"""Blob storage for snapshots and assets: a small interface and the filesystem store behind it.

Blobs move as streams of chunks, never whole in memory. An S3-compatible store implements the
same methods (keys are ``/``-separated, made only of ``[A-Za-z0-9_.-]`` segments by the
service, never by a client). Content-addressed snapshots receive many files at once: they are
written to staging files (local files the store names), adopted under their keys in one go,
and made durable together by :meth:`BlobStore.sync` before any row names them.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import os
import re
import secrets
import time
from collections.abc import AsyncIterable, AsyncIterator, Sequence
from pathlib import Path
from typing import IO, Protocol

from sandlot.domain.errors import DiskFull, NotFound

__all__ = ["BlobStore", "FileBlobStore", "full_error"]

_KEY = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$")
_CHUNK = 1 << 16
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
_FEW = 32  # blobs made durable one by one; more at once: the whole filesystem


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

    def staging_file(self) -> Path:
        """A new local file name to write a blob-to-be into (callable from any thread)."""
        ...

    async def adopt(self, moves: Sequence[tuple[Path, str]]) -> None:
        """Store each staging file under its key (the staging file is gone afterwards). Not
        durable until :meth:`sync`."""
        ...

    async def discard(self, paths: Sequence[Path]) -> None:
        """Remove staging files that will not be adopted (missing ones are no error)."""
        ...

    async def sync(self, keys: Sequence[str]) -> None:
        """Make the blobs at ``keys`` (just adopted) durable: a crash after this keeps them."""
        ...

    def open_blocking(self, key: str) -> IO[bytes]:
        """The blob's bytes as a blocking file object, for a worker thread (``NotFound`` when
        there is none)."""
        ...

    async def keys(self, prefix: str, older_than: float) -> list[str]:
        """The keys under ``prefix`` stored more than ``older_than`` seconds ago."""
        ...


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

    def staging_file(self) -> Path:
        staging = self._root / "staging"
        staging.mkdir(parents=True, exist_ok=True)
        return staging / f".{secrets.token_hex(8)}.tmp"  # a partial blob's name (clean_partial)

    async def adopt(self, moves: Sequence[tuple[Path, str]]) -> None:
        targets = [(src, self._path(key)) for src, key in moves]

        def move() -> None:
            made: set[Path] = set()
            for src, dst in targets:
                if dst.parent not in made:
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    made.add(dst.parent)
                os.replace(src, dst)
                os.utime(dst)  # its age (for the sweep of files without rows) starts here

        await asyncio.to_thread(move)

    async def discard(self, paths: Sequence[Path]) -> None:
        def remove() -> None:
            for path in paths:
                with contextlib.suppress(OSError):
                    path.unlink()

        if paths:
            await asyncio.to_thread(remove)

    async def sync(self, keys: Sequence[str]) -> None:
        """A few blobs: ``fsync`` each, and their directories. Many: one ``syncfs`` of the
        store's filesystem (an ``fsync`` each costs a journal commit each: seconds for a
        thousand small files)."""
        paths = [self._path(key) for key in keys]

        def flush() -> None:
            if len(paths) > _FEW:
                _syncfs(self._root)
                return
            for path in [*paths, *{p.parent for p in paths}]:
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)

        if paths:
            await asyncio.to_thread(flush)

    def open_blocking(self, key: str) -> IO[bytes]:
        try:
            return open(self._path(key), "rb")
        except FileNotFoundError as exc:
            raise NotFound(f"no blob {key!r}") from exc

    async def keys(self, prefix: str, older_than: float) -> list[str]:
        base = self._path(prefix)

        def walk() -> list[str]:
            cutoff = time.time() - older_than
            found: list[str] = []
            if not base.is_dir():
                return found
            for path in base.rglob("*"):
                with contextlib.suppress(OSError):
                    if not path.name.startswith(".") and path.is_file() and path.stat().st_mtime < cutoff:
                        found.append(path.relative_to(self._root).as_posix())
            return found

        return await asyncio.to_thread(walk)

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


def full_error(exc: BaseException, kind: str) -> DiskFull | None:
    """``DiskFull`` (507) when ``exc`` says blob storage has no room left, else None."""
    return _full(exc, kind)


def _syncfs(root: Path) -> None:
    fd = os.open(root if root.is_dir() else root.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if getattr(libc, "syncfs", None) is None or libc.syncfs(fd) != 0:
            os.sync()  # no syncfs here (not Linux): every filesystem, the store's among them
    finally:
        os.close(fd)


def _sync_and_close(handle: IO[bytes]) -> None:
    handle.flush()
    os.fsync(handle.fileno())
    handle.close()
