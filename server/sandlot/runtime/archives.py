"""Workspace archives: the tar format snapshots use, their manifests and the diff of two.

A workspace archive is an uncompressed tar whose member names are relative to the workspace
(``a.txt``, ``src/main.py``), with owners, modes and mtimes kept. Its manifest maps every path
to what identifies its content: for a file the SHA-256 of its bytes, its size, mode and mtime;
for a symlink its target; for a directory only that it is one. Two manifests give the diff a
checkpoint records: paths added, modified and deleted (directories count as added or deleted,
never as modified, since unpacking a tree touches their mtimes).
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path
from typing import Any

from sandlot.domain.errors import InvalidInput

__all__ = [
    "SANDBOX_UID",
    "add_owned",
    "check_contained",
    "diff",
    "extract_into",
    "manifest",
    "members",
    "owned_copy",
    "strip_first_component",
    "tar_directory",
]

SANDBOX_UID = 1000  # the built images' sandbox user

Manifest = dict[str, list[Any]]


def strip_first_component(raw: bytes) -> bytes:
    """Rewrite a tar of ``dir/...`` (Docker's archive of a directory) as one of ``...``."""
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as src, tarfile.open(fileobj=out, mode="w:") as dst:
        for member in src:
            _, sep, rest = member.name.partition("/")
            if not sep or not rest.strip("/"):
                continue  # the directory itself
            member.name = rest
            dst.addfile(member, src.extractfile(member) if member.isfile() else None)
    return out.getvalue()


def manifest(archive: bytes) -> Manifest:
    found: Manifest = {}
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as tar:
        for member in tar:
            name = member.name.rstrip("/").removeprefix("./")
            if member.isdir():
                found[name] = ["dir"]
            elif member.issym() or member.islnk():
                found[name] = ["link", member.linkname]
            elif member.isfile():
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


def tar_directory(root: Path) -> bytes:
    """A workspace archive of a host directory (the local runtime's workspaces)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:") as tar:
        for path in sorted(root.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(root)), recursive=False)
    return out.getvalue()


def extract_into(root: Path, archive: bytes) -> None:
    """Unpack a workspace archive into a host directory, refusing members that would land
    outside it (absolute names, ``..``, links pointing out): the ``data`` filter."""
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as tar:
        tar.extractall(root, filter="data")


def check_contained(data: bytes) -> None:
    """Refuse (422) an uploaded tar (any compression) that is not one, or that has a member or
    a link that would land outside the directory it is unpacked into."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
            for member in tar:
                name = member.name
                if name.startswith("/") or ".." in name.split("/"):
                    raise InvalidInput(f"archive member {name!r} would land outside its directory")
                if (member.issym() or member.islnk()) and (
                    member.linkname.startswith("/") or ".." in member.linkname.split("/")
                ):
                    raise InvalidInput(f"archive link {name!r} points outside its directory")
    except tarfile.TarError as exc:
        raise InvalidInput(f"not a tar archive: {exc}") from exc


def members(data: bytes) -> list[tuple[tarfile.TarInfo, bytes | None]]:
    """The members of a tar (any compression), with the contents of its files."""
    out: list[tuple[tarfile.TarInfo, bytes | None]] = []
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
        for member in tar:
            handle = tar.extractfile(member) if member.isfile() else None
            out.append((member, handle.read() if handle else None))
    return out


def add_owned(tar: tarfile.TarFile, info: tarfile.TarInfo, data: bytes | None) -> None:
    """Add a member owned by the sandbox user (a file without a mode gets 0644)."""
    info.uid = info.gid = SANDBOX_UID
    info.uname = info.gname = ""
    if data is not None:
        info.size = len(data)
        info.mode = info.mode or 0o644
    tar.addfile(info, io.BytesIO(data) if data is not None else None)


def owned_copy(data: bytes) -> bytes:
    """An uploaded tar, checked with :func:`check_contained`, as an uncompressed workspace
    archive whose members belong to the sandbox user (whoever owned them where it was made)."""
    check_contained(data)
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:") as tar:
        for member, content in members(data):
            member.name = member.name.removeprefix("./").rstrip("/") or "."
            if member.name == ".":
                continue  # the workspace itself keeps its owner and mode
            add_owned(tar, member, content)
    return out.getvalue()
