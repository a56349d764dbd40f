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
from collections.abc import Callable
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


class _Reader:
    def __init__(self, limit: int, captured: Captured) -> None:
        self.limit = limit
        self.captured = captured

    def count(self, n: int) -> None:
        self.captured.bytes += n
        if self.captured.bytes > self.limit:
            raise PayloadTooLarge(f"the workspace holds more than {self.limit} bytes", limit=self.limit)


def _store(
    handle: IO[bytes],
    size: int,
    reader: _Reader,
    known: set[str],
    stage: Callable[[], Path],
) -> str:
    """Hash a member's ``size`` bytes from ``handle``; stage them unless their hash is known."""
    captured = reader.captured
    digest = hashlib.sha256()
    if size <= _SMALL:
        data = handle.read(size)
        reader.count(len(data))
        digest.update(data)
        hexed = digest.hexdigest()
        if hexed not in known and hexed not in captured.staged:
            path = stage()
            with open(path, "wb") as out:
                out.write(data)
            captured.staged[hexed] = Staged(hexed, len(data), path)
        return hexed
    path = stage()
    try:
        with open(path, "wb") as out:
            while chunk := handle.read(_READ):
                reader.count(len(chunk))
                digest.update(chunk)
                out.write(chunk)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    hexed = digest.hexdigest()
    if hexed in known or hexed in captured.staged:
        path.unlink(missing_ok=True)
    else:
        captured.staged[hexed] = Staged(hexed, size, path)
    return hexed


def _member(
    member: tarfile.TarInfo,
    tar: tarfile.TarFile,
    reader: _Reader,
    known: set[str],
    stage: Callable[[], Path],
    files: dict[str, Item],
) -> Item | None:
    name = clean_name(member.name)
    if name is None:
        return None
    mode, mtime = member.mode & 0o777, clamp_mtime(member.mtime)
    if member.isreg():
        handle = tar.extractfile(member)
        assert handle is not None
        digest = _store(handle, member.size, reader, known, stage)
        item = files[name] = Item(name, FILE, mode, member.size, digest, mtime)
        return item
    if member.isdir():
        return Item(name, DIR, mode, 0, "", mtime)
    if member.issym():
        return Item(name, LINK, 0o777, 0, member.linkname, mtime)
    if member.islnk():  # a file's other name: the same content
        target = files.get(clean_name(member.linkname) or "")
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
    counted = _Reader(limit, captured)
    files: dict[str, Item] = {}
    try:
        with contextlib.closing(open_bounded(reader, budget, ignore_zeros=True)) as tar:
            for member in tar:
                item = _member(member, tar, counted, known, stage, files)
                if item is not None:
                    captured.items.append(item)
    except tarfile.TarError as exc:
        raise InvalidInput(f"not a valid workspace archive: {exc}", field="archive") from exc
    except (EOFError, OSError, lzma.LZMAError, ValueError, OverflowError) as exc:
        if isinstance(exc, BrokenPipeError | SandlotError) or (
            isinstance(exc, OSError) and exc.errno is not None
        ):
            raise  # a pipe given up, or the staging disk (its caller knows a full one)
        raise InvalidInput(f"not a valid workspace archive: {exc}", field="archive") from exc
