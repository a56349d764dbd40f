"""Listing a workspace cheaply: every entry's kind, mode, size, mtime and a key that changes
whenever its content may have, without reading any content.

The key is the entry's mode, inode, size, link count, mtime and ctime (to the nanosecond). The
ctime is the kernel's and no unprivileged process can set it, so an entry whose key is the same
as at the last snapshot of the same sandbox has not changed since, and its hash is reused;
only entries whose key changed are read. An entry changed just before its listing began may
change again within the same clock tick without its ctime moving: its key is only trusted when
its ctime lies at least :data:`SETTLE_NS` before a mark the listing makes first (``settled``),
otherwise it is read again next time (as git does with "racily clean" files).

In a sandbox the listing is a program of ours run as the sandbox user (:data:`LIST_WORKSPACE`):
the names come NUL-separated on stderr and one line of numbers per name on stdout, in the same
order, so no name (newlines, bytes that are not UTF-8) can break the parsing. Anything amiss (a
directory it may not read, an entry gone between the two, output cut short) makes the listing
``None``: the snapshot then reads the whole workspace through the engine instead. Then the
entries the snapshot wants to read are exported by name (:data:`EXPORT_NAMED`); in a process of
its own the one program does both (:data:`SCAN_WORKSPACE`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from sandlot.runtime.bridge import produce
from sandlot.runtime.local_tree import entries, export_tree
from sandlot.runtime.programs import program

__all__ = [
    "EXPORT_NAMED",
    "LIST_WORKSPACE",
    "SCAN_WORKSPACE",
    "SETTLE_NS",
    "Listed",
    "LocalScan",
    "list_tree",
    "parse_listing",
]

SETTLE_NS = 50_000_000  # well beyond a coarse clock tick (1-10 ms)

LIST_WORKSPACE = program("list_workspace.sh")

EXPORT_NAMED = program("export_named.sh")

SCAN_WORKSPACE = program("scan_workspace.sh")


@dataclass(frozen=True, slots=True)
class Listed:
    """One entry of a listing (``kind`` as in :mod:`sandlot.runtime.manifest`; FIFOs, sockets
    and devices are left out, as snapshots leave them out)."""

    name: str
    kind: str
    mode: int
    size: int
    mtime: int
    key: str
    settled: bool


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "link"
    return "other"


def _ns(seconds: bytes, human_time: bytes) -> int:
    """Nanoseconds from ``%Y`` seconds and the fraction of ``%y`` (``12:00:00.123456789``)."""
    _, _, fraction = human_time.partition(b".")
    digits = (fraction + b"000000000")[:9]
    return int(seconds) * 1_000_000_000 + (int(digits) if digits.isdigit() else 0)


def _key(mode: int, ino: int, size: int, links: int, mtime_ns: int, ctime_ns: int) -> str:
    return f"{mode:x} {ino} {size} {links} {mtime_ns} {ctime_ns}"


def parse_listing(stdout: bytes, stderr: bytes) -> list[Listed] | None:
    """The entries :data:`LIST_WORKSPACE` printed, or None when its output does not add up."""
    lines = stdout.split(b"\n")
    if not lines or lines[-1] != b"":
        return None
    head, rows = lines[0].split(), lines[1:-1]
    names = stderr.split(b"\0")
    if len(head) != 4 or names[-1] != b"" or len(names) - 1 != len(rows):
        return None
    try:
        mark = _ns(head[0], head[2])
        found = []
        for raw, row in zip(names, rows, strict=False):
            fields = row.split()
            if len(fields) != 12 or not raw.startswith(b"./"):
                return None
            mode = int(fields[0], 16)
            if _kind(mode) == "other":
                continue  # FIFOs, sockets, devices: never part of a snapshot
            mtime_ns, ctime_ns = _ns(fields[4], fields[6]), _ns(fields[8], fields[10])
            found.append(
                Listed(
                    name=raw[2:].decode("utf-8", "surrogateescape"),
                    kind=_kind(mode),
                    mode=stat.S_IMODE(mode),
                    size=int(fields[2]),
                    mtime=int(fields[4]),
                    key=_key(mode, int(fields[1]), int(fields[2]), int(fields[3]), mtime_ns, ctime_ns),
                    settled=ctime_ns <= mark - SETTLE_NS,
                )
            )
    except ValueError:
        return None
    return found


def list_tree(host: Path, mark_file: Path) -> list[Listed]:
    """The listing of a workspace on this host (the local runtime's), by descriptor (see
    :func:`local_tree.entries`); the mark is ``mark_file``, made first."""
    mark_file.unlink(missing_ok=True)
    mark_file.touch()
    mark = mark_file.stat().st_ctime_ns
    found = []
    for name, info, handle, _ in entries(host):
        if handle is not None:
            os.close(handle)
        key = _key(info.st_mode, info.st_ino, info.st_size, info.st_nlink, info.st_mtime_ns, info.st_ctime_ns)
        found.append(
            Listed(
                name=name,
                kind=_kind(info.st_mode),
                mode=stat.S_IMODE(info.st_mode),
                size=info.st_size,
                mtime=int(info.st_mtime),
                key=key,
                settled=info.st_ctime_ns <= mark - SETTLE_NS,
            )
        )
    return found


class LocalScan:
    """A scan of a workspace on this host (the local runtime's): its listing, and its entries
    exported by name, by descriptor."""

    def __init__(self, host: Path, listing: list[Listed]) -> None:
        self.host = host
        self.listing: list[Listed] | None = listing

    async def export(self, names: Sequence[str]) -> AsyncIterator[bytes]:
        only = frozenset(names)
        async for chunk in produce(lambda writer: export_tree(self.host, writer, only)):
            yield chunk
