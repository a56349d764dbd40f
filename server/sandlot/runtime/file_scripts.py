"""Shell programs that touch workspace files inside a sandbox, as the sandbox user.

Names are bytes a tenant chose (newlines included), so no program here parses a line of
output that contains one: paths go in as arguments (every byte escaped, see :func:`octal`),
answers come back as exit codes, digits, or NUL-separated fields. Every program starts with
:data:`WALK`, which reaches a path one component at a time from the (physical) workspace and
follows a symbolic link only by hand:
an absolute target must lie under the workspace, and after every ``..`` the directory reached
must still be inside it (compared by device and inode, never by name). So no component of a
path, planted link or not, leads out; a race with the sandbox's own processes can at worst
make the program act where the sandbox user could act anyway, since it runs as that user.

Exit codes (see :func:`file_error`): 10 outside the workspace, 11 is a directory, 12 a parent
is not a directory, 13 permission denied, 14 write failed (disk full), 15 nothing there,
16 too many links, 17 not a regular file, 18 too large, 20 no workspace, 21 incomplete upload.
"""

from __future__ import annotations

from sandlot.domain.errors import (
    DiskFull,
    InvalidInput,
    NotFound,
    PathOutsideWorkspace,
    PayloadTooLarge,
    SandboxStateError,
    SandlotError,
)
from sandlot.runtime.programs import program

__all__ = [
    "FILE_EXIT_CODES",
    "FILE_READ",
    "FILE_WRITE",
    "FIX_MODES",
    "FS_LIST",
    "FS_MKDIR",
    "FS_MOVE",
    "FS_REMOVE",
    "FS_STAT",
    "IMPORT_CHECK",
    "file_error",
    "octal",
]

WALK = program("walk.sh")

FILE_READ = program("file_read.sh")

FILE_WRITE = program("file_write.sh")

FS_LIST = program("fs_list.sh")

FS_STAT = program("fs_stat.sh")

FS_MKDIR = program("fs_mkdir.sh")

FS_REMOVE = program("fs_remove.sh")

FS_MOVE = program("fs_move.sh")

IMPORT_CHECK = program("import_check.sh")

FIX_MODES = program("fix_modes.sh")


def octal(name: str) -> str:
    """``name``'s bytes as ``printf %b`` escapes: an argument that survives any byte (the
    engine's API carries arguments as JSON strings, which cannot hold invalid UTF-8)."""
    return "".join(f"\\0{b:03o}" for b in name.encode("utf-8", "surrogateescape"))


_MEANINGS: dict[int, tuple[type[SandlotError], str, str]] = {
    10: (PathOutsideWorkspace, "outside_workspace", "path {path!r} resolves outside the workspace"),
    11: (InvalidInput, "is_a_directory", "{path!r} is a directory"),
    12: (InvalidInput, "not_a_directory", "a parent of {path!r} is not a directory"),
    13: (InvalidInput, "permission_denied", "{path!r}: permission denied"),
    # head could not write: the sandbox's disk is full (EDQUOT, ENOSPC, EIO)
    14: (DiskFull, "disk_full", "no space left in the sandbox while writing {path!r} ({text})"),
    15: (NotFound, "not_found", "nothing at {path!r}"),
    16: (InvalidInput, "too_many_links", "too many links in {path!r}"),
    17: (InvalidInput, "not_a_regular_file", "{path!r} is not a regular file"),
    18: (PayloadTooLarge, "too_large", "{path!r} is {text} bytes; over the limit"),
    20: (SandboxStateError, "no_workspace", "the sandbox's workspace is gone"),
    21: (InvalidInput, "cut_short", "the upload of {path!r} was cut short; nothing was written"),
}

#: The exit codes the programs here give on purpose.
FILE_EXIT_CODES = frozenset(_MEANINGS)


def file_error(code: int | None, path: str, stderr: bytes = b"") -> SandlotError:
    """The error a file program's exit ``code`` means, naming ``path``; ``reason`` (in the
    problem body) says which, for a client to map (a directory, permission denied...)."""
    text = stderr.decode(errors="replace").strip()[-300:]
    if code in _MEANINGS:
        kind, reason, message = _MEANINGS[code]
        extra = {} if kind is SandboxStateError else {"path": path, "reason": reason}
        return kind(message.format(path=path, text=text or "too many"), **extra)
    return SandboxStateError(f"file operation on {path!r} failed (exit {code}): {text}")
