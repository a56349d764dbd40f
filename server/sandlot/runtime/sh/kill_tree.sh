# shellcheck shell=sh
# shellcheck disable=SC2086
# (SC2086: $__sl_fields splits into the stat fields on purpose.)
# Run as ``sh -c KILL_TREE sh PID [children]``: stops, then kills, PID and every process
# descending from it (found through the parent pids in /proc), so a fork loop cannot outrun the
# sweep. With ``children`` PID itself is spared (a shell whose current command must die).
# ---
#@include stat_function.sh

root=$1; spare=${2:-}
tree=" $1 "
for sig in STOP STOP KILL KILL; do
  grew=1
  while [ "$grew" = 1 ]; do
    grew=0
    for f in /proc/[0-9]*/stat; do
      __sl_stat "$f" || continue
      p=${f#/proc/}; p=${p%/stat}
      set -- $__sl_fields
      case "$tree" in *" $p "*) ;; *" $2 "*) tree="$tree$p "; grew=1 ;; esac
    done
  done
  for p in $tree; do
    if [ "$spare" = children ] && [ "$p" = "$root" ]; then continue; fi
    kill -$sig "$p" 2>/dev/null
  done
done
exit 0
