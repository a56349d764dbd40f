# shellcheck shell=sh
# shellcheck disable=SC2086
# (SC2086: $__sl_fields splits into the stat fields, and $__sl_sig is a signal's name: both meant.)
# Run as ``sh -c KILL_SESSION sh SID...``: stops, then kills, every process in the sessions
# SID... Stopping first keeps a fork loop from outrunning the sweep. SIGKILL lands
# asynchronously: it looks again (for up to 3 s) until none is left but zombies, so whoever
# asks right after finds the processes gone.
# ---
#@include stat_function.sh

sids=" $* "
__sl_sweep() {
  __sl_left=
  for f in /proc/[0-9]*/stat; do
    __sl_stat "$f" || continue
    set -- $__sl_fields
    if [ "$1" != Z ] && case "$sids" in *" $4 "*) true ;; *) false ;; esac; then
      p=${f#/proc/}; p=${p%/stat}
      kill -$__sl_sig "$p" 2>/dev/null && __sl_left="$__sl_left $p"
    fi
  done
}
for __sl_sig in STOP STOP KILL; do __sl_sweep; done
i=0
while :; do
  __sl_sweep
  [ -z "$__sl_left" ] || [ $i -ge 150 ] && break
  sleep 0.02; i=$((i + 1))
done
exit 0
