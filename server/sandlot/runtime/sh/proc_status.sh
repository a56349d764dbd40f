# shellcheck shell=sh
# shellcheck disable=SC2086
# (SC2086: $__sl_fields splits into the stat fields on purpose.)
# Run as ``sh -c PROC_STATUS sh DIR``: prints four lines: the exit code (empty while it runs or
# if it was killed), whether its session (or its terminal's, DIR/tsid) still has processes
# (1/0), the output size in bytes, then "CPU_TICKS PEAK_KB" summed/maxed over those sessions'
# live processes (0 0 when none).
# ---
#@include stat_function.sh

d=$1
read -r sid < "$d/pid" 2>/dev/null || sid=
read -r tsid < "$d/tsid" 2>/dev/null || tsid=$sid
alive=0; ticks=0; peak=0
if [ -n "$sid" ]; then
  for f in /proc/[0-9]*/stat; do
    __sl_stat "$f" || continue
    set -- $__sl_fields
    [ "$4" = "$sid" ] || [ "$4" = "$tsid" ] || continue
    [ "$1" = Z ] && continue  # dead, only not reaped yet
    alive=1
    ticks=$((ticks + ${12} + ${13}))
    p=${f%/stat}
    while read -r k v _; do
      if [ "$k" = VmHWM: ] && [ "$v" -gt "$peak" ]; then peak=$v; fi
    done < "$p/status" 2>/dev/null
  done
fi
# rc is read after the scan: the leader writes it just before it exits, so a command that
# ended during the scan shows as exited, never as killed
rc=; [ -r "$d/rc" ] && read -r rc < "$d/rc"
size=$(stat -c %s "$d/out" 2>/dev/null || echo 0)
printf '%s\n%s\n%s\n%s %s\n' "$rc" "$alive" "$size" "$ticks" "$peak"
