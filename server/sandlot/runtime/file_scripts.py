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
from sandlot.runtime.scripts import BYTE_COPY

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

#: ``__sl_walk WS REL MODE`` (REL as :func:`octal`): with MODE ``parent`` stop at REL's last
#: name (``$__sl_leaf``, in the current directory); ``follow`` also follows a link at the last
#: name; ``dir`` enters the last name too (the current directory is then REL itself).
#: ``__sl_mk=1`` creates missing directories on the way.
WALK = r"""
__sl_in() ( while :; do [ . -ef "$__sl_ws" ] && exit 0; [ . -ef / ] && exit 1; cd .. || exit 1; done )
__sl_link() {
  __sl_hops=$((__sl_hops + 1)); [ "$__sl_hops" -gt 40 ] && exit 16
  __sl_t=$(readlink -- "./$1"; echo .); __sl_t=${__sl_t%.}; __sl_t=${__sl_t%?}
  [ -n "$__sl_t" ] || exit 15
  case $__sl_t in
    /*)
      case $__sl_t in
        "$__sl_ws") __sl_t=. ;;
        "$__sl_ws"/*) __sl_t=${__sl_t#"$__sl_ws"/} ;;
        *) exit 10 ;;
      esac
      cd -P -- "$__sl_ws" || exit 20 ;;
  esac
  if [ -n "$__sl_todo" ]; then __sl_todo=$__sl_t/$__sl_todo; else __sl_todo=$__sl_t; fi
}
__sl_walk() {
  __sl_ws=$1; __sl_todo=$(printf '%b.' "$2"); __sl_todo=${__sl_todo%.}
  __sl_mode=$3; __sl_hops=0; __sl_leaf=
  cd -P -- "$__sl_ws" 2>/dev/null || exit 20
  while [ -n "$__sl_todo" ]; do
    case $__sl_todo in
      */*) __sl_c=${__sl_todo%%/*}; __sl_todo=${__sl_todo#*/} ;;
      *) __sl_c=$__sl_todo; __sl_todo= ;;
    esac
    case $__sl_c in
      ''|.) continue ;;
      ..) cd .. || exit 13; __sl_in || exit 10; continue ;;
    esac
    if [ -z "$__sl_todo" ] && [ "$__sl_mode" != dir ]; then
      if [ "$__sl_mode" = follow ] && [ -L "./$__sl_c" ]; then __sl_link "$__sl_c"; continue; fi
      __sl_leaf=$__sl_c; return 0
    fi
    if [ -L "./$__sl_c" ]; then __sl_link "$__sl_c"; continue; fi
    if [ -d "./$__sl_c" ]; then cd "./$__sl_c" || exit 13
    elif [ -e "./$__sl_c" ]; then exit 12
    elif [ "${__sl_mk:-0}" = 1 ]; then
      mkdir "./$__sl_c" 2>/dev/null || [ -d "./$__sl_c" ] || exit 13
      cd "./$__sl_c" || exit 13
    else
      # missing from here on; what follows must not climb back out once it is made
      case "/$__sl_todo/" in */../*) exit 10 ;; esac
      exit 15
    fi

  done
  [ "$__sl_mode" = dir ] || exit 11
}
"""

#: ``sh -c FILE_READ sh WS REL LIMIT``: on stdout ``K<size>\n`` then the file's bytes.
FILE_READ = (
    WALK
    + BYTE_COPY
    + r"""
__sl_walk "$1" "$2" follow
f=./$__sl_leaf
[ -e "$f" ] || exit 15
[ -d "$f" ] && exit 11
[ -f "$f" ] || exit 17
[ -r "$f" ] || exit 13
exec 3< "$f" || exit 13
size=$(stat -c %s "$f") || exit 15
if [ "$size" -gt "$3" ]; then echo "$size" >&2; exit 18; fi
printf 'K%s\n' "$size"
__sl_take "$size" <&3
"""
)

#: ``sh -c FILE_WRITE sh WS REL SIZE`` with the bytes on stdin: written to a new file beside
#: the target, which replaces it (keeping its mode) only once all SIZE bytes arrived; a
#: read-only file or directory is refused, as the sandbox user would be refused.
FILE_WRITE = (
    WALK
    + BYTE_COPY
    + r"""
__sl_mk=1; __sl_walk "$1" "$2" follow
f=./$__sl_leaf; size=$3; mode=
[ -d "$f" ] && exit 11
if [ -e "$f" ]; then [ -w "$f" ] || exit 13; mode=$(stat -c %a "$f"); fi
[ -w . ] || exit 13
# a name no one can guess, created by this very open (set -C: never an existing file or FIFO)
tmp=$(mktemp -u ./.sandlot-upload-XXXXXXXXXX) || exit 13
set -C
__sl_take "$size" > "$tmp" || { rm -f "$tmp"; exit 14; }
set +C
got=$(stat -c %s "$tmp")
[ "$((got))" -eq "$size" ] || { rm -f "$tmp"; exit 21; }
[ -z "$mode" ] || chmod "$mode" "$tmp"
mv -f "$tmp" "$f" || { rm -f "$tmp"; exit 13; }
"""
)

#: ``sh -c FS_LIST sh WS REL``: per entry ``TYPE\0SIZE\0NAME\0`` (type: file, dir, symlink, other).
FS_LIST = (
    WALK
    + r"""
__sl_walk "$1" "$2" dir
for n in * .[!.]* ..?*; do
  f=./$n
  if [ -L "$f" ]; then t=symlink; elif [ -d "$f" ]; then t=dir; elif [ -f "$f" ]; then t=file
  elif [ -e "$f" ]; then t=other; else continue; fi
  s=0; [ "$t" = file ] && s=$(stat -c %s "$f" 2>/dev/null || echo 0)
  printf '%s\0%s\0%s\0' "$t" "$s" "$n"
done
"""
)

#: ``sh -c FS_STAT sh WS REL``: ``TYPE\0SIZE\0MTIME\0`` of REL itself (a link is not followed).
FS_STAT = (
    WALK
    + r"""
if [ -z "$2" ]; then cd -P -- "$1" || exit 20; f=.; else __sl_walk "$1" "$2" parent; f=./$__sl_leaf; fi
if [ -L "$f" ]; then t=symlink; elif [ -d "$f" ]; then t=dir; elif [ -f "$f" ]; then t=file

elif [ -e "$f" ]; then t=other; else exit 15; fi
s=0; [ "$t" = file ] && s=$(stat -c %s "$f")
printf '%s\0%s\0%s\0' "$t" "$s" "$(stat -c %Y "$f" 2>/dev/null || echo 0)"
"""
)

#: ``sh -c FS_MKDIR sh WS REL``: REL and its missing parents.
FS_MKDIR = WALK + '\n__sl_mk=1; __sl_walk "$1" "$2" dir\n'

#: ``sh -c FS_REMOVE sh WS REL``: REL (a directory with everything in it; a link, not its target).
FS_REMOVE = (
    WALK
    + r"""
__sl_walk "$1" "$2" parent
[ -e "./$__sl_leaf" ] || [ -L "./$__sl_leaf" ] || exit 15
rm -rf "./$__sl_leaf" || exit 13
"""
)

#: ``sh -c FS_MOVE sh WS FROM TO``: rename FROM to TO, or into TO when that is a directory.
FS_MOVE = (
    WALK
    + r"""
__sl_walk "$1" "$2" parent
[ -e "./$__sl_leaf" ] || [ -L "./$__sl_leaf" ] || exit 15
from=$(pwd -P; echo .); from=${from%.}; from=${from%?}; name=$__sl_leaf
__sl_mk=1; __sl_walk "$1" "$3" follow
to=$__sl_leaf
if [ -d "./$to" ]; then cd "./$to" || exit 13; to=$name; fi
mv -fT "$from/$name" "./$to" || exit 13
"""
)

#: ``sh -c IMPORT_CHECK sh WS DIR...`` (each DIR as :func:`octal`): fails (10, the offending
#: DIR's index on stdout) if an archive member going into DIR would reach outside through a
#: link already on disk.
IMPORT_CHECK = (
    WALK
    + r"""
ws=$1; shift; i=0
for d in "$@"; do
  ( __sl_walk "$ws" "$d" dir ) 2>/dev/null
  rc=$?
  case $rc in 0|15) ;; 12) ;; *) echo "$i"; exit "$rc" ;; esac
  i=$((i + 1))
done
"""
)

#: ``sh -c FIX_MODES sh WS MODE REL [MODE REL]...`` (each REL as :func:`octal`): set the final
#: modes of directories that were unpacked writable.
FIX_MODES = r"""
cd -P -- "$1" || exit 20; shift
while [ "$#" -ge 2 ]; do
  d=$(printf '%b.' "$2"); d=${d%.}
  chmod "$1" "./$d" 2>/dev/null; shift 2
done
exit 0
"""


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
