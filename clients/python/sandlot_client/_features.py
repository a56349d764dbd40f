"""A session's features: ``shell``, ``files`` and ``python``, each a thin typed front for
:meth:`AsyncSession.activity` (one generated route serves every feature's activities), plus
:func:`output_bytes` to decode their results."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sandlot_client.aio import AsyncSession

__all__ = ["Files", "Python", "Shell", "output_bytes"]


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
    ) -> dict[str, Any]:
        """Run ``argv`` once in a fresh process (no shell state; several may run at once), in
        ``cwd`` (default: the workspace). ``stdout``/``stderr`` are base64 when ``encoding``
        says so (output that is not UTF-8); :func:`output_bytes` decodes either way."""
        args: dict[str, Any] = {"argv": argv, "timeout": timeout, "env": env or {}}
        if cwd is not None:
            args["cwd"] = cwd
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
    """``session.files``: bytes in and out of the workspace (base64 on the wire)."""

    def __init__(self, session: AsyncSession) -> None:
        self._s = session

    async def write(self, path: str, content: str | bytes) -> dict[str, Any]:
        if isinstance(content, bytes):
            return await self._s.activity(
                "files", "write", path=path, content=base64.b64encode(content).decode(), encoding="base64"
            )
        return await self._s.activity("files", "write", path=path, content=content)

    async def read(self, path: str) -> bytes:
        out = await self._s.activity("files", "read", path=path, encoding="base64")
        return base64.b64decode(out["content"])

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
