# shellcheck shell=sh
# shellcheck disable=SC2086
# (SC2086: $__sl_fields splits into the stat fields on purpose.)
# Run as ``sh -c RESET_SANDBOX sh WORKSPACE STATE DIR...``: kills every process outside the
# container's own session 1 (the init and keepalive) and this script's, removes STATE, empties
# WORKSPACE and every DIR, and fails unless no such process is left (zombies aside), all of
# them are empty afterwards and no System V IPC object is left (an image without ``ipcrm``
# cannot remove one: then the sandbox is replaced rather than handed on). It runs no program
# to check (``ls`` and the like could be the session's own, early on the PATH).
# ---
#@include stat_function.sh

ws=$1; state=$2; shift 2; dirs=$*; me=$$
for sig in STOP KILL KILL; do
  for f in /proc/[0-9]*/stat; do
    __sl_stat "$f" || continue
    set -- $__sl_fields
    if [ "$4" != 1 ] && [ "$4" != "$me" ]; then
      p=${f#/proc/}; p=${p%/stat}
      kill -$sig "$p" 2>/dev/null
    fi
  done
done
rm -rf "$state"
chmod 755 "$ws" 2>/dev/null  # the workspace itself is as it was given, and can be emptied
for d in "$ws" $dirs; do
  [ -d "$d" ] || continue
  # a directory without write (or search) permission keeps its entries: open the closed ones
  # a level at a time (a walk cannot enter a closed directory before it is opened: with one
  # walk, a closed directory under a closed one made every reset fail), one chmod for many
  # (one per directory, 100,000 of them outlasted the reset); 16 levels deep at most
  n=0
  while [ $n -lt 16 ]; do
    closed=$(find "$d" -mindepth 1 -type d ! -perm -u+rwx -print -prune 2>/dev/null | head -n 1)
    [ -n "$closed" ] || break
    find "$d" -mindepth 1 -type d ! -perm -u+rwx -prune -exec chmod u+rwx {} + 2>/dev/null
    n=$((n + 1))
  done
  find "$d" -mindepth 1 -maxdepth 1 -exec rm -rf {} + 2>/dev/null
done

command -v ipcrm >/dev/null 2>&1 && ipcrm -a 2>/dev/null
bad=0; tries=0

while :; do  # SIGKILL lands asynchronously: look again, a few times, until none is left
  left=
  for f in /proc/[0-9]*/stat; do
    __sl_stat "$f" || continue
    set -- $__sl_fields
    if [ "$1" != Z ] && [ "$4" != 1 ] && [ "$4" != "$me" ]; then
      p=${f#/proc/}; p=${p%/stat}; left="$left $p"; kill -KILL "$p" 2>/dev/null
    fi
  done
  [ -z "$left" ] && break
  tries=$((tries + 1))
  if [ "$tries" -ge 30 ]; then echo "processes survived the reset:$left" >&2; bad=1; break; fi
  sleep 0.1
done

for d in "$ws" $dirs; do
  [ -d "$d" ] || continue
  for x in "$d"/* "$d"/.[!.]* "$d"/..?*; do
    if [ -e "$x" ] || [ -L "$x" ]; then echo "not empty after the reset: $d" >&2; bad=1; break; fi
  done
done
for f in /proc/sysvipc/shm /proc/sysvipc/sem /proc/sysvipc/msg; do
  [ -r "$f" ] || continue
  n=0; while read -r _; do n=$((n + 1)); done < "$f"
  [ "$n" -le 1 ] || { echo "System V IPC objects left: $f" >&2; bad=1; }
done
exit $bad
