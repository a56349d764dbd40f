"""Content-addressed snapshots: the manifest of a workspace, and the archive rebuilt from it.

A manifest lists every entry of a workspace (directories, regular files, symbolic links) with
its mode and mtime, a file's size and the SHA-256 of its content, a link's target. The file
contents are blobs of the tenant's own store, one per distinct content; restoring streams a
workspace archive made from the manifest and those blobs, checked as it is made exactly as
:func:`archives.check_archive` checks a restore (clean names, nothing under a link of the
archive, the content limit, directories unpacked writable and restricted afterwards).

Names are bytes a tenant chose: here they are ``str`` with the bytes that are not UTF-8 as
surrogate escapes (as :mod:`tarfile` reads them), and in the stored JSON either plain text or,
when not UTF-8, ``{"b": <base64 of the bytes>}``, so every name survives exactly.

An entry may carry the ``key`` its listing had (:mod:`sandlot.runtime.listing`): the next
snapshot of the same sandbox reuses the entry's hash when the entry's key is unchanged.
"""

from __future__ import annotations

import base64
import tarfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import IO, Any

from sandlot.domain.errors import InvalidInput, PathOutsideWorkspace, PayloadTooLarge, SandlotError
from sandlot.runtime.archives import (
    MAX_MEMBERS,
    SANDBOX_UID,
    ArchiveReport,
    LinkTree,
    Manifest,
    clean_name,
    note_parent,
)

__all__ = [
    "DIR",
    "FILE",
    "LINK",
    "Item",
    "content_archive",
    "decode",
    "display",
    "encode",
    "ordered",
    "stat_cache",
]

FILE = "file"
DIR = "dir"
LINK = "link"
_BLOCK = 512
_READ = 1 << 20
VERSION = 2


@dataclass(slots=True)
class Item:
    """One entry of a workspace. ``ref`` is a file's SHA-256 (hex), a link's target, or empty
    for a directory; ``key`` the listing's key for it when that can be trusted next time."""

    name: str
    kind: str
    mode: int
    size: int
    ref: str
    mtime: int
    key: str | None = None


def _text(value: str) -> Any:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return {"b": base64.b64encode(value.encode("utf-8", "surrogateescape")).decode()}
    return value


def _untext(value: Any) -> str:
    if isinstance(value, str):
        return value
    return base64.b64decode(value["b"]).decode("utf-8", "surrogateescape")


def encode(items: Iterable[Item], *, sandbox: str | None) -> dict[str, Any]:
    """The JSON form of a manifest; ``sandbox``: the sandbox whose listing the keys are of."""
    rows = [[_text(i.name), i.kind, i.mode, i.size, _text(i.ref), i.mtime, i.key] for i in items]
    return {"v": VERSION, "sandbox": sandbox, "items": rows}


def decode(stored: dict[str, Any]) -> list[Item]:
    """The items of a manifest stored by :func:`encode`."""
    return [
        Item(_untext(n), str(k), int(m), int(s), _untext(r), int(t), None if key is None else str(key))
        for n, k, m, s, r, t, key in stored.get("items", [])
    ]


def stat_cache(stored: dict[str, Any] | None, sandbox: str) -> dict[str, Item]:
    """The items of ``stored`` that carry a listing key of ``sandbox``, by name (empty when
    the manifest was taken on another sandbox: keys mean nothing elsewhere)."""
    if not stored or stored.get("v") != VERSION or stored.get("sandbox") != sandbox:
        return {}
    return {item.name: item for item in decode(stored) if item.key is not None}


def _shown(name: str) -> str:
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def display(items: Iterable[Item]) -> Manifest:
    """The manifest in the form diffs compare (the form tar snapshots stored): display name ->
    ``["file", sha256, size, mode, mtime]``, ``["link", target]`` or ``["dir"]``."""
    found: Manifest = {}
    for i in items:
        if i.kind == FILE:
            found[_shown(i.name)] = [FILE, i.ref, i.size, i.mode, i.mtime]
        elif i.kind == LINK:
            found[_shown(i.name)] = [LINK, _shown(i.ref)]
        else:
            found[_shown(i.name)] = [DIR]
    return found


def ordered(items: Iterable[Item]) -> list[Item]:
    """Items with every directory before what it holds (one item per name, the last wins)."""
    unique = {i.name: i for i in items}
    return sorted(unique.values(), key=lambda i: i.name.split("/"))


def _header(item: Item, mode: int) -> bytes:
    info = tarfile.TarInfo(item.name)
    info.mode, info.mtime, info.uid, info.gid = mode, item.mtime, SANDBOX_UID, SANDBOX_UID
    if item.kind == FILE:
        info.type, info.size = tarfile.REGTYPE, item.size
    elif item.kind == LINK:
        info.type, info.linkname = tarfile.SYMTYPE, item.ref
    else:
        info.type = tarfile.DIRTYPE
    return info.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape")


class _Checks:
    """The checks of a restore, item by item (see :func:`archives.check_archive`)."""

    def __init__(self, limit: int, report: ArchiveReport) -> None:
        self.limit, self.report, self.links = limit, report, LinkTree()

    def mode_of(self, item: Item) -> int:
        """The mode to unpack ``item`` with, once its name and place are checked."""
        if clean_name(item.name) != item.name or item.kind not in (FILE, DIR, LINK):
            raise InvalidInput(f"the snapshot's manifest has a bad entry {item.name[:200]!r}")
        report = self.report
        report.members += 1
        if report.members > MAX_MEMBERS:
            raise PayloadTooLarge(f"the snapshot has more than {MAX_MEMBERS} entries")
        under = self.links.above(item.name)
        if under is not None:
            raise PathOutsideWorkspace(
                f"{item.name[:200]!r} lies under the link {under!r}", path=item.name[:200]
            )
        note_parent(report, item.name.rpartition("/")[0])
        mode = item.mode & 0o777
        if item.kind == DIR:
            if mode | 0o700 != mode:
                report.dir_modes[item.name] = mode
            return mode | 0o700
        if item.kind == LINK:
            self.links.add(item.name)
            return 0o777
        report.bytes += item.size
        if report.bytes > self.limit:
            raise PayloadTooLarge(f"the snapshot holds more than {self.limit} bytes", limit=self.limit)
        return mode


def content_archive(
    items: Iterable[Item],
    open_blob: Callable[[str], IO[bytes]],
    writer: IO[bytes],
    *,
    limit: int,
    report: ArchiveReport,
) -> None:
    """Write the workspace archive of ``items`` (in :func:`ordered` order) to ``writer``
    (blocking: run it in a thread), each file's bytes read from ``open_blob(sha256)``, checked
    as it is made; ``report`` is complete at its end."""
    checks = _Checks(limit, report)
    for item in ordered(items):
        writer.write(_header(item, checks.mode_of(item)))
        if item.kind != FILE:
            continue
        with open_blob(item.ref) as blob:
            left = item.size
            while left and (chunk := blob.read(min(left, _READ))):
                writer.write(chunk)
                left -= len(chunk)
            if left or blob.read(1):
                raise SandlotError(f"the stored content of {item.name[:200]!r} is damaged")
        if item.size % _BLOCK:
            writer.write(bytes(_BLOCK - item.size % _BLOCK))
    writer.write(bytes(2 * _BLOCK))
