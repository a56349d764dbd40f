# shellcheck shell=sh
# shellcheck disable=SC2154
# (SC2154: $__sl_S is set by BIND (sandlot.runtime.shell_boot) once the shell has a session.)
# shellcheck disable=SC1091
# (SC1091: the sourced env file is the one this shell wrote after the last command.)
# shellcheck disable=SC2164
# (SC2164: a saved cwd that is gone leaves the command where it is, as a shell would.)
# Placeholders filled by sandlot.runtime.shell_boot: @HELPER@ (then @PATH@, @UNSET@), @SPOOL@.
# __sl_run TOKEN COMMAND TRACEPARENT:
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
# ---
#@include byte_copy.sh
__sl_run() {
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
