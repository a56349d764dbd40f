"""``files``: read, write, list, stat, mkdir, remove and move inside the workspace only."""

from __future__ import annotations

import base64
from typing import Annotated, Any, Literal

from pydantic import Field

from sandlot.domain.errors import InvalidInput
from sandlot.domain.paths import resolve_workspace_path
from sandlot.features.base import ActivityArgs, Feature, SessionContext, activity
from sandlot.runtime.bridge import one_chunk
from sandlot.runtime.file_scripts import (
    FILE_EXIT_CODES,
    FS_LIST,
    FS_MKDIR,
    FS_MOVE,
    FS_REMOVE,
    FS_STAT,
    file_error,
    octal,
)
from sandlot.runtime.output import decode_input

__all__ = ["FilesFeature"]

PathArg = Annotated[str, Field(min_length=1, max_length=4096)]


class ReadArgs(ActivityArgs):
    path: PathArg
    encoding: Literal["utf-8", "base64"] = "utf-8"


class WriteArgs(ActivityArgs):
    path: PathArg
    content: Annotated[str | None, Field(max_length=64 << 20)] = None  # or a streamed call's body
    encoding: Literal["utf-8", "base64"] = "utf-8"


class PathArgs(ActivityArgs):
    path: PathArg


class ListArgs(ActivityArgs):
    path: PathArg = "."


class MoveArgs(ActivityArgs):
    source: PathArg
    destination: PathArg


def _name(raw: bytes) -> str:
    return raw.decode(errors="replace")


def _count(raw: bytes) -> int:
    """A size or a time from the sandbox's answer (its shell is the session's: 0 for nonsense)."""
    text = raw.strip()
    return int(text) if text.isdigit() and len(text) < 19 else 0


class FilesFeature(Feature):
    """Every path is resolved inside the sandbox, as the sandbox user, by the programs of
    :mod:`sandlot.runtime.file_scripts` (no component may lead outside the workspace); their
    answers are NUL-separated, so any name comes back whole."""

    name = "files"
    description = "Files inside the workspace (paths outside it, or symlinks out, are refused)."

    def _path(self, ctx: SessionContext, path: str) -> str:
        return resolve_workspace_path(ctx.workspace, path)

    def _rel(self, ctx: SessionContext, path: str) -> str:
        root = ctx.workspace.rstrip("/")
        return octal("" if path == root else path[len(root) + 1 :])

    async def _fs(self, ctx: SessionContext, script: str, *paths: str) -> list[bytes]:
        args = [ctx.workspace, *(self._rel(ctx, p) for p in paths)]
        res = await ctx.runtime.run_program(ctx.ref, script, args, timeout=60, output_limit=16 << 20)
        if res.timed_out:
            raise InvalidInput(f"the file operation on {paths[0]!r} timed out")
        if res.exit_code in FILE_EXIT_CODES:
            raise file_error(res.exit_code, paths[0], res.stderr)
        if res.exit_code != 0:
            detail = res.stderr.decode(errors="replace")[-300:]
            raise InvalidInput(f"the file operation on {paths[0]!r} failed (exit {res.exit_code}): {detail}")
        return res.stdout.split(b"\0")

    @activity(ReadArgs)
    async def read(self, ctx: SessionContext, args: ReadArgs) -> dict[str, Any]:
        """Read a file; text as UTF-8, or base64 when asked or when it is not UTF-8."""
        found = await ctx.runtime.read_file(
            ctx.ref, self._path(ctx, args.path), ctx.workspace, ctx.settings.max_file_bytes
        )
        data = await found.read_all()
        if args.encoding == "utf-8":
            try:
                return {"content": data.decode(), "encoding": "utf-8", "size": len(data)}
            except UnicodeDecodeError:
                pass
        return {"content": base64.b64encode(data).decode(), "encoding": "base64", "size": len(data)}

    @activity(WriteArgs, upload="content")
    async def write(self, ctx: SessionContext, args: WriteArgs) -> dict[str, Any]:
        """Write a file, creating parent directories (as the sandbox user: a read-only file
        stays as it is, with a 422); its content streamed in a streamed call (any size up to
        the file limit), or in ``content``."""
        path = self._path(ctx, args.path)
        if ctx.upload is not None:
            chunks, size = ctx.upload.chunks, ctx.upload.size
        elif args.content is not None:
            data = decode_input(args.content, args.encoding, "content")
            chunks, size = one_chunk(data), len(data)
        else:
            raise InvalidInput("content: field required (or stream it)", field="content")
        await ctx.runtime.write_file(ctx.ref, path, ctx.workspace, chunks, size)
        return {"path": path, "size": size}

    @activity(ListArgs)
    async def list(self, ctx: SessionContext, args: ListArgs) -> dict[str, Any]:
        """List a directory: name, type and size of each entry."""
        fields = await self._fs(ctx, FS_LIST, self._path(ctx, args.path))
        entries = [
            {"name": _name(fields[i + 2]), "type": _name(fields[i]), "size": _count(fields[i + 1])}
            for i in range(0, len(fields) - 2, 3)
        ]
        return {"entries": sorted(entries, key=lambda e: e["name"])}

    @activity(PathArgs)
    async def stat(self, ctx: SessionContext, args: PathArgs) -> dict[str, Any]:
        """Type, size and modification time of a path (a link is reported, not followed)."""
        found = await self._fs(ctx, FS_STAT, self._path(ctx, args.path))
        if len(found) < 3:
            raise InvalidInput(f"could not stat {args.path!r}", field="path")
        return {"type": _name(found[0]), "size": _count(found[1]), "mtime": _count(found[2])}

    @activity(PathArgs)
    async def mkdir(self, ctx: SessionContext, args: PathArgs) -> dict[str, Any]:
        """Create a directory and its parents."""
        await self._fs(ctx, FS_MKDIR, self._path(ctx, args.path))
        return {}

    @activity(PathArgs)
    async def remove(self, ctx: SessionContext, args: PathArgs) -> dict[str, Any]:
        """Remove a file or a directory tree."""
        path = self._path(ctx, args.path)
        if path == ctx.workspace.rstrip("/"):
            raise InvalidInput("refusing to remove the workspace itself", field="path")
        await self._fs(ctx, FS_REMOVE, path)
        return {}

    @activity(MoveArgs)
    async def move(self, ctx: SessionContext, args: MoveArgs) -> dict[str, Any]:
        """Move or rename a file or directory (into the destination when it is a directory)."""
        await self._fs(ctx, FS_MOVE, self._path(ctx, args.source), self._path(ctx, args.destination))
        return {}
