"""What the persistent shell (:mod:`sandlot.runtime.shell`) is told when it starts: the shell
functions that frame a session's command (``__sl_run``) and a program of the service's
(``__sl_do``), and the line that binds a session's state directory."""

from __future__ import annotations

from sandlot.runtime.scripts import HELPER_PATH, HELPER_UNSET

__all__ = ["BIND", "BOOT", "SPOOL_FAILED"]

# $1: end token, $2: the command, $3: a W3C traceparent for the command (may be empty). The
# state directory ($__sl_S) is bound later (BIND), when the shell knows its session: a shell
# opened while its sandbox waits in the pool has none yet.
#
# __sl_do TOKEN FILE COUNT PROGRAM ARGS... runs a program of the service's with the helper PATH
# and none of a session's state; its input is /dev/null (COUNT empty) or COUNT bytes that
# follow in the shell's own input. Those are sent only once the shell said "go TOKEN": the
# shell then holds nothing of them in its input buffer, and `head -c` takes exactly them into
# FILE (a spool on the state tmpfs) before the program starts, so a program that reads less,
# fails or hangs can never leave any for the shell to read as commands. The ready line says
# whether this shell has `head` and `cat` to take input so.
_HELPER = "PATH=@PATH@; export PATH; unset @UNSET@ TRACEPARENT"
BOOT = (
    r"""__sl_run() {
  (
    if [ -r "$__sl_S/env" ]; then . "$__sl_S/env"; cd "$__SL_CWD" 2>/dev/null; fi
    if [ -n "$3" ]; then export TRACEPARENT="$3"; else unset TRACEPARENT; fi
    trap '__SL_CWD=$PWD; export __SL_CWD; export -p > "$__sl_S/env"' EXIT
    eval "$2"
  ) </dev/null
  printf '\n%s %d\n' "$1" "$?"
  printf '\n%s\n' "$1" >&2
}
__sl_do() {
  __sl_t=$1; __sl_s=$2; __sl_n=$3; __sl_p=$4; shift 4; __sl_f=/dev/null
  if [ -n "$__sl_n" ]; then
    printf 'go %s\n' "$__sl_t"; __sl_f=$__sl_s
    (
      @HELPER@; [ -d "${__sl_s%/*}" ] || mkdir -p "${__sl_s%/*}" 2>/dev/null; rm -f "$__sl_s"
      head -c "$__sl_n" | { cat > "$__sl_s" || { cat > /dev/null; exit 1; }; }
    ) || __sl_f=
  fi
  if [ -n "$__sl_f" ]; then
    ( @HELPER@; cd / && eval "$__sl_p" ) < "$__sl_f"
  else
    echo @SPOOL@ >&2; (exit 125)
  fi
  printf '\n%s %d\n' "$__sl_t" "$?"
  printf '\n%s\n' "$__sl_t" >&2
  [ -z "$__sl_n" ] || rm -f "$__sl_s"
  unset __sl_t __sl_s __sl_f __sl_n __sl_p
}
read -r __sl_pid __sl_rest < /proc/self/stat
__sl_can=; if ( @HELPER@; command -v head && command -v cat ) >/dev/null 2>&1; then __sl_can=in; fi
printf 'ready %s %s\n' "$__sl_pid" "$__sl_can"
unset __sl_pid __sl_rest __sl_can
""".replace("@HELPER@", _HELPER)
    .replace("@PATH@", HELPER_PATH)
    .replace("@UNSET@", " ".join(HELPER_UNSET))
)
SPOOL_FAILED = b"__sl_spool_failed"
BOOT = BOOT.replace("@SPOOL@", SPOOL_FAILED.decode())

BIND = '__sl_S=%s; mkdir -p "$__sl_S" 2>/dev/null\n'
