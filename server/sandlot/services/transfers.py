"""Bytes into and out of sandboxes: files, workspace archives, snapshots' contents.

Everything moves as a stream with its limit applied while it flows. An archive from a client
(an upload, an asset) is checked and spooled to disk first (:func:`archives.check_archive`
writes its clean, uncompressed form there), so a refusal anywhere in it refuses all of it and
nothing is unpacked; then the runtime refuses it again if a link already in the workspace would
lead a member outside, and unpacks it as the sandbox user. A snapshot being restored is the
sandbox's own workspace going back into an empty one: it is checked on the fly, not spooled.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import secrets
import shutil
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

from sandlot.domain.errors import InvalidInput
from sandlot.runtime.archives import ArchiveReport, check_archive
from sandlot.runtime.base import FileStream, SandboxRuntime
from sandlot.runtime.bridge import CHUNK, consume, transform
from sandlot.settings import Settings
from sandlot.store.tables import Sandbox

__all__ = ["Checked", "Transfers", "primed"]


@dataclass(frozen=True, slots=True)
class Checked:
    """A checked archive spooled on this host's disk, and what the check saw."""

    path: Path
    report: ArchiveReport


async def primed(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """``chunks`` with its first chunk already fetched, so that an error it raises up front
    (a size over the limit, a missing blob) is raised here, before an HTTP response starts."""
    try:
        first = await anext(chunks)
    except StopAsyncIteration:
        first = b""

    async def rest() -> AsyncIterator[bytes]:
        if first:
            yield first
        async for chunk in chunks:
            yield chunk

    return rest()


async def read_spool(path: Path) -> AsyncIterator[bytes]:
    handle = await asyncio.to_thread(open, path, "rb")
    try:
        while chunk := await asyncio.to_thread(handle.read, CHUNK):
            yield chunk
    finally:
        handle.close()


class Transfers:
    def __init__(self, runtime: SandboxRuntime, settings: Settings) -> None:
        self._runtime = runtime
        self._settings = settings
        self._spool_dir = settings.data_dir / "tmp"

    async def clean_spool(self) -> None:
        """Remove spool files a crash left behind (at start-up)."""
        await asyncio.to_thread(shutil.rmtree, self._spool_dir, True)

    @contextlib.asynccontextmanager
    async def spool_file(self) -> AsyncIterator[Path]:
        """A temporary file on this host's disk, removed when the block ends."""
        await asyncio.to_thread(self._spool_dir.mkdir, parents=True, exist_ok=True)
        path = self._spool_dir / f"spool-{secrets.token_hex(8)}"
        try:
            yield path
        finally:
            await asyncio.to_thread(path.unlink, True)

    # -- files -------------------------------------------------------------------------------

    async def write_file(
        self, box: Sandbox, path: str, chunks: AsyncIterable[bytes], size: int | None
    ) -> int:
        """Write a file of ``size`` bytes (None: not announced; the body is spooled first to
        learn it, bounded by the file limit); returns its size."""
        assert box.runtime_ref is not None
        if size is not None:
            await self._runtime.write_file(box.runtime_ref, path, box.workspace, chunks, size)
            return size
        async with self.spool_file() as spool:

            def save(reader: IO[bytes]) -> int:
                with open(spool, "wb") as out:
                    shutil.copyfileobj(reader, out, CHUNK)
                    return out.tell()

            length = await consume(chunks, save)
            await self._runtime.write_file(box.runtime_ref, path, box.workspace, read_spool(spool), length)
        return length

    async def read_file(self, box: Sandbox, path: str) -> FileStream:
        assert box.runtime_ref is not None
        return await self._runtime.read_file(
            box.runtime_ref, path, box.workspace, self._settings.max_file_bytes
        )

    # -- archives ----------------------------------------------------------------------------

    async def check(self, chunks: AsyncIterable[bytes], spool: Path, *, prefix: str = "") -> ArchiveReport:
        """Check an uploaded archive (any compression) into ``spool``; 422/413 on a refusal."""
        report = ArchiveReport()
        limit = self._settings.max_snapshot_bytes

        def work(reader: IO[bytes]) -> None:
            with open(spool, "wb") as out:
                check_archive(reader, out, limit=limit, strict=True, report=report, prefix=prefix)
                # what follows the tar's end is read within the same budget (a compressed
                # stream cut or corrupt there is refused): a bomb cannot hide there

        await consume(chunks, work)
        return report

    async def check_only(self, chunks: AsyncIterable[bytes]) -> ArchiveReport:
        """Check an archive without keeping its checked form anywhere."""
        report = ArchiveReport()
        limit = self._settings.max_snapshot_bytes

        def work(reader: IO[bytes]) -> None:
            check_archive(reader, cast(IO[bytes], _Discard()), limit=limit, strict=True, report=report)

        await consume(chunks, work)
        return report

    async def import_upload(
        self, box: Sandbox, chunks: AsyncIterable[bytes], *, prefix: str = ""
    ) -> ArchiveReport:
        """Unpack a client's archive over ``box``'s workspace (under ``prefix``)."""
        assert box.runtime_ref is not None
        if prefix and (prefix.startswith("/") or ".." in prefix.split("/") or "\x00" in prefix):
            raise InvalidInput(f"bad place for an archive: {prefix!r}", field="path")
        async with self.spool_file() as spool:
            report = await self.check(chunks, spool, prefix=prefix)
            await self._runtime.import_workspace(
                box.runtime_ref, box.workspace, read_spool(spool), report, check_links=True
            )
        return report

    async def restore(self, box: Sandbox, chunks: AsyncIterable[bytes]) -> ArchiveReport:
        """Unpack a tar snapshot (made by older versions) into ``box``'s empty workspace."""
        assert box.runtime_ref is not None
        report = ArchiveReport()
        limit = self._settings.max_snapshot_bytes

        def work(reader: IO[bytes], writer: IO[bytes]) -> None:
            check_archive(reader, writer, limit=limit, strict=False, report=report)

        await self._runtime.import_workspace(
            box.runtime_ref, box.workspace, transform(chunks, work), report, check_links=False
        )
        return report

    async def unpack(self, box: Sandbox, archive: AsyncIterable[bytes], report: ArchiveReport) -> None:
        """Unpack an archive the service built and checks as it is made (a content snapshot
        rebuilt from its manifest, see :func:`manifest.content_archive`, which fills
        ``report``) into ``box``'s empty workspace."""
        assert box.runtime_ref is not None
        await self._runtime.import_workspace(
            box.runtime_ref, box.workspace, archive, report, check_links=False
        )

    async def export(self, box: Sandbox) -> AsyncIterator[bytes]:
        """The live workspace as a workspace archive stream (413 up front when it is known
        to be over the snapshot limit)."""
        assert box.runtime_ref is not None
        stream = self._runtime.export_workspace(
            box.runtime_ref, box.workspace, self._settings.max_snapshot_bytes
        )
        return await primed(stream)


class _Discard(io.RawIOBase):
    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        return len(b)
