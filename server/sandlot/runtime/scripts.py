"""Small POSIX shell programs the runtimes run inside sandboxes.

They only use what busybox and Debian both have (sh, read, kill, readlink).
"""

from __future__ import annotations

__all__ = [
    "BYTE_COPY",
    "FREEZE_SANDBOX",
    "HELPER_PATH",
    "HELPER_UNSET",
    "KILL_SESSION",
    "KILL_TREE",
    "LIMIT_COUNTS",
    "LIVE_FUNCTION",
    "PROCESS_ROOT",
    "REPORT_PID_AND_EXEC",
    "RESET_SANDBOX",
    "SCRATCH_DIRS",
    "STATE_ROOT",
    "STAT_FUNCTION",
    "THAW_SANDBOX",
    "WRITABLE_PLACES",
]

#: The PATH the service's own programs run with, and the variables unset for them, whatever
#: the sandbox's environment says: a tenant's PATH or preloaded library must not stand in for
#: the tools a reset or a file program relies on.
HELPER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
HELPER_UNSET = ("LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "ENV", "BASH_ENV", "CDPATH")

#: Shell functions that move bytes in 64 KiB pieces where the image's ``dd`` counts in bytes
#: (busybox's and coreutils'), else with ``head``/``tail``, which busybox runs 4 KiB at a time
#: (a 1 MiB spool cost 10 ms of the sandbox's CPU through ``head -c``, 2 through ``dd``; each
#: small piece is also a frame for the engine and the server when it goes out on a stream).
#: ``__sl_dd_ok`` asks once per shell (the persistent shell asks at boot, so its programs never
#: do). ``__sl_take N``: N bytes of stdin (fewer only at its end); through ``dd`` never one
#: more, so what follows in a shell's input stays there (busybox's ``head -c`` reads past N from
#: a pipe: harmless only because the shell is sent nothing after a program's input until the
#: program has ended). ``__sl_copy FILE OFFSET COUNT``: at most COUNT bytes of FILE from OFFSET.
BYTE_COPY = r"""
__sl_dd_ok() {
  case ${__sl_dd-} in
    0) return 0 ;;
    1) return 1 ;;
  esac
  dd if=/dev/null bs=1 count=0 iflag=skip_bytes,count_bytes,fullblock 2>/dev/null && __sl_dd=0 || __sl_dd=1
  [ "$__sl_dd" = 0 ]
}
__sl_take() {
  if __sl_dd_ok; then dd bs=65536 count="$1" iflag=count_bytes,fullblock 2>/dev/null; else head -c "$1"; fi
}
__sl_copy() {
  if __sl_dd_ok; then dd if="$1" bs=65536 skip="$2" count="$3" iflag=skip_bytes,count_bytes 2>/dev/null
  else tail -c +$(($2 + 1)) "$1" 2>/dev/null | head -c "$3"; fi
}
"""

#: Where in-sandbox bookkeeping lives (persistent shell state): a tmpfs, never the workspace.
STATE_ROOT = "/dev/shm/.sandlot"

#: Where background processes keep their output (up to the output limit each) and bookkeeping
#: on Docker: the container's disk, within its disk limit, emptied by the reset with /tmp.
PROCESS_ROOT = "/tmp/.sandlot/proc"

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
STAT_FUNCTION = r"""
__sl_stat() {
  __sl_fields=
  while IFS= read -r __sl_l || [ -n "$__sl_l" ]; do
    __sl_fields="$__sl_fields$__sl_l "
  done < "$1" 2>/dev/null

  [ -n "$__sl_fields" ] || return 1
  __sl_fields=${__sl_fields##*) }
}
"""

#: ``__sl_live PID``: whether PID runs. Not ``kill -0``: where nothing reaps an orphan (a host
#: whose init does not, the local runtime's sandboxes have no init of their own) a process that
#: died stays a zombie, which ``kill -0`` takes for alive.
LIVE_FUNCTION = (
    STAT_FUNCTION
    + r"""
__sl_live() { __sl_stat "/proc/$1/stat" && [ "${__sl_fields%% *}" != Z ]; }
"""
)

#: Run as ``sh -c KILL_SESSION sh SID...``: stops, then kills, every process in the sessions
#: SID... Stopping first keeps a fork loop from outrunning the sweep. SIGKILL lands
#: asynchronously: it looks again (for up to 3 s) until none is left but zombies, so whoever
#: asks right after finds the processes gone.
KILL_SESSION = (
    STAT_FUNCTION
    + r"""
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
"""
)

#: Run as ``sh -c KILL_TREE sh PID [children]``: stops, then kills, PID and every process
#: descending from it (found through the parent pids in /proc), so a fork loop cannot outrun the
#: sweep. With ``children`` PID itself is spared (a shell whose current command must die).
KILL_TREE = (
    STAT_FUNCTION
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

#: Run as ``sh -c FREEZE_SANDBOX``, in a process of its own: stops every process the sandbox
#: user may signal but this one (one ``kill(-1)``: the kernel walks the task list while no fork
#: can run, so nothing escapes it), after printing the pids of those already stopped (at most
#: 256; a job stopped in a terminal stays so after the thaw), which the service keeps: nothing
#: in the sandbox, which the sandbox user could rewrite, tells the thaw what to leave. Not the
#: engine's cgroup freezer: a ``docker exec`` whose start races a freeze is caught in the frozen
#: cgroup and wedges the container (its unpause and removal hang with it until a host's root
#: kills the exec), while a stopped process keeps no new process from starting. But the kill
#: reaches an exec's own start too: runc's init, between taking the sandbox user's uid and
#: becoming the command, is the sandbox user's; stopped there, it held the engine's start of the
#: exec and with it every exit and start of the container (the freeze's own exec, the thaw, its
#: removal) until a host's root continued it. So it is continued at once: a process whose parent
#: is outside the sandbox (the engine's runc) and whose name is runc's init stage. The sandbox
#: user cannot make a process with no parent in the sandbox (orphans go to its init), only
#: rename the one a docker exec started: at worst that one process runs on through the freeze,
#: in its own sandbox, under its limits.
FREEZE_SANDBOX = (
    STAT_FUNCTION
    + r"""
n=0
for f in /proc/[0-9]*/stat; do
  __sl_stat "$f" || continue
  case ${__sl_fields%% *} in
    T|t) p=${f#/proc/}; [ $n -lt 256 ] && printf '%s ' "${p%/stat}"; n=$((n + 1)) ;;
  esac
done
kill -STOP -1 2>/dev/null
for f in /proc/[0-9]*/stat; do
  __sl_stat "$f" || continue
  set -- $__sl_fields
  [ "$2" = 0 ] || continue
  IFS= read -r name < "${f%/stat}/comm" 2>/dev/null || continue
  [ "$name" = "runc:[2:INIT]" ] || continue
  p=${f#/proc/}; kill -CONT "${p%/stat}" 2>/dev/null
done
exit 0
"""
)

#: Run as ``sh -c THAW_SANDBOX sh PID...``: continues every process but the PIDs
#: (FREEZE_SANDBOX's list: stopped before the freeze).
THAW_SANDBOX = r"""
keep=" $* "
for f in /proc/[0-9]*; do
  p=${f#/proc/}
  case $keep in *" $p "*) continue ;; esac
  kill -CONT "$p" 2>/dev/null
done
exit 0
"""

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
    STAT_FUNCTION
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
"""
)
