"""Files of an inspect_ai sandbox on Sandlot: in the workspace through the service's file routes
(streamed, any size up to its file limit, with its path checks), elsewhere through commands run
as the sandbox user (so its permissions hold); and the service's refusals as the exceptions
inspect's own Docker sandbox raises (``FileNotFoundError``, ``IsADirectoryError``,
``PermissionError``, ``OutputLimitExceededError``...)."""

from __future__ import annotations

import errno
import posixpath
from typing import Any

from inspect_ai.util import OutputLimitExceededError, SandboxEnvironmentLimits

from sandlot_client._features import output_bytes
from sandlot_client.aio import AsyncSession
from sandlot_client.errors import NotFound, PayloadTooLarge, SandlotError

__all__ = ["SessionFiles", "file_error"]

#: Outside the workspace a file is read in pieces this large (one command each), within any
#: sensible output limit of the service (``exec_output_limit``, 8 MiB by default).
PIECE_MIB = 4
# exit codes of the programs below, as the service's own file programs use them
_IS_DIR, _DENIED, _MISSING, _NOT_REGULAR = 11, 13, 15, 17
_SIZE = (
    'f=$1; [ -d "$f" ] && exit 11; [ -e "$f" ] || exit 15; [ -r "$f" ] || exit 13; '
    '[ -f "$f" ] || exit 17; wc -c < "$f"'
)
_PIECE = 'dd if="$1" bs=1048576 skip="$2" count="$3" 2>/dev/null'
_WRITE = 'f=$1; [ -d "$f" ] && exit 11; mkdir -p -- "$(dirname -- "$f")" 2>/dev/null; cat > "$f"'


def file_error(exc: SandlotError, file: str) -> Exception | None:
    """The exception inspect expects for a refused file operation on ``file``, or None when
    the path leads outside the workspace (a link): the caller then goes the other way."""
    reason = exc.reason
    if isinstance(exc, NotFound) or reason == "not_found":
        return FileNotFoundError(errno.ENOENT, "No such file or directory", file)
    if reason == "is_a_directory":
        return IsADirectoryError(errno.EISDIR, "Is a directory", file)
    if reason == "permission_denied":
        return PermissionError(errno.EACCES, "Permission denied", file)
    if reason == "not_a_directory":
        return NotADirectoryError(errno.ENOTDIR, "Not a directory", file)
    if exc.code == "disk_full":
        return OSError(errno.ENOSPC, "No space left in the sandbox", file)
    if reason == "outside_workspace" or exc.code == "path_outside_workspace":
        return None
    return exc


def _raise_mapped(exc: SandlotError, file: str) -> None:
    """Raise what ``exc`` means for inspect; return when the other way is to be taken."""
    mapped = file_error(exc, file)
    if mapped is exc:
        raise exc
    if mapped is not None:
        raise mapped from exc


def _too_large() -> OutputLimitExceededError:
    return OutputLimitExceededError(SandboxEnvironmentLimits.MAX_READ_FILE_SIZE_STR, None)


def _by_exit(code: int | None, file: str, stderr: str) -> Exception:
    said = stderr.casefold()
    if code == _IS_DIR or "is a directory" in said:
        return IsADirectoryError(errno.EISDIR, "Is a directory", file)
    if code == _MISSING or "no such file" in said:
        return FileNotFoundError(errno.ENOENT, "No such file or directory", file)
    if code == _DENIED or "permission denied" in said or "read-only" in said:
        return PermissionError(errno.EACCES, "Permission denied", file)
    if "not a directory" in said:
        return NotADirectoryError(errno.ENOTDIR, "Not a directory", file)
    if "no space" in said or "quota" in said:
        return OSError(errno.ENOSPC, "No space left in the sandbox", file)
    if code == _NOT_REGULAR:
        return OSError(errno.EINVAL, "Not a regular file", file)
    return RuntimeError(f"could not reach {file!r} in the sandbox (exit {code}): {stderr.strip()[-300:]}")


class SessionFiles:
    """A session's files as inspect names them: relative to the workspace, or absolute."""

    def __init__(self, session: AsyncSession, workspace: str) -> None:
        self._session = session
        self.workspace = workspace.rstrip("/") or "/"

    def resolve(self, file: str) -> str:
        joined = file if file.startswith("/") else posixpath.join(self.workspace, file)
        return "/" + posixpath.normpath(joined).lstrip("/")

    def _inside(self, path: str) -> bool:
        return path == self.workspace or path.startswith(self.workspace + "/")

    async def read(self, file: str) -> bytes:
        path = self.resolve(file)
        if self._inside(path):
            try:
                return await self._download(path)
            except PayloadTooLarge as exc:
                raise _too_large() from exc
            except SandlotError as exc:
                _raise_mapped(exc, file)
        return await self._read_elsewhere(path, file)

    async def _download(self, path: str) -> bytes:
        limit = SandboxEnvironmentLimits.MAX_READ_FILE_SIZE
        async with self._session.open_file(path) as found:
            if found.size > limit:
                raise _too_large()
            data = bytearray()
            async for chunk in found.chunks():
                data += chunk
                if len(data) > limit:
                    raise _too_large()
            return bytes(data)

    async def _run(self, argv: list[str], **kw: Any) -> tuple[int | None, bytes, str]:
        result = await self._session.shell.exec(argv, timeout=600, **kw)
        out, err = output_bytes(result)
        if result.get("timed_out"):
            raise TimeoutError(f"the file operation {argv[:2]!r} timed out in the sandbox")
        return result["exit_code"], out, err.decode(errors="replace")

    async def _read_elsewhere(self, path: str, file: str) -> bytes:
        """A file outside the workspace: its size, then its pieces, as the sandbox user."""
        code, out, err = await self._run(["/bin/sh", "-c", _SIZE, "sh", path])
        if code != 0 or not out.strip().isdigit():
            raise _by_exit(code, file, err)
        size = int(out.strip())
        if size > SandboxEnvironmentLimits.MAX_READ_FILE_SIZE:
            raise _too_large()
        data = bytearray()
        piece = PIECE_MIB << 20
        for index in range((size + piece - 1) // piece or 1):
            argv = ["/bin/sh", "-c", _PIECE, "sh", path, str(index * PIECE_MIB), str(PIECE_MIB)]
            result = await self._session.shell.exec(argv, timeout=600)
            if result.get("truncated"):
                raise RuntimeError(
                    "the service's exec_output_limit is below 4 MiB: a file cannot be read here"
                )
            data += output_bytes(result)[0]
        if len(data) > SandboxEnvironmentLimits.MAX_READ_FILE_SIZE:
            raise _too_large()
        return bytes(data)

    async def write(self, file: str, data: bytes) -> None:
        path = self.resolve(file)
        if self._inside(path):
            try:
                await self._session.files.write(path, data)
                return
            except SandlotError as exc:
                _raise_mapped(exc, file)
        code, _, err = await self._run(["/bin/sh", "-c", _WRITE, "sh", path], stdin=data)
        if code != 0:
            raise _by_exit(code, file, err)
