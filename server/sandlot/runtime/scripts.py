"""Small POSIX shell programs the runtimes run inside sandboxes.

They only use what busybox and Debian both have (sh, read, kill, readlink).
"""

from __future__ import annotations

__all__ = [
    "KILL_SESSION",
    "KILL_TREE",
    "OOM_COUNT",
    "PROC_FOLLOW",
    "PROC_READ",
    "PROC_START",
    "PROC_STATUS",
    "REPORT_PID_AND_EXEC",
    "RESET_SANDBOX",
    "RESOLVE_PATH",
    "STATE_ROOT",
]

#: Where in-sandbox bookkeeping lives (persistent shell state): a tmpfs, never the workspace.
STATE_ROOT = "/dev/shm/.sandlot"

#: Run as ``sh -c REPORT_PID_AND_EXEC sh ARGV...``: prints its pid on stderr, then becomes ARGV.
#: The pid is that of a session leader (every ``docker exec`` starts a new session), which lets
#: KILL_SESSION find the whole process tree later, even processes that left the process group.
REPORT_PID_AND_EXEC = 'printf "%s\\n" "$$" >&2; exec "$@"'

#: Run as ``sh -c KILL_SESSION sh SID``: stops, then kills, every process in session SID.
#: Stopping first keeps a fork loop from outrunning the sweep.
KILL_SESSION = r"""
sid=$1
for sig in STOP STOP KILL KILL KILL; do
  for f in /proc/[0-9]*/stat; do
    read -r line < "$f" 2>/dev/null || continue
    rest=${line##*) }
    set -- $rest
    if [ "$4" = "$sid" ]; then
      p=${f#/proc/}; p=${p%/stat}
      kill -$sig "$p" 2>/dev/null
    fi
  done
done
exit 0
"""

#: Run as ``sh -c KILL_TREE sh PID [children]``: stops, then kills, PID and every process
#: descending from it (found through the parent pids in /proc), so a fork loop cannot outrun the
#: sweep. With ``children`` PID itself is spared (a shell whose current command must die).
KILL_TREE = r"""
root=$1; spare=${2:-}
tree=" $1 "
for sig in STOP STOP KILL KILL; do
  grew=1
  while [ "$grew" = 1 ]; do
    grew=0
    for f in /proc/[0-9]*/stat; do
      read -r line < "$f" 2>/dev/null || continue
      p=${f#/proc/}; p=${p%/stat}
      rest=${line##*) }
      set -- $rest
      case "$tree" in *" $p "*) ;; *" $2 "*) tree="$tree$p "; grew=1 ;; esac
    done
  done
  for p in $tree; do
    if [ "$spare" = children ] && [ "$p" = "$root" ]; then continue; fi
    kill -$sig "$p" 2>/dev/null
  done
done
exit 0
"""

#: Run as ``sh -c RESOLVE_PATH sh PATH`` with PATH absolute and normalised. Prints six lines:
#: the longest existing prefix of PATH with every symlink resolved, the missing rest (may be
#: empty), the kind of the existing part (file, dir, other), its size in bytes, and the uid and
#: gid of the sandbox user (who should own files we write).
RESOLVE_PATH = r"""
p=$1; tail=
while :; do
  if [ -e "$p" ] || [ "$p" = / ]; then
    r=$(readlink -f -- "$p") || exit 3
    break
  fi
  if [ -L "$p" ]; then
    # dangling symlink: report where it points so the caller can refuse an escape
    r=$(readlink -f -- "$p" 2>/dev/null) || r=$(readlink -- "$p")
    break
  fi
  tail="/$(basename -- "$p")$tail"
  p=$(dirname -- "$p")
done
kind=other; size=0
if [ -d "$r" ]; then kind=dir; elif [ -f "$r" ]; then kind=file; size=$(wc -c < "$r"); fi
printf '%s\n%s\n%s\n%s\n%s\n%s\n' "$r" "${tail#/}" "$kind" "$size" "$(id -u)" "$(id -g)"
"""

#: Prints how many processes the kernel OOM-killed in this container (cgroup v1 or v2).
OOM_COUNT = r"""
for f in /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control; do
  if [ -r "$f" ]; then
    while read -r k v; do [ "$k" = oom_kill ] && { echo "$v"; exit 0; }; done < "$f"
  fi
done
echo 0
"""

#: Run as ``sh -c RESET_SANDBOX sh WORKSPACE STATE``: kills every process outside the container's
#: own session 1 (the init and keepalive) and this script's, empties WORKSPACE and removes STATE,
#: and fails unless the workspace is empty afterwards.
RESET_SANDBOX = r"""
ws=$1; state=$2; me=$$
for sig in STOP KILL KILL; do
  for f in /proc/[0-9]*/stat; do
    read -r line < "$f" 2>/dev/null || continue
    rest=${line##*) }
    set -- $rest
    if [ "$4" != 1 ] && [ "$4" != "$me" ]; then
      p=${f#/proc/}; p=${p%/stat}
      kill -$sig "$p" 2>/dev/null
    fi
  done
done
rm -rf "$state"
find "$ws" -mindepth 1 -maxdepth 1 -exec rm -rf {} + 2>/dev/null
[ -z "$(ls -A "$ws")" ] || { echo "workspace not empty" >&2; exit 1; }
"""

#: Run as ``sh -c PROC_START sh DIR CAP COMMAND [CWD]``: starts COMMAND detached in a new session
#: (its leader's pid is written to DIR/pid and printed), stdin from /dev/null, stdout and
#: stderr merged into DIR/out. Only the first CAP bytes are kept; the rest is read and dropped,
#: so the command never blocks or dies on a full pipe. When COMMAND ends its exit code goes to
#: DIR/rc.tmp, and once every byte is in DIR/out it is renamed to DIR/rc: "rc exists" means
#: "the output is complete".
PROC_START = r"""
d=$1; cap=$2; cmd=$3; cwd=${4:-}
mkdir -p "$d" || exit 1
: > "$d/out"
setsid sh -c '
  d=$1; cap=$2
  echo $$ > "$d/pid.tmp"; mv "$d/pid.tmp" "$d/pid"
  if [ -n "$4" ]; then cd "$4" || { echo "no such directory: $4" > "$d/out"; echo 126 > "$d/rc"; exit; }; fi
  { ( eval "$3" ) </dev/null 2>&1; echo $? > "$d/rc.tmp"; } | { head -c "$cap"; cat > /dev/null; } >> "$d/out"
  mv "$d/rc.tmp" "$d/rc"
' sh "$d" "$cap" "$cmd" "$cwd" </dev/null >/dev/null 2>&1 &
i=0
while [ ! -s "$d/pid" ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i + 1)); done
cat "$d/pid"
"""

#: Run as ``sh -c PROC_STATUS sh DIR``: prints four lines: the exit code (empty while it runs or
#: if it was killed), whether its session still has processes (1/0), the output size in bytes,
#: then "CPU_TICKS PEAK_KB" summed/maxed over the session's live processes (0 0 when none).
PROC_STATUS = r"""
d=$1
read -r sid < "$d/pid" 2>/dev/null || sid=
alive=0; ticks=0; peak=0
if [ -n "$sid" ]; then
  for f in /proc/[0-9]*/stat; do
    read -r line < "$f" 2>/dev/null || continue
    rest=${line##*) }
    set -- $rest
    [ "$4" = "$sid" ] || continue
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
"""

#: Run as ``sh -c PROC_READ sh DIR OFFSET LIMIT``: at most LIMIT bytes of DIR/out from OFFSET.
PROC_READ = r"""
tail -c +$(($2 + 1)) "$1/out" 2>/dev/null | head -c "$3"
"""

#: Run as ``sh -c PROC_FOLLOW sh DIR OFFSET``: writes DIR/out from OFFSET as it grows and ends
#: once all of it was written and the output is complete (DIR/rc exists) or the command's
#: session leader is gone (killed). The leader is checked before the size, so nothing written
#: before it died is missed.
PROC_FOLLOW = r"""
d=$1; off=$2
read -r sid < "$d/pid" || exit 3
while :; do
  fin=0; [ -e "$d/rc" ] && fin=1
  kill -0 "$sid" 2>/dev/null || fin=1
  size=$(stat -c %s "$d/out")
  if [ "$size" -gt "$off" ]; then
    tail -c +$((off + 1)) "$d/out" | head -c $((size - off))
    off=$size
  elif [ $fin = 1 ]; then
    exit 0
  else
    sleep 0.02
  fi
done
"""
