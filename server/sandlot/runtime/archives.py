"""Workspace archives: checking what goes into a sandbox, the snapshot format, manifests, diffs.

A workspace archive is an uncompressed tar whose member names are relative to the workspace
(``a.txt``, ``src/main.py``), with modes and mtimes kept. Every archive that enters a sandbox
(an upload, an asset, a snapshot being restored) is read as a stream by :func:`check_archive`,
member by member, and written again in that same form; what it refuses, nothing is unpacked
from:

- a name that is absolute, has ``..``, ``.`` or empty components, or lies under a symbolic
  link of the same archive (unpacking it would follow the link);
- anything but regular files, directories, symbolic links and hard links to earlier files of
  the archive (device nodes, FIFOs and sockets); a restore skips them instead;
- for uploads, a link that points outside the directory the archive is unpacked into;
- more content than ``limit`` bytes, counted while decompressing (a bomb stops there; the
  bounded reading is :mod:`sandlot.runtime.archive_bounds`).

Links already in the workspace are the runtime's part: it resolves every parent directory of
every member (:attr:`ArchiveReport.parents`) before unpacking, and unpacks as the sandbox user.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import posixpath
import stat
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from sandlot.domain.errors import InvalidInput, PathOutsideWorkspace, PayloadTooLarge, SandlotError
from sandlot.runtime.archive_bounds import open_bounded

__all__ = [
    "MAX_MEMBERS",
    "SANDBOX_UID",
    "TAR_FORMAT",
    "ArchiveReport",
    "LinkTree",
    "Manifest",
    "check_archive",
    "clamp_mtime",
    "clean_name",
    "diff",
    "manifest",
    "note_parent",
    "strip_first_component",
    "tar_directory",
]

SANDBOX_UID = 1000  # the built images' sandbox user
MAX_MEMBERS = 1_000_000  # bounds the header bytes an archive of empty files can cost
MAX_DEPTH = 256  # components of a member's name
MAX_PARENT_BYTES = 64 << 20  # the names of the directories members go into, all together
HEADER_ALLOWANCE = 64 << 20  # decompressed bytes beyond the content limit an archive may have
_MAX_NAME = 4096
TAR_FORMAT = tarfile.GNU_FORMAT  # long and non-UTF-8 names both ways, busybox and GNU tar alike

Manifest = dict[str, list[Any]]


@dataclass
class ArchiveReport:
    """What :func:`check_archive` saw: counts, the directories members go into, and the
    directories whose mode must be set once their contents are in place."""

    members: int = 0
    bytes: int = 0
    parents: set[str] = field(default_factory=set)
    parent_bytes: int = 0
    dir_modes: dict[str, int] = field(default_factory=dict)

    def fixups(self) -> list[tuple[str, int]]:
        """(path, mode) of directories unpacked writable that must end up restricted, deepest
        first (so no parent is locked before its children are done)."""
        return sorted(self.dir_modes.items(), key=lambda item: -item[0].count("/"))


def _bad(message: str, name: str) -> InvalidInput:
    return InvalidInput(f"archive member {name!r}: {message}", field="archive", member=name[:200])


def clean_name(raw: str) -> str | None:
    """The member name relative to the workspace, or None for the workspace itself."""
    name = raw
    while name.startswith("./"):
        name = name[2:]
    name = name.rstrip("/")
    if name in ("", "."):
        return None
    if len(name) > _MAX_NAME:
        raise _bad("the name is too long", raw[:100])
    if name.startswith("/"):
        raise PathOutsideWorkspace(f"archive member {raw!r} has an absolute name", path=raw[:200])
    parts = name.split("/")
    if len(parts) > MAX_DEPTH:
        raise _bad(f"the name is more than {MAX_DEPTH} directories deep", raw[:100])
    if ".." in parts:
        raise PathOutsideWorkspace(f"archive member {raw!r} would land outside", path=raw[:200])
    if any(p in ("", ".") or len(p.encode(errors="surrogateescape")) > 255 for p in parts):
        raise _bad("the name has empty, '.' or over-long components", raw)
    return name


def _parent(name: str) -> str:
    return name.rpartition("/")[0]


def _link_stays_inside(name: str, target: str) -> bool:
    if not target or target.startswith("/"):
        return False
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
    return resolved != ".." and not resolved.startswith("../")


def _key(name: str) -> bytes:
    """A short fixed-size stand-in for a name (the sets of seen names stay small)."""
    return hashlib.blake2b(name.encode("utf-8", "surrogateescape"), digest_size=16).digest()


class LinkTree:
    """The archive's links as a tree of name components, so whether a member lies under one
    costs one dictionary step per component of its name."""

    _LINK = object()

    def __init__(self) -> None:
        self._root: dict[str, Any] = {}

    def add(self, name: str) -> None:
        node = self._root
        for part in name.split("/"):
            if node.get(part) is self._LINK:
                return
            node = node.setdefault(part, {})
        node.clear()
        node[""] = self._LINK  # a link here (children no longer matter)

    def above(self, name: str) -> str | None:
        """The link ``name`` lies under, if any."""
        node = self._root
        parts = name.split("/")
        for depth, part in enumerate(parts[:-1], 1):
            node = node.get(part)  # type: ignore[assignment]
            if node is None:
                return None
            if node.get("") is self._LINK:
                return "/".join(parts[:depth])
        return None


class _Counted:
    """A member's bytes, read through so the whole archive stops once it passes ``limit``."""

    def __init__(self, handle: IO[bytes], limit: int, report: ArchiveReport) -> None:
        self._handle = handle
        self._limit = limit
        self._report = report

    def read(self, size: int = -1) -> bytes:
        chunk = self._handle.read(size)
        self._report.bytes += len(chunk)
        if self._report.bytes > self._limit:
            raise PayloadTooLarge(f"the archive holds more than {self._limit} bytes", limit=self._limit)
        return chunk


def clamp_mtime(value: Any) -> int:
    try:
        stamp = int(value)
    except (TypeError, ValueError, OverflowError):
        return 0
    return stamp if 0 <= stamp < 1 << 33 else 0


def check_archive(
    reader: IO[bytes],
    writer: IO[bytes],
    *,
    limit: int,
    strict: bool,
    report: ArchiveReport,
    prefix: str = "",
) -> None:
    """Read a tar (any compression) from ``reader`` and write its checked, uncompressed form
    to ``writer`` (members owned by the sandbox user, no setuid bits), every name under
    ``prefix`` (a clean relative path, or empty). ``strict`` (uploads): refuse links pointing
    outside and special files; otherwise (restoring a snapshot of the sandbox's own workspace)
    keep every link and skip special files. See the module doc."""
    if prefix:
        note_parent(report, prefix)
    budget = limit + limit // 4 + HEADER_ALLOWANCE  # the content's limit, and room for headers
    try:
        src = open_bounded(reader, budget)
    except (tarfile.TarError, OSError, EOFError, lzma.LZMAError) as exc:
        if isinstance(exc, BrokenPipeError):
            raise
        raise InvalidInput(f"not a tar archive: {exc}", field="archive") from exc
    try:
        with src, tarfile.open(fileobj=writer, mode="w|", format=TAR_FORMAT) as dst:
            copier = _Copier(src, dst, limit=limit, strict=strict, report=report, prefix=prefix)
            for member in src:
                copier.copy(member)
            _read_to_the_end(src)
    except tarfile.TarError as exc:
        raise InvalidInput(f"not a valid tar archive: {exc}", field="archive") from exc
    except (EOFError, OSError, lzma.LZMAError, ValueError, OverflowError) as exc:  # corrupt data
        if isinstance(exc, BrokenPipeError | SandlotError):
            raise
        raise InvalidInput(f"not a valid archive: {exc}", field="archive") from exc


def _read_to_the_end(src: tarfile.TarFile) -> None:
    """Read what follows the tar's end (padding, a compressed stream's trailer): a gzip, bzip2
    or xz stream cut short or corrupt after a whole tar raises only there (EOFError, a bad
    CRC), and the archive is refused rather than kept in part. Bounded by the same budget."""
    stream = src.fileobj
    if stream is not None:
        while stream.read(1 << 16):
            pass


class _Copier:
    """One pass of :func:`check_archive`: each member is checked against the ones before it
    (the links it may lie under, the files a hard link may name) and written again in the
    workspace archive's form. A class so that this memory of earlier members has one owner."""

    def __init__(
        self,
        src: tarfile.TarFile,
        dst: tarfile.TarFile,
        *,
        limit: int,
        strict: bool,
        report: ArchiveReport,
        prefix: str,
    ) -> None:
        self._src, self._dst = src, dst
        self._limit, self._strict, self._report, self._prefix = limit, strict, report, prefix
        self._links = LinkTree()
        self._files: set[bytes] = set()

    def copy(self, member: tarfile.TarInfo) -> None:
        """Check ``member``'s name and place, then write it (or skip it, see :meth:`_write`)."""
        name = clean_name(member.name)
        if name is None:
            return
        report = self._report
        report.members += 1
        if report.members > MAX_MEMBERS:
            raise PayloadTooLarge(f"the archive has more than {MAX_MEMBERS} members")
        under = self._links.above(name)
        if under is not None:
            raise PathOutsideWorkspace(
                f"archive member {name!r} lies under the link {under!r}", path=name[:200]
            )
        out = tarfile.TarInfo(f"{self._prefix}/{name}" if self._prefix else name)
        out.mtime, out.uid, out.gid = clamp_mtime(member.mtime), SANDBOX_UID, SANDBOX_UID
        if not self._write(member, name, out):
            report.members -= 1
            return
        note_parent(report, _parent(out.name))

    def _write(self, member: tarfile.TarInfo, name: str, out: tarfile.TarInfo) -> bool:
        """Write ``member`` as ``out`` by its kind, with that kind's checks. False when it was
        skipped: a special file outside ``strict`` mode (a restore leaves those out)."""
        if member.isreg():
            out.type, out.mode, out.size = tarfile.REGTYPE, member.mode & 0o777, member.size
            handle = self._src.extractfile(member)
            assert handle is not None
            self._dst.addfile(out, _Counted(handle, self._limit, self._report))
            self._files.add(_key(name))
        elif member.isdir():
            mode = member.mode & 0o777
            out.type, out.mode = tarfile.DIRTYPE, mode | 0o700
            if mode | 0o700 != mode:
                self._report.dir_modes[out.name] = mode
            else:
                self._report.dir_modes.pop(out.name, None)
            self._dst.addfile(out)
        elif member.issym():
            if self._strict and not _link_stays_inside(name, member.linkname):
                raise PathOutsideWorkspace(
                    f"archive link {name!r} points outside ({member.linkname!r})", path=name[:200]
                )
            out.type, out.linkname, out.mode = tarfile.SYMTYPE, member.linkname, 0o777
            self._links.add(name)
            self._dst.addfile(out)
        elif member.islnk():
            target = clean_name(member.linkname)
            if target is None or _key(target) not in self._files:
                raise _bad("a hard link must name an earlier file of the archive", name)
            target = f"{self._prefix}/{target}" if self._prefix else target
            out.type, out.linkname, out.mode = tarfile.LNKTYPE, target, member.mode & 0o777
            self._dst.addfile(out)
        elif self._strict:
            raise _bad("only regular files, directories and links are accepted", name)
        else:
            return False
        return True


def note_parent(report: ArchiveReport, parent: str) -> None:
    """Keep the directory a member goes into (for the runtime's check of links on disk),
    within a bound on the names kept."""
    if not parent or parent in report.parents:
        return
    report.parent_bytes += len(parent)
    if report.parent_bytes > MAX_PARENT_BYTES:
        raise InvalidInput("the archive has too many directories", field="archive")
    report.parents.add(parent)


def strip_first_component(reader: IO[bytes], writer: IO[bytes]) -> None:
    """Rewrite a tar of ``dir/...`` (Docker's archive of a directory) as one of ``...``,
    dropping the directory itself and special files (FIFOs, devices, sockets)."""
    with (
        tarfile.open(fileobj=reader, mode="r|") as src,
        tarfile.open(fileobj=writer, mode="w|", format=TAR_FORMAT) as dst,
    ):
        for member in src:
            _, sep, rest = member.name.partition("/")
            if not sep or not rest.strip("/"):
                continue
            if not (member.isreg() or member.isdir() or member.issym() or member.islnk()):
                continue
            member.name = rest
            if member.islnk():
                member.linkname = member.linkname.partition("/")[2]
            if member.isreg():
                member.type = tarfile.REGTYPE  # sparse files become plain ones
            dst.addfile(member, src.extractfile(member) if member.isreg() else None)


def tar_directory(root: Path, writer: IO[bytes]) -> None:
    """A workspace archive of a host directory (the local runtime's workspaces), streamed."""
    with tarfile.open(fileobj=writer, mode="w|", format=TAR_FORMAT) as tar:
        stack = [root]
        while stack:
            here = stack.pop()
            with os.scandir(here) as found:
                entries = sorted(found, key=lambda e: e.name)
            for entry in entries:
                path = Path(entry.path)
                info = entry.stat(follow_symlinks=False)
                if not (
                    stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode) or stat.S_ISLNK(info.st_mode)
                ):
                    continue
                tar.add(path, arcname=str(path.relative_to(root)), recursive=False)
                if stat.S_ISDIR(info.st_mode):
                    stack.append(path)


def manifest(reader: IO[bytes]) -> Manifest:
    """Every path of a workspace archive (read as a stream) with what identifies its content."""
    found: Manifest = {}
    with tarfile.open(fileobj=reader, mode="r|") as tar:
        for member in tar:
            # names are JSON text from here on: bytes that are not UTF-8 are spelt out
            raw = member.name.rstrip("/").removeprefix("./")
            name = raw.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            if member.isdir():
                found[name] = ["dir"]
            elif member.issym() or member.islnk():
                target = member.linkname.encode("utf-8", "surrogateescape")
                found[name] = ["link", target.decode("utf-8", "backslashreplace")]

            elif member.isreg():
                handle = tar.extractfile(member)
                assert handle is not None
                digest = hashlib.sha256()
                while chunk := handle.read(1 << 20):
                    digest.update(chunk)
                found[name] = ["file", digest.hexdigest(), member.size, member.mode, int(member.mtime)]
            else:
                found[name] = ["other", member.type.decode(errors="replace")]
    return found


def diff(old: Manifest | None, new: Manifest) -> dict[str, list[str]]:
    """Paths added, modified and deleted going from ``old`` (None: empty) to ``new``."""
    old = old or {}
    added = sorted(p for p in new if p not in old)
    deleted = sorted(p for p in old if p not in new)
    modified = sorted(
        p for p in new if p in old and new[p] != old[p] and not (new[p][0] == old[p][0] == "dir")
    )
    return {"added": added, "modified": modified, "deleted": deleted}
