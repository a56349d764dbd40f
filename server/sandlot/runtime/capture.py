"""Reading a workspace archive into a manifest and the file contents it brings (blocking: run
in a thread through :func:`bridge.consume`).

Each regular file is hashed (SHA-256) as it is read; a content the tenant's store is known to
have (``known``), or that an earlier member of the same archive brought, is not written
anywhere; any other is written to a staging file of the blob store, which the caller adopts
under its hash or removes. The archive is read through :func:`archive_bounds.open_bounded`
(headers bounded, no sparse members) and its content counted against ``limit`` while it is
read, like every archive that reaches the service.
"""

from __future__ import annotations

import contextlib
import hashlib
import lzma
import tarfile
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from sandlot.domain.errors import InvalidInput, PayloadTooLarge, SandlotError
from sandlot.runtime.archive_bounds import open_bounded
from sandlot.runtime.archives import HEADER_ALLOWANCE, clamp_mtime, clean_name
from sandlot.runtime.manifest import DIR, FILE, LINK, Item

__all__ = ["Captured", "Staged", "capture_archive"]

_SMALL = 1 << 20  # files up to this size are hashed in memory before anything is written
_READ = 1 << 20
_PENDING = 16  # small contents waiting for the staging thread


@dataclass(frozen=True, slots=True)
class Staged:
    """A content new to the store, in a staging file until it is adopted under its hash."""

    digest: str
    size: int
    path: Path


@dataclass
class Captured:
    """What :func:`capture_archive` read: the entries, and the contents it staged (filled as
    it goes, so a failure half-way still tells the caller what to remove)."""

    items: list[Item] = field(default_factory=list)
    staged: dict[str, Staged] = field(default_factory=dict)
    bytes: int = 0


class _Writes:
    """Staging files written by one thread of their own, while the archive goes on being read
    and hashed (at most :data:`_PENDING` small contents waiting, so memory stays bounded)."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="sandlot-stage")
        self._pending: deque[Future[None]] = deque()

    def write(self, path: Path, data: bytes) -> None:
        self._pending.append(self._pool.submit(path.write_bytes, data))  # type: ignore[arg-type]
        while len(self._pending) > _PENDING:
            self._pending.popleft().result()

    def finish(self) -> None:
        """Wait for every write; the first one's error is raised."""
        try:
            while self._pending:
                self._pending.popleft().result()
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)


class _Capture:
    """One archive being read: its limit, the contents known, where new ones are staged."""

    def __init__(self, captured: Captured, limit: int, known: set[str], stage: Callable[[], Path]) -> None:
        self.captured, self.limit, self.known, self.stage = captured, limit, known, stage
        self.writes = _Writes()
        self.files: dict[str, Item] = {}

    def count(self, n: int) -> None:
        self.captured.bytes += n
        if self.captured.bytes > self.limit:
            raise PayloadTooLarge(f"the workspace holds more than {self.limit} bytes", limit=self.limit)

    def new(self, digest: str) -> bool:
        return digest not in self.known and digest not in self.captured.staged

    def store(self, handle: IO[bytes], size: int) -> str:
        """Hash a member's ``size`` bytes; stage them unless their hash is known."""
        digest = hashlib.sha256()
        if size <= _SMALL:
            data = handle.read(size)
            self.count(len(data))
            digest.update(data)
            hexed = digest.hexdigest()
            if self.new(hexed):
                path = self.stage()
                self.captured.staged[hexed] = Staged(hexed, len(data), path)
                self.writes.write(path, data)
            return hexed
        path = self.stage()
        try:
            with open(path, "wb") as out:
                while chunk := handle.read(_READ):
                    self.count(len(chunk))
                    digest.update(chunk)
                    out.write(chunk)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        hexed = digest.hexdigest()
        if self.new(hexed):
            self.captured.staged[hexed] = Staged(hexed, size, path)
        else:
            path.unlink(missing_ok=True)
        return hexed

    def member(self, member: tarfile.TarInfo, tar: tarfile.TarFile) -> Item | None:
        name = clean_name(member.name)
        if name is None:
            return None
        mode, mtime = member.mode & 0o777, clamp_mtime(member.mtime)
        if member.isreg():
            handle = tar.extractfile(member)
            assert handle is not None
            item = self.files[name] = Item(
                name, FILE, mode, member.size, self.store(handle, member.size), mtime
            )
            return item
        if member.isdir():
            return Item(name, DIR, mode, 0, "", mtime)
        if member.issym():
            return Item(name, LINK, 0o777, 0, member.linkname, mtime)
        if member.islnk():  # a file's other name: the same content
            target = self.files.get(clean_name(member.linkname) or "")
            if target is None:
                raise InvalidInput(f"archive member {name[:200]!r}: a hard link to no earlier file")
            return Item(name, FILE, target.mode, target.size, target.ref, target.mtime)
        return None  # FIFOs, sockets, devices: not part of a snapshot


def capture_archive(
    reader: IO[bytes],
    captured: Captured,
    *,
    limit: int,
    known: set[str],
    stage: Callable[[], Path],
) -> None:
    """Read the workspace archive (or several concatenated) from ``reader`` into ``captured``:
    its items, and staging files (named by ``stage()``) for contents not in ``known``."""
    budget = limit + limit // 4 + HEADER_ALLOWANCE
    work = _Capture(captured, limit, known, stage)
    try:
        with contextlib.closing(open_bounded(reader, budget, ignore_zeros=True)) as tar:
            for member in tar:
                item = work.member(member, tar)
                if item is not None:
                    captured.items.append(item)
        work.writes.finish()
    except tarfile.TarError as exc:
        raise InvalidInput(f"not a valid workspace archive: {exc}", field="archive") from exc
    except (EOFError, OSError, lzma.LZMAError, ValueError, OverflowError) as exc:
        if isinstance(exc, BrokenPipeError | SandlotError) or (
            isinstance(exc, OSError) and exc.errno is not None
        ):
            raise  # a pipe given up, or the staging disk (its caller knows a full one)
        raise InvalidInput(f"not a valid workspace archive: {exc}", field="archive") from exc
    finally:
        with contextlib.suppress(Exception):
            work.writes.finish()  # nothing is left writing once this returns
