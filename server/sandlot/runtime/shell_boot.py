"""What the persistent shell (:mod:`sandlot.runtime.shell`) is told when it starts: the shell
functions that frame a session's command (``__sl_run``) and a program of the service's
(``__sl_do``), and the line that binds a session's state directory."""

from __future__ import annotations

from sandlot.runtime.scripts import BYTE_COPY, HELPER_PATH, HELPER_UNSET

__all__ = ["BIND", "BOOT", "ONE_SHOT", "SPOOL_FAILED"]

# $1: end token, $2: the command, $3: a W3C traceparent for the command (may be empty). The
# state directory ($__sl_S) is bound later (BIND), when the shell knows its session: a shell
# opened while its sandbox waits in the pool has none yet.
#
# __sl_do TOKEN FILE COUNT PROGRAM ARGS... runs a program of the service's with the helper PATH
# and none of a session's state; its input is /dev/null (COUNT empty) or COUNT bytes that
# follow in the shell's own input. Those are sent only once the shell said "go TOKEN": the
# shell then holds nothing of them in its input buffer, and `__sl_take` takes exactly them into
# FILE (a spool on the state tmpfs) before the program starts, so a program that reads less,
# fails or hangs can never leave any for the shell to read as commands. MODE "own" runs it with
# this shell's environment (the sandbox's own: a tenant's one-shot command, ONE_SHOT) rather
# than ours. The ready line says whether this shell has `head` and `cat` to take input so
# ("in"), and `setsid`, `mkfifo` and `sleep` for ONE_SHOT ("x"; `$__sl_ss` is setsid).
_HELPER = "PATH=@PATH@; export PATH; unset @UNSET@ TRACEPARENT"
BOOT = (
    BYTE_COPY
    + r"""__sl_run() {
  (
    if [ -r "$__sl_S/env" ]; then . "$__sl_S/env"; cd "$__SL_CWD" 2>/dev/null; fi
    if [ -n "$3" ]; then export TRACEPARENT="$3"; else unset TRACEPARENT; fi
    trap '__SL_CWD=$PWD; export __SL_CWD; export -p > "$__sl_S/env"' EXIT
    eval "$2"
  ) </dev/null
  __sl_end "$1" "$?"
}
__sl_do() {
  __sl_t=$1; __sl_s=$2; __sl_n=$3; __sl_m=$4; __sl_p=$5; shift 5; __sl_f=/dev/null
  if [ -n "$__sl_n" ]; then
    printf 'go %s\n' "$__sl_t"; __sl_f=$__sl_s
    (
      @HELPER@; [ -d "${__sl_s%/*}" ] || mkdir -p "${__sl_s%/*}" 2>/dev/null; rm -f "$__sl_s"
      __sl_take "$__sl_n" | { cat > "$__sl_s" || { cat > /dev/null; exit 1; }; }
    ) || __sl_f=
  fi
  if [ -z "$__sl_f" ]; then
    echo @SPOOL@ >&2; (exit 125)
  elif [ "$__sl_m" = own ]; then
    ( eval "$__sl_p" ) < "$__sl_f"
  else
    ( @HELPER@; cd / && eval "$__sl_p" ) < "$__sl_f"
  fi
  __sl_end "$__sl_t" "$?"
  [ -z "$__sl_n" ] || rm -f "$__sl_s"
  unset __sl_t __sl_s __sl_f __sl_n __sl_m __sl_p
}
__sl_end() {
  printf '\n%s %d\n' "$1" "$2"
  printf '\n%s\n' "$1" >&2
}
read -r __sl_pid __sl_rest < /proc/self/stat
unset __sl_dd; if (@HELPER@; __sl_dd_ok); then __sl_dd=0; else __sl_dd=1; fi
__sl_can=; if ( @HELPER@; command -v head && command -v cat ) >/dev/null 2>&1; then __sl_can=in; fi
if __sl_ss=$( (@HELPER@; command -v mkfifo && command -v sleep && command -v setsid) 2>/dev/null)
then __sl_ss=${__sl_ss##*"
"}; else __sl_ss=; fi
[ -z "$__sl_ss" ] || __sl_can="$__sl_can x"
printf 'ready %s %s\n' "$__sl_pid" "$__sl_can"
unset __sl_pid __sl_rest __sl_can
""".replace("@HELPER@", _HELPER)
    .replace("@PATH@", HELPER_PATH)
    .replace("@UNSET@", " ".join(HELPER_UNSET))
)
SPOOL_FAILED = b"__sl_spool_failed"
BOOT = BOOT.replace("@SPOOL@", SPOOL_FAILED.decode())

BIND = '__sl_S=%s; mkdir -p "$__sl_S" 2>/dev/null\n'

#: ``__sl_do ... own ONE_SHOT DIR CWD EXPORTS ARGV...``: a tenant's one-shot command as a
#: ``docker exec`` runs it, in the shell kept for them (``ShellManager.launcher``): its pid on
#: stderr first (it leads a session of its own, so a timeout kills all it started), EXPORTS
#: (``export NAME='value'`` lines) over the sandbox's environment, in CWD, ARGV exec'd as given.
#: Its output goes through two new FIFOs relayed by ``cat``: once it exits, the relays get up
#: to 2 s to drain what background children still write (a ``docker exec`` waits as long), then
#: are killed, so no process it left behind can write into the shell's own output (its FIFOs
#: are gone with their readers: the next command's are new). When the relays end first, the
#: timer that would kill them is stopped (a stop lands asynchronously: its state is read until
#: it has), then killed with its ``sleep`` (found through /proc, so none is missed however far
#: it got): nothing is left running, and every child is reaped. Setting up fails with
#: SPOOL_FAILED and 125: the caller runs it with a ``docker exec`` instead.
ONE_SHOT = (
    r"""
d=$1; cwd=$2; ex=$3; shift 3; o=$d/x$$.o; e=$d/x$$.e
if ! (@HELPER@; [ -d "$d" ] || mkdir -p "$d"; rm -f "$o" "$e"; mkfifo -m 600 "$o" "$e") 2>/dev/null; then
  echo @SPOOL@ >&2; exit 125
fi
(@HELPER@; exec cat "$o") & co=$!
(@HELPER@; exec cat "$e" >&2) & ce=$!
(
  read -r me rest </proc/self/stat; printf '%s\n' "$me" >&2
  exec >"$o" 2>"$e"
  eval "$ex"
  if [ -n "$cwd" ]; then cd "$cwd" || exit 126; fi
  exec "$__sl_ss" "$@"
)
rc=$?
( (@HELPER@; exec sleep 2); kill $co $ce 2>/dev/null ) & k=$!
wait $co $ce
kill -STOP $k 2>/dev/null; t=
while read -r t t st rest < /proc/$k/stat 2>/dev/null && [ "$st" != T ] && [ "$st" != Z ]; do :; done
read -r t rest < /proc/$k/task/$k/children 2>/dev/null
kill -KILL $t $k 2>/dev/null; wait $k 2>/dev/null
exit $rc
""".replace("@HELPER@", _HELPER)
    .replace("@PATH@", HELPER_PATH)
    .replace("@UNSET@", " ".join(HELPER_UNSET))
    .replace("@SPOOL@", SPOOL_FAILED.decode())
)
