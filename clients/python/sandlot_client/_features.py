"""A session's features: ``shell``, ``files`` and ``python``, each a thin typed front for
:meth:`AsyncSession.activity` (one generated route serves every feature's activities), plus
:func:`output_bytes` to decode their results."""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sandlot_client.aio import AsyncSession

__all__ = ["STREAM_ABOVE", "Files", "Python", "Shell", "output_bytes"]

#: Arguments (stdin and file contents included) larger than this go as a streamed call: the
#: bytes raw after the JSON arguments, up to the service's file limit, instead of inside a JSON
#: body (whose limit, ``max_request_bytes``, is 1 MiB by default).
STREAM_ABOVE = 256 * 1024


class Shell:
    """``session.shell``: ``run`` in the session's shell (state kept), ``exec`` argv once."""

    def __init__(self, session: AsyncSession) -> None:
        self._s = session

    async def run(
        self, command: str, *, timeout: float = 60, silence_timeout: float | None = None
    ) -> dict[str, Any]:
        args: dict[str, Any] = {"command": command, "timeout": timeout}
        if silence_timeout is not None:
            args["silence_timeout"] = silence_timeout
        return await self._s.activity("shell", "run", **args)

    async def exec(
        self,
        argv: list[str],
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        stdin: str | bytes | None = None,
        timeout: float = 60,
        user: str | None = None,
    ) -> dict[str, Any]:
        """Run ``argv`` once in a fresh process (no shell state; several may run at once), in
        ``cwd`` (default: the workspace), as ``user`` when the environment allows it (403
        ``NotPermitted`` otherwise). ``stdout``/``stderr`` are base64 when ``encoding`` says so
        (output that is not UTF-8); :func:`output_bytes` decodes either way. A large stdin
        (or argv) is streamed, up to the service's file limit."""
        args: dict[str, Any] = {"argv": argv, "timeout": timeout, "env": env or {}}
        if cwd is not None:
            args["cwd"] = cwd
        if user is not None:
            args["user"] = user
        data = stdin.encode() if isinstance(stdin, str) else stdin
        if len(data or b"") + len(json.dumps(args)) > STREAM_ABOVE:
            return await self._s.activity_streamed("shell", "exec", data or b"", **args)
        if isinstance(stdin, bytes):
            args["stdin"], args["stdin_encoding"] = base64.b64encode(stdin).decode(), "base64"
        elif stdin is not None:
            args["stdin"] = stdin
        return await self._s.activity("shell", "exec", **args)


def output_bytes(result: dict[str, Any]) -> tuple[bytes, bytes]:
    """The exact ``(stdout, stderr)`` bytes of a ``shell.run`` or ``shell.exec`` result."""
    if result.get("encoding") == "base64":
        return base64.b64decode(result["stdout"]), base64.b64decode(result["stderr"])
    return str(result["stdout"]).encode(), str(result["stderr"]).encode()


class Files:
    """``session.files``: bytes in and out of the workspace: small writes inside JSON (base64),
    large ones streamed; reads come raw, any size up to the service's file limit."""

    def __init__(self, session: AsyncSession) -> None:
        self._s = session

    async def write(self, path: str, content: str | bytes) -> dict[str, Any]:
        data = content.encode() if isinstance(content, str) else content
        if len(data) > STREAM_ABOVE:
            return await self._s.activity_streamed("files", "write", data, path=path)
        if isinstance(content, bytes):
            return await self._s.activity(
                "files", "write", path=path, content=base64.b64encode(content).decode(), encoding="base64"
            )
        return await self._s.activity("files", "write", path=path, content=content)

    async def read(self, path: str) -> bytes:
        """The file's bytes (``NotFound`` when there is none)."""
        async with self._s.open_file(path) as found:
            return b"".join([chunk async for chunk in found.chunks()])

    async def list(self, path: str = ".") -> dict[str, Any]:
        return await self._s.activity("files", "list", path=path)

    async def remove(self, path: str) -> dict[str, Any]:
        return await self._s.activity("files", "remove", path=path)


class Python:
    """``session.python``: code run in the session's interpreter."""

    def __init__(self, session: AsyncSession) -> None:
        self._s = session

    async def run(self, code: str, *, timeout: float = 60) -> dict[str, Any]:
        return await self._s.activity("python", "run", code=code, timeout=timeout)
