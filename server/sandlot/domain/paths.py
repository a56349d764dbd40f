"""Workspace path rules.

A client names files relative to the sandbox workspace, or absolutely inside it. Anything that
normalises to a place outside is refused before any I/O happens. Symlinks are checked by the
runtime, which is the only layer that can see them.
"""

from __future__ import annotations

import posixpath

from sandlot.domain.errors import InvalidInput, PathOutsideWorkspace

__all__ = ["resolve_cwd", "resolve_workspace_path"]


def resolve_workspace_path(workspace: str, path: str) -> str:
    """Return the absolute, normalised in-sandbox path for ``path``.

    Args:
        workspace: absolute workspace root inside the sandbox, e.g. ``/workspace``.
        path: what the client sent: relative to the workspace, or absolute under it.

    Raises:
        InvalidInput: empty path or one with a NUL byte.
        PathOutsideWorkspace: the path leaves the workspace.
    """
    if not path or "\x00" in path:
        raise InvalidInput("path must be a non-empty string without NUL bytes", path=path)
    root = posixpath.normpath(workspace)
    joined = path if path.startswith("/") else posixpath.join(root, path)
    # normpath keeps a leading '//' (POSIX allows it to mean something else); fold it.
    normal = "/" + posixpath.normpath(joined).lstrip("/")
    if normal != root and not normal.startswith(root.rstrip("/") + "/"):
        raise PathOutsideWorkspace(f"path {path!r} is outside the workspace {root}", path=path)
    return normal


def resolve_cwd(workspace: str, cwd: str | None) -> str | None:
    """A command's working directory: a relative one is taken from the workspace; an absolute
    one may be anywhere (a command can ``cd`` anywhere its user may go anyway)."""
    if cwd is None:
        return None
    if not cwd or "\x00" in cwd:
        raise InvalidInput("cwd must be a non-empty path without NUL bytes", field="cwd")
    joined = cwd if cwd.startswith("/") else posixpath.join(workspace, cwd)
    return "/" + posixpath.normpath(joined).lstrip("/")
