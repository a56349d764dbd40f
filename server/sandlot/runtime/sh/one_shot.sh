# shellcheck shell=sh
# shellcheck disable=SC2154
# (SC2154: $__sl_ss (setsid's path) is set by boot.sh in the shell that runs this.)
# shellcheck disable=SC2086
# (SC2086: $t $k and $co $ce are pid lists, split on purpose.)
# ``__sl_do ... own ONE_SHOT DIR CWD EXPORTS ARGV...``: a tenant's one-shot command as a
# ``docker exec`` runs it, in the shell kept for them (``ShellManager.launcher``): its pid on
# stderr first (it leads a session of its own, so a timeout kills all it started), EXPORTS
# (``export NAME='value'`` lines) over the sandbox's environment, in CWD, ARGV exec'd as given.
# Its output goes through two new FIFOs relayed by ``cat``: once it exits, the relays get up
# to 2 s to drain what background children still write (a ``docker exec`` waits as long), then
# are killed, so no process it left behind can write into the shell's own output (its FIFOs
# are gone with their readers: the next command's are new). When the relays end first, the
# timer that would kill them is stopped (a stop lands asynchronously: its state is read until
# it has), then killed with its ``sleep`` (found through /proc, so none is missed however far
# it got): nothing is left running, and every child is reaped. Setting up fails with
# SPOOL_FAILED and 125: the caller runs it with a ``docker exec`` instead.
# Placeholders filled by sandlot.runtime.shell_boot: @HELPER@ (then @PATH@, @UNSET@), @SPOOL@.
# ---

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
