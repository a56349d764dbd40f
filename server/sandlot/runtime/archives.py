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
- more content than ``limit`` bytes, counted while decompressing (a bomb stops there).

Links already in the workspace are the runtime's part: it resolves every parent directory of
every member (:attr:`ArchiveReport.parents`) before unpacking, and unpacks as the sandbox user.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import lzma
import os
import posixpath
import stat
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

from sandlot.domain.errors import InvalidInput, PathOutsideWorkspace, PayloadTooLarge, SandlotError

__all__ = [
    "MAX_MEMBERS",
    "SANDBOX_UID",
    "ArchiveReport",
    "check_archive",
    "diff",
    "manifest",
    "strip_first_component",
    "tar_directory",
]

SANDBOX_UID = 1000  # the built images' sandbox user
MAX_MEMBERS = 1_000_000  # bounds the header bytes an archive of empty files can cost
MAX_HEADER = 64 << 10  # a long name or an extended (pax) header
MAX_DEPTH = 256  # components of a member's name
MAX_PARENT_BYTES = 64 << 20  # the names of the directories members go into, all together
HEADER_ALLOWANCE = 64 << 20  # decompressed bytes beyond the content limit an archive may have
_MAX_NAME = 4096
_FORMAT = tarfile.GNU_FORMAT  # long and non-UTF-8 names both ways, busybox and GNU tar alike

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


def _clean(raw: str) -> str | None:
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


class _Links:
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


class _Budget(io.RawIOBase):
    """Every decompressed byte of the archive, headers included, counted against a budget."""

    def __init__(self, source: IO[bytes], budget: int) -> None:
        self._source = source
        self._left = budget
        self._budget = budget

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        data = self._source.read(len(b))
        self._left -= len(data)
        if self._left < 0:
            raise PayloadTooLarge(
                f"the archive unpacks to more than {self._budget} bytes", limit=self._budget
            )
        b[: len(data)] = data
        return len(data)


class _BoundedInfo(tarfile.TarInfo):
    """Headers read with bounds: a long name or an extended header is held in memory whole
    while it is parsed, so none may pass ``MAX_HEADER``; sparse files are not accepted (their
    maps grow with the input)."""

    def _proc_member(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        if self.type in _EXTENDED and self.size > MAX_HEADER:
            raise InvalidInput(
                f"an archive header of {self.size} bytes (at most {MAX_HEADER})", field="archive"
            )
        if self.type == tarfile.GNUTYPE_SPARSE:
            raise InvalidInput("sparse files are not accepted in archives", field="archive")
        return super()._proc_member(tarfile_)  # type: ignore[misc]

    def _refuse_sparse(self, *_: Any) -> None:
        raise InvalidInput("sparse files are not accepted in archives", field="archive")

    _proc_gnusparse_00 = _proc_gnusparse_01 = _proc_gnusparse_10 = _refuse_sparse


_EXTENDED = (
    tarfile.GNUTYPE_LONGNAME,
    tarfile.GNUTYPE_LONGLINK,
    tarfile.XHDTYPE,
    tarfile.XGLTYPE,
    tarfile.SOLARIS_XHDTYPE,
)


def _mtime(value: Any) -> int:
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
        _note_parent(report, prefix)
    links = _Links()
    files: set[bytes] = set()
    budget = limit + limit // 4 + HEADER_ALLOWANCE  # the content's limit, and room for headers
    try:
        source = io.BufferedReader(_Budget(_decompressed(reader), budget), 1 << 16)
        src = tarfile.open(fileobj=source, mode="r|", tarinfo=_BoundedInfo)  # noqa: SIM115 - closed below
    except (tarfile.TarError, OSError, EOFError, lzma.LZMAError) as exc:
        if isinstance(exc, BrokenPipeError):
            raise
        raise InvalidInput(f"not a tar archive: {exc}", field="archive") from exc
    try:
        with src, tarfile.open(fileobj=writer, mode="w|", format=_FORMAT) as dst:
            for member in src:
                name = _clean(member.name)
                if name is None:
                    continue
                report.members += 1
                if report.members > MAX_MEMBERS:
                    raise PayloadTooLarge(f"the archive has more than {MAX_MEMBERS} members")
                under = links.above(name)
                if under is not None:
                    raise PathOutsideWorkspace(
                        f"archive member {name!r} lies under the link {under!r}", path=name[:200]
                    )
                out = tarfile.TarInfo(f"{prefix}/{name}" if prefix else name)
                out.mtime, out.uid, out.gid = _mtime(member.mtime), SANDBOX_UID, SANDBOX_UID
                if member.isreg():
                    out.type, out.mode, out.size = tarfile.REGTYPE, member.mode & 0o777, member.size
                    handle = src.extractfile(member)
                    assert handle is not None
                    dst.addfile(out, _Counted(handle, limit, report))
                    files.add(_key(name))
                elif member.isdir():
                    mode = member.mode & 0o777
                    out.type, out.mode = tarfile.DIRTYPE, mode | 0o700
                    if mode | 0o700 != mode:
                        report.dir_modes[out.name] = mode
                    else:
                        report.dir_modes.pop(out.name, None)
                    dst.addfile(out)
                elif member.issym():
                    if strict and not _link_stays_inside(name, member.linkname):
                        raise PathOutsideWorkspace(
                            f"archive link {name!r} points outside ({member.linkname!r})", path=name[:200]
                        )
                    out.type, out.linkname, out.mode = tarfile.SYMTYPE, member.linkname, 0o777
                    links.add(name)
                    dst.addfile(out)
                elif member.islnk():
                    target = _clean(member.linkname)
                    if target is None or _key(target) not in files:
                        raise _bad("a hard link must name an earlier file of the archive", name)
                    target = f"{prefix}/{target}" if prefix else target
                    out.type, out.linkname, out.mode = tarfile.LNKTYPE, target, member.mode & 0o777
                    dst.addfile(out)
                elif strict:
                    raise _bad("only regular files, directories and links are accepted", name)
                else:
                    report.members -= 1
                    continue
                _note_parent(report, _parent(out.name))
    except tarfile.TarError as exc:
        raise InvalidInput(f"not a valid tar archive: {exc}", field="archive") from exc
    except (EOFError, OSError, lzma.LZMAError, ValueError, OverflowError) as exc:  # corrupt data
        if isinstance(exc, BrokenPipeError | SandlotError):
            raise
        raise InvalidInput(f"not a valid archive: {exc}", field="archive") from exc


def _note_parent(report: ArchiveReport, parent: str) -> None:
    """Keep the directory a member goes into (for the runtime's check of links on disk),
    within a bound on the names kept."""
    if not parent or parent in report.parents:
        return
    report.parent_bytes += len(parent)
    if report.parent_bytes > MAX_PARENT_BYTES:
        raise InvalidInput("the archive has too many directories", field="archive")
    report.parents.add(parent)


def _decompressed(reader: IO[bytes]) -> IO[bytes]:
    """``reader``, decompressed when it starts like gzip, bzip2 or xz. These readers inflate
    at most what is asked of them at a time (tarfile's own ``r|*`` inflates each compressed
    chunk whole: 64 KiB of a bomb becomes 64 MiB at once)."""
    buffered: Any = reader if isinstance(reader, io.BufferedReader) else io.BufferedReader(reader)
    head = buffered.peek(6)[:6]
    opened: Any = buffered
    if head.startswith(b"\x1f\x8b"):
        opened = gzip.GzipFile(fileobj=buffered, mode="rb")
    elif head.startswith(b"BZh"):
        opened = bz2.BZ2File(buffered, mode="rb")
    elif head.startswith(b"\xfd7zXZ\x00"):
        opened = lzma.LZMAFile(buffered, mode="rb")  # noqa: SIM115 - the tar reading it closes it
    return cast(IO[bytes], opened)


def strip_first_component(reader: IO[bytes], writer: IO[bytes]) -> None:
    """Rewrite a tar of ``dir/...`` (Docker's archive of a directory) as one of ``...``,
    dropping the directory itself and special files (FIFOs, devices, sockets)."""
    with (
        tarfile.open(fileobj=reader, mode="r|") as src,
        tarfile.open(fileobj=writer, mode="w|", format=_FORMAT) as dst,
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
    with tarfile.open(fileobj=writer, mode="w|", format=_FORMAT) as tar:
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
