# shellcheck shell=sh
# Run as ``sh -c THAW_SANDBOX sh PID...``: continues every process but the PIDs
# (FREEZE_SANDBOX's list: stopped before the freeze).
# ---

keep=" $* "
for f in /proc/[0-9]*; do
  p=${f#/proc/}
  case $keep in *" $p "*) continue ;; esac
  kill -CONT "$p" 2>/dev/null
done
exit 0
