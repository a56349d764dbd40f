"""A local sandbox's workspace, reached only through directory descriptors.

The service runs on this host with more rights than the sandbox, and the sandbox can plant
symbolic links in its workspace at any time. So no path is ever handed to the kernel whole:
each component is opened relative to its parent with ``O_NOFOLLOW``, and a link is followed by
hand, only while it stays in the workspace (an absolute target must name the in-sandbox
workspace; a ``..`` never climbs above it). A component swapped for a link between a look and
an open fails the open instead of being followed. Reading the whole tree (its size, its
archive) is :mod:`sandlot.runtime.local_tree`.
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
from sandlot.runtime.local_tree import DIR_FLAGS, export_tree, tree_size

__all__ = ["MAX_LINK_HOPS", "Workspace"]

MAX_LINK_HOPS = 40


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
        """Resolve ``rel`` one component at a time from the workspace's own descriptor. The
        stack of open directories is the path so far (``..`` pops it, an absolute link target
        starts it again at the root), so no path inside the workspace is resolved whole."""
        try:
            root = os.open(self.host, DIR_FLAGS)
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
                if name in ("", ".", ".."):
                    _step_back(name, stack, todo, shown)
                    continue
                last = not todo
                if last and not follow_last:
                    return _Place(stack, name)
                info = self._look(name, stack[-1], last=last, make_parents=make_parents, shown=shown)
                if info is None:  # the last name, not there yet
                    return _Place(stack, name)
                if stat.S_ISLNK(info.st_mode):
                    hops += 1
                    if hops > MAX_LINK_HOPS:
                        raise InvalidInput(f"too many links in {shown!r}", path=shown)
                    self._follow(name, stack, todo, shown)
                    continue
                if last:
                    return _Place(stack, name)
                if not stat.S_ISDIR(info.st_mode):
                    raise InvalidInput(f"a parent of {shown!r} is not a directory", path=shown)
                try:
                    stack.append(os.open(name, DIR_FLAGS, dir_fd=stack[-1]))
                except OSError as exc:  # swapped for a link since the look: never followed
                    raise Conflict(f"{shown!r} changed while it was opened") from exc
        except BaseException:
            for fd in stack:
                with contextlib.suppress(OSError):
                    os.close(fd)
            raise

    def _look(
        self, name: str, dir_fd: int, *, last: bool, make_parents: bool, shown: str
    ) -> os.stat_result | None:
        """The lstat of ``name`` in ``dir_fd``. A missing last name is None (the caller may be
        about to make it); a missing parent is made when asked, and given to the sandbox's
        user, so what an upload creates is the sandbox's own."""
        try:
            return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            if last:
                return None
            if not make_parents:
                raise NotFound(f"nothing at {shown!r}", path=shown) from None
            _mkdir(name, dir_fd, shown)
            self._own_name(name, dir_fd)
            return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)

    def _follow(self, name: str, stack: list[int], todo: deque[str], shown: str) -> None:
        """Put the target of the link ``name`` (in ``stack[-1]``) before what is left to walk.
        An absolute target must name the in-sandbox workspace: the walk goes back to its root
        (closing the directories above it), since the host's root is never the sandbox's."""
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
            del stack[1:]
            target = rel
        todo.extendleft(reversed([p for p in target.split("/") if p] or ["."]))

    # -- files --------------------------------------------------------------------------------

    def open_read(self, path: str, limit: int) -> tuple[IO[bytes], int]:
        """The regular file at ``path`` opened for reading, and its size."""
        # O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused just below)
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        with self.place(path, make_parents=False, follow_last=True) as where:
            try:
                fd = os.open(where.leaf, flags, dir_fd=where.dir)
            except FileNotFoundError as exc:
                raise NotFound(f"no file at {path!r}", path=path, reason="not_found") from exc
            except OSError as exc:
                raise InvalidInput(f"could not read {path!r}: {exc.strerror}", path=path) from exc
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise InvalidInput(f"{path!r} is a directory", path=path, reason="is_a_directory")
            if not stat.S_ISREG(info.st_mode):
                raise InvalidInput(f"{path!r} is not a regular file", path=path, reason="not_a_regular_file")
            if not info.st_mode & stat.S_IRUSR:
                raise InvalidInput(f"{path!r}: permission denied", path=path, reason="permission_denied")
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
                raise InvalidInput(f"{path!r} is a directory", path=path, reason="is_a_directory")
            denied = {"path": path, "reason": "permission_denied"}
            if old is not None and not old.st_mode & stat.S_IWUSR:
                raise InvalidInput(f"{path!r}: permission denied (read-only)", **denied)
            if not os.fstat(where.dir).st_mode & stat.S_IWUSR:
                raise InvalidInput(f"{path!r}: permission denied (read-only directory)", **denied)
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
                    fd = os.open(where.leaf, DIR_FLAGS, dir_fd=where.dir)
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
            fd = os.open(where.leaf, DIR_FLAGS, dir_fd=where.dir)
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

    def size(self) -> int:
        return tree_size(self.host)

    def export(self, writer: IO[bytes]) -> None:
        """The workspace as a workspace archive (see :mod:`archives`), read by descriptor."""
        export_tree(self.host, writer)


def _mkdir(name: str, parent: int, shown: str) -> None:
    try:
        os.mkdir(name, 0o755, dir_fd=parent)
    except FileExistsError:
        pass
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise InvalidInput(f"{shown!r}: permission denied", path=shown) from exc
        raise


def _step_back(name: str, stack: list[int], todo: deque[str], shown: str) -> None:
    """Walk a ``.`` (or empty) component, which stays put, or a ``..``, which closes the last
    directory but never the workspace's own. Neither may end the path (it would name a
    directory, and a file is asked for)."""
    if name == "..":
        if len(stack) == 1:
            raise PathOutsideWorkspace(f"path {shown!r} resolves outside the workspace", path=shown)
        os.close(stack.pop())
    if not todo:
        raise InvalidInput(f"{shown!r} names a directory", path=shown)
