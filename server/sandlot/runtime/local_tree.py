"""A local workspace read whole, by descriptor: its size and its workspace archive.

The sandbox may change its workspace while the service reads it, and the service reads with
more rights than the sandbox has. So the walk opens every directory and file relative to its
parent with ``O_NOFOLLOW`` and follows no link; what changes kind or vanishes while the walk
passes is left out, and a file is archived at the size it had when it was opened.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

__all__ = ["DIR_FLAGS", "entries", "export_tree", "tree_size"]

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # a FIFO never blocks the open


def entries(host: Path) -> Iterator[tuple[str, os.stat_result, int | None, int]]:
    """Every entry under the workspace ``host``, by descriptor: (relative name, its lstat, an
    open descriptor for a regular file or None, the descriptor of its directory). Entries that
    change kind or vanish while the walk passes are left out; nothing is followed."""
    root = os.open(host, DIR_FLAGS)
    stack: list[tuple[int, str]] = [(root, "")]
    try:
        while stack:
            dir_fd, prefix = stack.pop()
            try:
                names = sorted(os.listdir(dir_fd))
            except OSError:
                os.close(dir_fd)
                continue
            below: list[tuple[int, str]] = []
            for name in names:
                try:
                    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                    handle = None
                    if stat.S_ISDIR(info.st_mode):
                        below.append((os.open(name, DIR_FLAGS, dir_fd=dir_fd), f"{prefix}{name}/"))
                    elif stat.S_ISREG(info.st_mode):
                        handle = os.open(name, _FILE, dir_fd=dir_fd)
                        info = os.fstat(handle)
                        if not stat.S_ISREG(info.st_mode):
                            os.close(handle)
                            continue
                    elif not stat.S_ISLNK(info.st_mode):
                        continue  # FIFOs, sockets, devices: not part of a workspace archive
                except OSError:
                    continue
                yield f"{prefix}{name}", info, handle, dir_fd
            os.close(dir_fd)
            stack.extend(reversed(below))
    finally:
        for dir_fd, _ in stack:
            with contextlib.suppress(OSError):
                os.close(dir_fd)


def tree_size(host: Path) -> int:
    """The bytes of the regular files under ``host``."""
    total = 0
    for _, info, handle, _ in entries(host):
        if handle is not None:
            os.close(handle)
            total += info.st_size
    return total


def export_tree(host: Path, writer: IO[bytes], only: frozenset[str] | None = None) -> None:
    """The workspace ``host`` as a workspace archive (see :mod:`archives`), read by descriptor;
    ``only``: just the entries of those names."""
    with tarfile.open(fileobj=writer, mode="w|", format=tarfile.GNU_FORMAT) as tar:
        for name, info, handle, dir_fd in entries(host):
            if only is not None and name not in only:
                if handle is not None:
                    os.close(handle)
                continue
            entry = tarfile.TarInfo(name)
            entry.mode, entry.mtime = stat.S_IMODE(info.st_mode), int(info.st_mtime)
            entry.uid, entry.gid = 1000, 1000
            if stat.S_ISDIR(info.st_mode):
                entry.type = tarfile.DIRTYPE
                tar.addfile(entry)
            elif stat.S_ISLNK(info.st_mode):
                try:
                    entry.type, entry.linkname = (
                        tarfile.SYMTYPE,
                        os.readlink(name.rpartition("/")[2], dir_fd=dir_fd),
                    )
                except OSError:
                    continue
                tar.addfile(entry)
            elif handle is not None:
                entry.size = info.st_size
                with os.fdopen(handle, "rb") as data:
                    tar.addfile(entry, _Exactly(data, info.st_size))


class _Exactly:
    """A file read as ``size`` bytes whatever happens to it meanwhile: cut when it grew,
    padded with zeros when it shrank (as tar does with a file that changed as it was read)."""

    def __init__(self, handle: IO[bytes], size: int) -> None:
        self._handle = handle
        self._left = size

    def read(self, n: int = -1) -> bytes:
        n = self._left if n < 0 else min(n, self._left)
        data = self._handle.read(n) if n else b""
        if len(data) < n:
            data += bytes(n - len(data))
        self._left -= len(data)
        return data
