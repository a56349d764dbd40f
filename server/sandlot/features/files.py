"""``files``: read, write, list, stat, mkdir, remove and move inside the workspace only."""

from __future__ import annotations

import base64
import json
from typing import Annotated, Any, Literal

from pydantic import Field

from sandlot.domain.errors import InvalidInput, NotFound, PathOutsideWorkspace
from sandlot.domain.paths import resolve_workspace_path
from sandlot.features.base import ActivityArgs, Feature, SessionContext, activity
from sandlot.runtime.output import decode_input

__all__ = ["FilesFeature"]

PathArg = Annotated[str, Field(min_length=1, max_length=4096)]

# Runs in the session shell as: sandlot_fs OP WORKSPACE PATH [PATH2]. Every path is resolved
# (symlinks included) and must stay inside WORKSPACE; output is one JSON document.
_FS = r"""
op=$1; ws=$2; p=$3; q=$4
inside() {
  r=$(readlink -f -- "$1" 2>/dev/null) || r=$(readlink -f -- "$(dirname -- "$1")")/$(basename -- "$1")
  case "$r" in "$ws"|"$ws"/*) return 0 ;; *) echo '{"error":"outside"}'; exit 0 ;; esac
}
esc() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }
kind() {
  if [ -L "$1" ]; then t=symlink; elif [ -d "$1" ]; then t=dir; elif [ -f "$1" ]; then t=file
  elif [ -e "$1" ]; then t=other; else t=; fi
  s=0; [ "$t" = file ] && s=$(wc -c < "$1")
}
inside "$p"
[ -n "$q" ] && inside "$q"
case $op in
  list)
    [ -d "$p" ] || { [ -e "$p" ] && echo '{"error":"notdir"}' || echo '{"error":"missing"}'; exit 0; }
    printf '{"entries":['; first=1
    for f in "$p"/* "$p"/.[!.]* "$p"/..?*; do
      [ -e "$f" ] || [ -L "$f" ] || continue
      kind "$f"
      [ $first = 1 ] || printf ','; first=0
      printf '{"name":"%s","type":"%s","size":%s}' "$(esc "$(basename -- "$f")")" "$t" "$s"
    done
    printf ']}\n' ;;
  stat)
    kind "$p"
    [ -n "$t" ] || { echo '{"error":"missing"}'; exit 0; }
    printf '{"type":"%s","size":%s,"mtime":%s}\n' "$t" "$s" "$(date -r "$p" +%s 2>/dev/null || echo 0)" ;;
  mkdir) mkdir -p -- "$p" && echo '{}' || echo '{"error":"failed"}' ;;
  remove)
    [ -e "$p" ] || [ -L "$p" ] || { echo '{"error":"missing"}'; exit 0; }
    rm -rf -- "$p" && echo '{}' || echo '{"error":"failed"}' ;;
  move)
    [ -e "$p" ] || [ -L "$p" ] || { echo '{"error":"missing"}'; exit 0; }
    mkdir -p -- "$(dirname -- "$q")" && mv -f -- "$p" "$q" && echo '{}' || echo '{"error":"failed"}' ;;
esac
"""


class ReadArgs(ActivityArgs):
    path: PathArg
    encoding: Literal["utf-8", "base64"] = "utf-8"


class WriteArgs(ActivityArgs):
    path: PathArg
    content: Annotated[str, Field(max_length=64 << 20)]
    encoding: Literal["utf-8", "base64"] = "utf-8"


class PathArgs(ActivityArgs):
    path: PathArg


class ListArgs(ActivityArgs):
    path: PathArg = "."


class MoveArgs(ActivityArgs):
    source: PathArg
    destination: PathArg


def _q(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


class FilesFeature(Feature):
    name = "files"
    description = "Files inside the workspace (paths outside it, or symlinks out, are refused)."

    def _path(self, ctx: SessionContext, path: str) -> str:
        return resolve_workspace_path(ctx.workspace, path)

    async def _fs(self, ctx: SessionContext, op: str, *paths: str) -> dict[str, Any]:
        cmd = " ".join(["sh", "-c", _q(_FS), "sandlot_fs", op, _q(ctx.workspace), *map(_q, paths)])
        res = await ctx.shell().run(cmd, timeout=60, silence_timeout=None, output_limit=16 << 20)
        try:
            doc: dict[str, Any] = json.loads(res.stdout.decode())
        except (ValueError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"{op} failed: {res.stderr.decode(errors='replace')[:300]}") from exc
        error = doc.pop("error", None)
        if error == "outside":
            raise PathOutsideWorkspace(f"{paths[0]!r} resolves outside the workspace")
        if error == "missing":
            raise NotFound(f"nothing at {paths[0]!r}")
        if error == "notdir":
            raise InvalidInput(f"{paths[0]!r} is not a directory", field="path")
        if error:
            raise InvalidInput(f"{op} of {paths[0]!r} failed: {res.stderr.decode(errors='replace')}")
        return doc

    @activity(ReadArgs)
    async def read(self, ctx: SessionContext, args: ReadArgs) -> dict[str, Any]:
        """Read a file; text as UTF-8, or base64 when asked or when it is not UTF-8."""
        data = await ctx.runtime.read_file(
            ctx.ref, self._path(ctx, args.path), ctx.workspace, ctx.settings.max_file_bytes
        )
        if args.encoding == "utf-8":
            try:
                return {"content": data.decode(), "encoding": "utf-8", "size": len(data)}
            except UnicodeDecodeError:
                pass
        return {"content": base64.b64encode(data).decode(), "encoding": "base64", "size": len(data)}

    @activity(WriteArgs)
    async def write(self, ctx: SessionContext, args: WriteArgs) -> dict[str, Any]:
        """Write a file, creating parent directories."""
        data = decode_input(args.content, args.encoding, "content")
        path = self._path(ctx, args.path)
        await ctx.runtime.write_file(ctx.ref, path, data, ctx.workspace)
        return {"path": path, "size": len(data)}

    @activity(ListArgs)
    async def list(self, ctx: SessionContext, args: ListArgs) -> dict[str, Any]:
        """List a directory: name, type and size of each entry."""
        return await self._fs(ctx, "list", self._path(ctx, args.path))

    @activity(PathArgs)
    async def stat(self, ctx: SessionContext, args: PathArgs) -> dict[str, Any]:
        """Type, size and modification time of a path."""
        return await self._fs(ctx, "stat", self._path(ctx, args.path))

    @activity(PathArgs)
    async def mkdir(self, ctx: SessionContext, args: PathArgs) -> dict[str, Any]:
        """Create a directory and its parents."""
        return await self._fs(ctx, "mkdir", self._path(ctx, args.path))

    @activity(PathArgs)
    async def remove(self, ctx: SessionContext, args: PathArgs) -> dict[str, Any]:
        """Remove a file or a directory tree."""
        path = self._path(ctx, args.path)
        if path == ctx.workspace:
            raise InvalidInput("refusing to remove the workspace itself", field="path")
        return await self._fs(ctx, "remove", path)

    @activity(MoveArgs)
    async def move(self, ctx: SessionContext, args: MoveArgs) -> dict[str, Any]:
        """Move or rename a file or directory."""
        return await self._fs(ctx, "move", self._path(ctx, args.source), self._path(ctx, args.destination))
