"""Small POSIX shell programs the runtimes run inside sandboxes.

They only use what busybox and Debian both have (sh, read, kill, readlink).
"""

from __future__ import annotations

__all__ = [
    "KILL_SESSION",
    "KILL_TREE",
    "LIMIT_COUNTS",
    "PROC_FOLLOW",
    "PROC_READ",
    "PROC_START",
    "PROC_STATUS",
    "REPORT_PID_AND_EXEC",
    "RESET_SANDBOX",
    "SCRATCH_DIRS",
    "STATE_ROOT",
    "WRITABLE_PLACES",
]

#: Where in-sandbox bookkeeping lives (persistent shell state): a tmpfs, never the workspace.
STATE_ROOT = "/dev/shm/.sandlot"

#: Run as ``sh -c REPORT_PID_AND_EXEC sh CWD ARGV...``: prints its pid on stderr, enters CWD
#: (when not empty; 126 and the reason on stderr when it cannot), then becomes ARGV. The pid is
#: that of a session leader (every ``docker exec`` starts a new session), which lets
#: KILL_SESSION find the whole process tree later, even processes that left the process group.
REPORT_PID_AND_EXEC = (
    'printf "%s\\n" "$$" >&2; if [ -n "$1" ]; then cd "$1" || exit 126; fi; shift; exec "$@"'
)

#: ``__sl_stat FILE``: the fields of a /proc/PID/stat after the command name, in
#: ``$__sl_fields`` (state, parent, group, session...). A command name is the process's own to
#: choose and may hold ")" and newlines: the whole file is read, and the name ends at its last ") ".
_STAT = r"""
__sl_stat() {
  __sl_fields=
  while IFS= read -r __sl_l || [ -n "$__sl_l" ]; do
    __sl_fields="$__sl_fields$__sl_l "
  done < "$1" 2>/dev/null

  [ -n "$__sl_fields" ] || return 1
  __sl_fields=${__sl_fields##*) }
}
"""

#: Run as ``sh -c KILL_SESSION sh SID``: stops, then kills, every process in session SID.
#: Stopping first keeps a fork loop from outrunning the sweep.
KILL_SESSION = (
    _STAT
    + r"""
sid=$1
for sig in STOP STOP KILL KILL KILL; do
  for f in /proc/[0-9]*/stat; do
    __sl_stat "$f" || continue
    set -- $__sl_fields
    if [ "$4" = "$sid" ]; then
      p=${f#/proc/}; p=${p%/stat}
      kill -$sig "$p" 2>/dev/null
    fi
  done
done
exit 0
"""
)

#: Run as ``sh -c KILL_TREE sh PID [children]``: stops, then kills, PID and every process
#: descending from it (found through the parent pids in /proc), so a fork loop cannot outrun the
#: sweep. With ``children`` PID itself is spared (a shell whose current command must die).
KILL_TREE = (
    _STAT
    + r"""
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
"""
)

#: Prints two counts of this container's cgroup (v1 or v2): processes the kernel OOM-killed,
#: and forks refused at the process limit. Built-ins only: it must run when no fork can.
LIMIT_COUNTS = r"""
oom=0; pids=0
for f in /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control; do
  if [ -r "$f" ]; then
    while read -r k v; do [ "$k" = oom_kill ] && oom=$v; done < "$f"; break
  fi
done
for f in /sys/fs/cgroup/pids.events /sys/fs/cgroup/pids/pids.events; do
  if [ -r "$f" ]; then
    while read -r k v; do [ "$k" = max ] && pids=$v; done < "$f"; break
  fi
done
echo "$oom $pids"
"""

#: The places a session can write besides the workspace; a reset empties them all.
SCRATCH_DIRS = ("/tmp", "/var/tmp", "/run/lock", "/dev/shm", "/dev/mqueue")

#: Lists, one per line, every place of the root filesystem the sandbox user may write: world-
#: writable, or its own, or its group's and group-writable (links are not places). Run on a
#: fresh container, it tells whether emptying the workspace and SCRATCH_DIRS is a clean slate.
WRITABLE_PLACES = r"""
u=$(id -u); g=$(id -g)
find / -xdev ! -type l \( -perm -0002 -o -user "$u" -o \( -group "$g" -perm -0020 \) \) -print 2>/dev/null
exit 0
"""

#: Run as ``sh -c RESET_SANDBOX sh WORKSPACE STATE DIR...``: kills every process outside the
#: container's own session 1 (the init and keepalive) and this script's, removes STATE, empties
#: WORKSPACE and every DIR, and fails unless no such process is left (zombies aside), all of
#: them are empty afterwards and no System V IPC object is left (an image without ``ipcrm``
#: cannot remove one: then the sandbox is replaced rather than handed on). It runs no program
#: to check (``ls`` and the like could be the session's own, early on the PATH).
RESET_SANDBOX = (
    _STAT
    + r"""
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
  # a directory without write (or search) permission keeps its entries: open them all first
  find "$d" -mindepth 1 -type d -exec chmod u+rwx {} + 2>/dev/null
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
"""
)

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
PROC_STATUS = (
    _STAT
    + r"""
d=$1
read -r sid < "$d/pid" 2>/dev/null || sid=
alive=0; ticks=0; peak=0
if [ -n "$sid" ]; then
  for f in /proc/[0-9]*/stat; do
    __sl_stat "$f" || continue
    set -- $__sl_fields
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
)

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
