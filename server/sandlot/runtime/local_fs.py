"""A local sandbox's workspace, reached only through directory descriptors.

The service runs on this host with more rights than the sandbox, and the sandbox can plant
symbolic links in its workspace at any time. So no path is ever handed to the kernel whole:
each component is opened relative to its parent with ``O_NOFOLLOW``, and a link is followed by
hand, only while it stays in the workspace (an absolute target must name the in-sandbox
workspace; a ``..`` never climbs above it). A component swapped for a link between a look and
an open fails the open instead of being followed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import tarfile
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from sandlot.domain.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    PathOutsideWorkspace,
    PayloadTooLarge,
)
from sandlot.runtime.archives import ArchiveReport

__all__ = ["MAX_LINK_HOPS", "Workspace"]

MAX_LINK_HOPS = 40
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # a FIFO never blocks the open


class _Place:
    """A directory (open descriptor) and a name in it; closes the descriptors it holds."""

    def __init__(self, fds: list[int], leaf: str) -> None:
        self._fds = fds
        self.leaf = leaf

    @property
    def dir(self) -> int:
        return self._fds[-1]

    def close(self) -> None:
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds = []

    def lstat(self) -> os.stat_result | None:
        try:
            return os.stat(self.leaf, dir_fd=self.dir, follow_symlinks=False)
        except FileNotFoundError:
            return None


class Workspace:
    """``host`` is the workspace directory on this host; ``inside`` where the sandbox sees it.
    What the service makes there is given to ``owner`` (uid, gid), the sandbox's host user."""

    def __init__(self, host: Path, inside: str, owner: tuple[int, int] | None = None) -> None:
        self.host = host
        self.inside = inside.rstrip("/") or "/"
        self.owner = owner

    def _own(self, fd: int) -> None:
        if self.owner is not None:
            os.fchown(fd, *self.owner)

    def _own_name(self, name: str, dir_fd: int) -> None:
        if self.owner is not None:
            os.chown(name, *self.owner, dir_fd=dir_fd, follow_symlinks=False)

    def _relative(self, path: str) -> str:
        if path == self.inside:
            return ""
        if not path.startswith(self.inside + "/"):
            raise PathOutsideWorkspace(f"path {path!r} is outside the workspace", path=path)
        return path[len(self.inside) + 1 :]

    @contextlib.contextmanager
    def place(self, path: str, *, make_parents: bool, follow_last: bool) -> Iterator[_Place]:
        """The directory holding ``path`` (absolute, in-sandbox) and its last name, every link
        on the way followed inside the workspace only. With ``follow_last`` a link at the last
        name is followed too (its target may not exist yet)."""
        place = self._walk(self._relative(path), make_parents, follow_last, path)
        try:
            yield place
        finally:
            place.close()

    def _walk(self, rel: str, make_parents: bool, follow_last: bool, shown: str) -> _Place:
        try:
            root = os.open(self.host, _DIR)
        except FileNotFoundError as exc:
            raise NotFound("the sandbox's workspace is gone") from exc
        stack = [root]
        todo = deque(p for p in rel.split("/") if p not in ("", "."))
        hops = 0
        try:
            if not todo:
                raise InvalidInput(f"{shown!r} is the workspace itself", path=shown)
            while True:
                name = todo.popleft()
                if name in ("", "."):
                    if not todo:
                        raise InvalidInput(f"{shown!r} names a directory", path=shown)
                    continue
                if name == "..":
                    if len(stack) == 1:
                        raise PathOutsideWorkspace(
                            f"path {shown!r} resolves outside the workspace", path=shown
                        )
                    os.close(stack.pop())
                    if not todo:
                        raise InvalidInput(f"{shown!r} names a directory", path=shown)
                    continue
                last = not todo
                if last and not follow_last:
                    return _Place(stack, name)
                try:
                    info = os.stat(name, dir_fd=stack[-1], follow_symlinks=False)
                except FileNotFoundError:
                    if last:
                        return _Place(stack, name)
                    if not make_parents:
                        raise NotFound(f"nothing at {shown!r}", path=shown) from None
                    _mkdir(name, stack[-1], shown)
                    self._own_name(name, stack[-1])
                    info = os.stat(name, dir_fd=stack[-1], follow_symlinks=False)
                if stat.S_ISLNK(info.st_mode):
                    hops += 1
                    if hops > MAX_LINK_HOPS:
                        raise InvalidInput(f"too many links in {shown!r}", path=shown)
                    target = os.readlink(name, dir_fd=stack[-1])
                    if target.startswith("/"):
                        try:
                            rel = self._relative(target.rstrip("/") or "/")
                        except PathOutsideWorkspace:
                            raise PathOutsideWorkspace(
                                f"path {shown!r} resolves outside the workspace", path=shown
                            ) from None
                        for fd in stack[1:]:
                            os.close(fd)
                        stack = [root]
                        target = rel
                    todo.extendleft(reversed([p for p in target.split("/") if p] or ["."]))
                    continue
                if last:
                    return _Place(stack, name)
                if not stat.S_ISDIR(info.st_mode):
                    raise InvalidInput(f"a parent of {shown!r} is not a directory", path=shown)
                try:
                    stack.append(os.open(name, _DIR, dir_fd=stack[-1]))
                except OSError as exc:  # swapped for a link since the look: never followed
                    raise Conflict(f"{shown!r} changed while it was opened") from exc
        except BaseException:
            for fd in stack:
                with contextlib.suppress(OSError):
                    os.close(fd)
            raise

    # -- files --------------------------------------------------------------------------------

    def open_read(self, path: str, limit: int) -> tuple[IO[bytes], int]:
        """The regular file at ``path`` opened for reading, and its size."""
        # O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused just below)
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        with self.place(path, make_parents=False, follow_last=True) as where:
            try:
                fd = os.open(where.leaf, flags, dir_fd=where.dir)
            except FileNotFoundError as exc:
                raise NotFound(f"no file at {path!r}", path=path) from exc
            except OSError as exc:
                raise InvalidInput(f"could not read {path!r}: {exc.strerror}", path=path) from exc
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise InvalidInput(f"{path!r} is not a regular file", path=path)
            if not info.st_mode & stat.S_IRUSR:
                raise InvalidInput(f"{path!r}: permission denied", path=path)
            if info.st_size > limit:
                raise PayloadTooLarge(f"{path!r} is {info.st_size} bytes; the limit is {limit}", path=path)
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return os.fdopen(fd, "rb"), info.st_size

    @contextlib.contextmanager
    def open_write(self, path: str) -> Iterator[IO[bytes]]:
        """A new file beside ``path``, renamed over it when the block ends without an error
        (so a failed upload leaves the old file). The sandbox's permissions are honoured: a
        read-only file or directory is not written, and the old file's mode is kept."""
        with self.place(path, make_parents=True, follow_last=True) as where:
            old = where.lstat()
            if old is not None and stat.S_ISDIR(old.st_mode):
                raise InvalidInput(f"{path!r} is a directory", path=path)
            if old is not None and not old.st_mode & stat.S_IWUSR:
                raise InvalidInput(f"{path!r}: permission denied (read-only)", path=path)
            if not os.fstat(where.dir).st_mode & stat.S_IWUSR:
                raise InvalidInput(f"{path!r}: permission denied (read-only directory)", path=path)
            mode = stat.S_IMODE(old.st_mode) if old is not None else 0o644
            tmp = f".sandlot-upload-{secrets.token_hex(6)}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=where.dir)
            try:
                with os.fdopen(fd, "wb") as handle:
                    yield handle
                    # by descriptor: the name may be something else by now (the sandbox can
                    # rename in its workspace), and a mode must never land on what it points to
                    os.fchmod(handle.fileno(), mode & 0o777)
                    self._own(handle.fileno())
                os.rename(tmp, where.leaf, src_dir_fd=where.dir, dst_dir_fd=where.dir)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=where.dir)
                raise

    # -- archives -----------------------------------------------------------------------------

    def extract(self, reader: IO[bytes], report: ArchiveReport) -> None:
        """Unpack a checked workspace archive (see :func:`archives.check_archive`), every member
        placed through :meth:`place`, then set the modes of restricted directories."""
        with tarfile.open(fileobj=reader, mode="r|") as tar:
            for member in tar:
                path = f"{self.inside}/{member.name}"
                with self.place(path, make_parents=True, follow_last=member.isdir()) as where:
                    self._extract_one(tar, member, where)
        for name, mode in report.fixups():
            with self.place(f"{self.inside}/{name}", make_parents=False, follow_last=False) as where:
                try:
                    fd = os.open(where.leaf, _DIR, dir_fd=where.dir)
                except OSError:
                    continue  # no longer a directory of ours: nothing to restrict
                try:
                    os.fchmod(fd, mode)
                finally:
                    os.close(fd)

    def _extract_one(self, tar: tarfile.TarFile, member: tarfile.TarInfo, where: _Place) -> None:
        old = where.lstat()
        if member.isdir():
            if old is None:
                os.mkdir(where.leaf, member.mode, dir_fd=where.dir)
                self._own_name(where.leaf, where.dir)
            elif not stat.S_ISDIR(old.st_mode):
                raise InvalidInput(f"archive member {member.name!r} is a directory; a file is there")
            fd = os.open(where.leaf, _DIR, dir_fd=where.dir)
            try:
                os.fchmod(fd, member.mode & 0o777)
            finally:
                os.close(fd)
            return
        if old is not None:
            if stat.S_ISDIR(old.st_mode):
                raise InvalidInput(f"archive member {member.name!r} is a file; a directory is there")
            os.unlink(where.leaf, dir_fd=where.dir)
        if member.issym():
            os.symlink(member.linkname, where.leaf, dir_fd=where.dir)
            self._own_name(where.leaf, where.dir)
            return
        if member.islnk():
            with self.place(f"{self.inside}/{member.linkname}", make_parents=False, follow_last=False) as src:
                os.link(src.leaf, where.leaf, src_dir_fd=src.dir, dst_dir_fd=where.dir, follow_symlinks=False)
            return
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(where.leaf, flags, member.mode, dir_fd=where.dir)
        with os.fdopen(fd, "wb") as out:
            data = tar.extractfile(member)
            assert data is not None
            while chunk := data.read(1 << 16):
                out.write(chunk)
            os.fchmod(out.fileno(), member.mode & 0o777)
            self._own(out.fileno())
            os.utime(out.fileno(), (member.mtime, member.mtime))

    # -- reading the whole tree ----------------------------------------------------------------

    def _entries(self) -> Iterator[tuple[str, os.stat_result, int | None, int]]:
        """Every entry under the workspace, by descriptor: (relative name, its lstat, an open
        descriptor for a regular file or None, the descriptor of its directory). Entries that
        change kind or vanish while the walk passes are left out; nothing is followed."""
        root = os.open(self.host, _DIR)
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
                            below.append((os.open(name, _DIR, dir_fd=dir_fd), f"{prefix}{name}/"))
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

    def size(self) -> int:
        total = 0
        for _, info, handle, _ in self._entries():
            if handle is not None:
                os.close(handle)
                total += info.st_size
        return total

    def export(self, writer: IO[bytes]) -> None:
        """The workspace as a workspace archive (see :mod:`archives`), read by descriptor."""
        with tarfile.open(fileobj=writer, mode="w|", format=tarfile.GNU_FORMAT) as tar:
            for name, info, handle, dir_fd in self._entries():
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


def _mkdir(name: str, parent: int, shown: str) -> None:
    try:
        os.mkdir(name, 0o755, dir_fd=parent)
    except FileExistsError:
        pass
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise InvalidInput(f"{shown!r}: permission denied", path=shown) from exc
        raise
