"""Small POSIX shell programs the runtimes run inside sandboxes.

They only use what busybox and Debian both have (sh, read, kill, readlink).
"""

from __future__ import annotations

__all__ = [
    "HELPER_PATH",
    "HELPER_UNSET",
    "KILL_SESSION",
    "KILL_TREE",
    "LIMIT_COUNTS",
    "PROC_FOLLOW",
    "PROC_KILL",
    "PROC_READ",
    "PROC_START",
    "PROC_STATUS",
    "PROC_STDIN",
    "REPORT_PID_AND_EXEC",
    "RESET_SANDBOX",
    "SCRATCH_DIRS",
    "STATE_ROOT",
    "WRITABLE_PLACES",
]

#: The PATH the service's own programs run with, and the variables unset for them, whatever
#: the sandbox's environment says: a tenant's PATH or preloaded library must not stand in for
#: the tools a reset or a file program relies on.
HELPER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
HELPER_UNSET = ("LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "ENV", "BASH_ENV", "CDPATH")

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

#: ``__sl_live PID``: whether PID runs. Not ``kill -0``: where nothing reaps an orphan (a host
#: whose init does not, the local runtime's sandboxes have no init of their own) a process that
#: died stays a zombie, which ``kill -0`` takes for alive.
_LIVE = (
    _STAT
    + r"""
__sl_live() { __sl_stat "/proc/$1/stat" && [ "${__sl_fields%% *}" != Z ]; }
"""
)

#: Run as ``sh -c KILL_SESSION sh SID...``: stops, then kills, every process in the sessions
#: SID... Stopping first keeps a fork loop from outrunning the sweep.
KILL_SESSION = (
    _STAT
    + r"""
sids=" $* "
for sig in STOP STOP KILL KILL KILL; do
  for f in /proc/[0-9]*/stat; do
    __sl_stat "$f" || continue
    set -- $__sl_fields
    if case "$sids" in *" $4 "*) true ;; *) false ;; esac; then
      p=${f#/proc/}; p=${p%/stat}
      kill -$sig "$p" 2>/dev/null
    fi
  done
done
exit 0
"""
)

#: Run as ``sh -c PROC_KILL sh DIR SID``: KILL_SESSION for a background process: its session
#: SID and, when it has a terminal, the terminal's session (DIR/tsid, digits only).
PROC_KILL = (
    r"""
d=$1; shift
t=; read -r t < "$d/tsid" 2>/dev/null
case $t in ""|*[!0-9]*) ;; *) set -- "$@" "$t" ;; esac
"""
    + KILL_SESSION
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

#: What a process with a terminal runs first, under ``script``: it leads the terminal's own
#: session (``script`` makes one), so it notes its pid in DIR/tsid for status and kill, gives the
#: terminal a size, then runs the command (in ``$SL_CMD``).
_TTY_INIT = (
    'echo $$ > "$SL_D/tsid"; c=$SL_CMD; unset SL_D SL_CMD; stty cols 80 rows 24 2>/dev/null; eval "$c"'
)

#: Run as ``sh -c PROC_START sh DIR CAP COMMAND [CWD [MODE]]``: starts COMMAND detached in a new
#: session (its leader's pid is written to DIR/pid once it is set up, and printed), stdout and
#: stderr merged into DIR/out. Only the first CAP bytes are kept; the rest is read and dropped,
#: so the command never blocks or dies on a full pipe. ``head -c`` (coreutils' and busybox's)
#: keeps what it copies in a stdio buffer, which would hold output back 4 KiB at a time: it runs
#: unbuffered under coreutils' ``stdbuf``; busybox has none, but its ``dd`` copies each read
#: as it comes and counts bytes (coreutils' ``dd`` stops at the first short read, so it is only
#: used when it is not coreutils'). The output reaches DIR/out as it is written. When
#: COMMAND ends its exit code goes to DIR/rc.tmp, and once every byte is in DIR/out it is
#: renamed to DIR/rc: "rc exists" means "the output is complete".
#:
#: MODE: empty, stdin is /dev/null. ``stdin``: stdin is the FIFO DIR/in, held open by a
#: ``sleep`` of the session (its pid in DIR/holder) so that the command sees no end of input
#: until that holder is killed (PROC_STDIN's EOF) or the command ends. ``tty``: the same FIFO
#: feeds a terminal that ``script`` (util-linux) opens, on which the command runs: a real tty
#: (echo, ^C, isatty) with output in DIR/out as it appears. Without a working ``script`` it
#: prints nothing and exits 4 before starting anything. A command started in the background by
#: a shell ignores SIGINT and SIGQUIT, and a shell cannot undo that; coreutils' ``env
#: --default-signal`` can, so ^C reaches the command where it is there.
PROC_START = (
    r"""
d=$1; cap=$2; cmd=$3; cwd=${4:-}; mode=${5:-}
if [ "$mode" = tty ] && ! script -qefc true /dev/null </dev/null >/dev/null 2>&1; then exit 4; fi
mkdir -p "$d" || exit 1
: > "$d/out"
setsid sh -c '
  d=$1; cap=$2; mode=$5; h=; in=/dev/null
  started() { echo $$ > "$d/pid.tmp"; mv "$d/pid.tmp" "$d/pid"; }
  fail() { echo "$1" > "$d/out"; echo 126 > "$d/rc"; started; exit; }
  if [ -n "$4" ]; then cd "$4" || fail "no such directory: $4"; fi
  if [ -n "$mode" ]; then
    mkfifo -m 600 "$d/in" || fail "cannot make a pipe for stdin"
    sleep 2147483647 3<>"$d/in" </dev/null >/dev/null 2>&1 &
    h=$!; echo $h > "$d/holder"; in=$d/in
  fi
  started
  {
    if [ "$mode" = tty ]; then
      r=; env --default-signal true 2>/dev/null && r="env --default-signal"
      SL_D=$d SL_CMD=$3 SHELL=/bin/sh TERM=xterm $r script -qefc "$6" /dev/null
    else
      ( eval "$3" )
    fi < "$in" 2>&1
    echo $? > "$d/rc.tmp"
  } | {
    if command -v stdbuf >/dev/null 2>&1; then stdbuf -o0 head -c "$cap"
    elif ! dd --version >/dev/null 2>&1 && dd count=0 iflag=count_bytes </dev/null 2>/dev/null; then
      dd bs=65536 count="$cap" iflag=count_bytes 2>/dev/null
    else head -c "$cap"; fi
    cat > /dev/null
  } >> "$d/out"
  [ -n "$h" ] && kill $h 2>/dev/null
  mv "$d/rc.tmp" "$d/rc"
' sh "$d" "$cap" "$cmd" "$cwd" "$mode" '"""
    + _TTY_INIT
    + r"""' </dev/null >/dev/null 2>&1 &
i=0
while [ ! -s "$d/pid" ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i + 1)); done
cat "$d/pid"
"""
)

#: Run as ``sh -c PROC_STDIN sh DIR EOF`` with the bytes to write on its own stdin: writes them
#: to the process's stdin, then with EOF=1 closes it (kills the holder). Exit 3: the process
#: has no stdin; 4: it has ended; 5: its stdin was closed. The FIFO is opened read-write, which
#: never blocks even if the process is gone by then (the bytes are then dropped with the pipe);
#: a process that leaves its stdin unread makes a write past the pipe's 64 KiB wait, and the
#: caller's timeout ends it.
PROC_STDIN = (
    _LIVE
    + r"""
d=$1
[ -p "$d/in" ] || exit 3
[ -e "$d/rc" ] && exit 4
read -r sid < "$d/pid" && __sl_live "$sid" || exit 4
read -r h < "$d/holder" && __sl_live "$h" || exit 5
exec 3<>"$d/in"
cat >&3 || exit 6
exec 3>&-
if [ "$2" = 1 ]; then kill "$h" 2>/dev/null; fi
exit 0
"""
)

#: Run as ``sh -c PROC_STATUS sh DIR``: prints four lines: the exit code (empty while it runs or
#: if it was killed), whether its session (or its terminal's, DIR/tsid) still has processes
#: (1/0), the output size in bytes, then "CPU_TICKS PEAK_KB" summed/maxed over those sessions'
#: live processes (0 0 when none).
PROC_STATUS = (
    _STAT
    + r"""
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
"""
)

#: Run as ``sh -c PROC_READ sh DIR OFFSET LIMIT``: at most LIMIT bytes of DIR/out from OFFSET.
PROC_READ = r"""
tail -c +$(($2 + 1)) "$1/out" 2>/dev/null | head -c "$3"
"""

#: Run as ``sh -c PROC_FOLLOW sh DIR OFFSET`` with its stdin attached: writes DIR/out from OFFSET
#: as it grows and ends once all of it was written and the command is over (DIR/rc exists: the
#: leader writes it once the output is complete; or its session leader is gone: killed), or
#: once its stdin ends (the reader closed the stream: no follower outlives its reader, even of a
#: command that prints nothing for hours). Where the image has GNU tail the bytes come as they
#: are written: ``tail -f`` waits on inotify, while this script only looks every 50 ms whether
#: the command or the reader is gone; then it exits, and tail, told to follow this script's
#: life, reads what is left and ends. (Not the leader's own pid: where nothing reaps an orphan,
#: as on a host whose init does not, a dead leader stays a zombie that ``kill -0`` finds alive;
#: the leader is looked at through /proc, where a zombie shows as one.) An offset
#: past the end is first waited for (tail would take the shorter file for a truncated one and
#: start over). Elsewhere (busybox) a loop polls the size every 20 ms; the end is checked
#: before the size, so nothing written before it is missed.
PROC_FOLLOW = (
    _LIVE
    + r"""
d=$1; off=$2
read -r sid < "$d/pid" || exit 3
exec 3<&0  # an asynchronous command's own stdin would be /dev/null
cat <&3 > /dev/null 3<&- & reader=$!
exec 3<&-
trap 'kill $reader 2>/dev/null' EXIT
case $(tail --version 2>/dev/null) in *coreutils*) gnu=1 ;; *) gnu= ;; esac
over() { [ -e "$d/rc" ] || ! __sl_live "$sid"; }
while kill -0 $reader 2>/dev/null; do
  fin=0; over && fin=1
  size=$(stat -c %s "$d/out")
  if [ -n "$gnu" ] && [ "$size" -ge "$off" ] && [ $fin = 0 ]; then
    tail -c +$((off + 1)) -s 0.05 --pid=$$ -f "$d/out" &
    until over || ! kill -0 $reader 2>/dev/null; do sleep 0.05; done
    exit 0
  elif [ "$size" -gt "$off" ]; then
    tail -c +$((off + 1)) "$d/out" | head -c $((size - off))
    off=$size
  elif [ $fin = 1 ]; then
    exit 0
  else
    sleep 0.02
  fi
done
"""
)
