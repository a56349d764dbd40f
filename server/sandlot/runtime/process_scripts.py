"""Programs that run a tenant's command in the background inside a sandbox and keep its
output there: started detached (``PROC_START``), read from any offset (``PROC_READ``), followed
live (``PROC_FOLLOW``), fed (``PROC_STDIN``), looked at (``PROC_STATUS``) and killed
(``PROC_KILL``). Everything about a process is files in its directory on the sandbox's tmpfs,
so any API process, and a restarted service, can reach it.

They only use what busybox and Debian both have, as :mod:`sandlot.runtime.scripts` does.
"""

from __future__ import annotations

from sandlot.runtime.scripts import BYTE_COPY, KILL_SESSION, LIVE_FUNCTION, STAT_FUNCTION

__all__ = ["PROC_FOLLOW", "PROC_KILL", "PROC_READ", "PROC_START", "PROC_STATUS", "PROC_STDIN"]

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

#: What a process with a terminal runs first, under ``script``: it leads the terminal's own
#: session (``script`` makes one), so it notes its pid in DIR/tsid for status and kill, gives the
#: terminal a size, then runs the command (in ``$SL_CMD``).
_TTY_INIT = (
    'echo $$ > "$SL_D/tsid"; c=$SL_CMD; unset SL_D SL_CMD; stty cols 80 rows 24 2>/dev/null; eval "$c"'
)

#: Run as ``sh -c PROC_START sh DIR CAP COMMAND [CWD [MODE [LIVE]]]``: starts COMMAND detached in
#: a new session (its leader's pid is written to DIR/pid once it is set up, and printed as the
#: first line), stdout and stderr merged into DIR/out. Only the first CAP bytes are kept; the
#: rest is read and dropped, so the command never blocks or dies on a full pipe. ``head -c``
#: (coreutils' and busybox's) keeps what it copies in a stdio buffer, which would hold output
#: back 4 KiB at a time: it runs unbuffered under coreutils' ``stdbuf``; busybox has none, but
#: its ``dd`` copies each read as it comes and counts bytes (coreutils' ``dd`` stops at the
#: first short read, so it is only used when it is not coreutils'). The output reaches DIR/out
#: as it is written. When COMMAND ends its exit code goes to DIR/rc.tmp, and once every byte is
#: in DIR/out it is renamed to DIR/rc: "rc exists" means "the output is complete". A failure
#: before the command starts prints ``!CODE`` instead of a pid and exits CODE (``!7``: no room
#: for DIR's files; ``!5``: no pid within 5 s).
#:
#: MODE: empty, stdin is /dev/null. ``stdin``: stdin is the FIFO DIR/in, held open by a
#: ``sleep`` of the session (its pid in DIR/holder) so that the command sees no end of input
#: until that holder is killed (PROC_STDIN's EOF) or the command ends. ``tty``: the same FIFO
#: feeds a terminal that ``script`` (util-linux) opens, on which the command runs: a real tty
#: (echo, ^C, isatty) with output in DIR/out as it appears. Without a working ``script`` it
#: prints ``!4`` and exits 4 before starting anything. A command started in the background by
#: a shell ignores SIGINT and SIGQUIT, and a shell cannot undo that; coreutils' ``env
#: --default-signal`` can, so ^C reaches the command where it is there.
#:
#: LIVE (non-empty): the kept output is also written, as it is stored, on this script's own
#: stdout after the pid line, until the command is over (the service reads it live: no
#: follower, no polled file). The detached shell prints the pid line itself (this script prints
#: nothing: whatever it wrote after that line would read as output), then ``tee``
#: writes each piece to DIR/out first, then to a ``dd`` that writes it on that stdout (fd 9 of
#: the detached shell) in pieces of up to 64 KiB (busybox's ``tee`` writes 8 KiB at a time,
#: and every piece is a frame of the engine's stream to take apart): every byte relayed is
#: stored already. This script stays (the engine ends an exec's streams soon after its process
#: exits), waiting for the detached shell, its own child (``wait``: nothing in the sandbox can
#: hold that up but the detached shell itself), so the stream ends once DIR/rc is there or the
#: process was killed. The command, its holder and the capper never see fd 9. When the reader
#: goes away the engine drops what the relay writes; when this script is killed the engine
#: closes the stream, and ``dd``, then ``tee`` (SIGPIPE ignored), get EPIPE while DIR/out goes
#: on: the command never waits on a gone server. The stream is the sandbox user's to write to
#: (``/proc/PID/fd``) as much as DIR/out is: the service bounds what it reads of it.
PROC_START = (
    r"""
d=$1; cap=$2; cmd=$3; cwd=${4:-}; mode=${5:-}; live=${6:-}
if [ "$mode" = tty ] && ! script -qefc true /dev/null </dev/null >/dev/null 2>&1; then echo '!4'; exit 4; fi
failed() {  # why a step failed, from its error (in C): no room (7), or anything else (1)
  case $(LC_ALL=C sh -c "$1" sh "$d" 2>&1) in *space*|*uota*) echo '!7'; exit 7 ;; esac
  echo '!1'; exit 1
}
mkdir -p "$d" 2>/dev/null || failed 'mkdir -p "$1"'
# (not `:`: a failed redirection of a special builtin ends the script)
{ echo 0 > "$d/pid.tmp" && printf '' > "$d/out"; } 2>/dev/null ||
  failed 'echo 0 > "$1/pid.tmp" && printf "" > "$1/out"'
start() {
  setsid sh -c '
  d=$1; cap=$2; mode=$5; live=$7; h=; in=/dev/null
  [ -n "$live" ] || exec 9>&-
  started() {
    echo $$ > "$d/pid.tmp"; mv "$d/pid.tmp" "$d/pid"
    if [ -n "$live" ]; then echo $$ >&9; fi  # the first line, before any output
  }
  fail() { echo "$1" > "$d/out"; echo 126 > "$d/rc"; started; exit; }
  if [ -n "$4" ]; then cd "$4" || fail "no such directory: $4"; fi
  if [ -n "$mode" ]; then
    mkfifo -m 600 "$d/in" || fail "cannot make a pipe for stdin"
    sleep 2147483647 3<>"$d/in" </dev/null >/dev/null 2>&1 9>&- &
    h=$!; echo $h > "$d/holder"; in=$d/in
  fi
  started
  produce() {
    {
      if [ "$mode" = tty ]; then
        r=; env --default-signal true 2>/dev/null && r="env --default-signal"
        SL_D=$d SL_CMD=$3 SHELL=/bin/sh TERM=xterm $r script -qefc "$6" /dev/null
      else
        ( eval "$3" )
      fi < "$in" 2>&1
      echo $? > "$d/rc.tmp"
    } 9>&- | {
      if command -v stdbuf >/dev/null 2>&1; then stdbuf -o0 head -c "$cap"
      elif ! dd --version >/dev/null 2>&1 && dd count=0 iflag=count_bytes </dev/null 2>/dev/null; then
        dd bs=65536 count="$cap" iflag=count_bytes 2>/dev/null
      else head -c "$cap"; fi
      cat > /dev/null
    } 9>&-
  }
  if [ -n "$live" ]; then
    produce "$@" | (trap "" PIPE; exec tee /dev/fd/3 3>&1 >> "$d/out" 9>&-) |
      dd bs=65536 2>/dev/null >&9
  else produce "$@" >> "$d/out"; fi
  [ -n "$h" ] && kill $h 2>/dev/null
  mv "$d/rc.tmp" "$d/rc"
' sh "$d" "$cap" "$cmd" "$cwd" "$mode" '"""
    + _TTY_INIT
    + r"""' "$live" 9>&1 </dev/null >/dev/null 2>&1 &
}
if [ -n "$live" ]; then  # our child, which prints the first line itself: we print nothing
  start; child=$!; exec >/dev/null 2>&1; wait "$child"; exit 0
fi
(start)  # an orphan
i=0
while [ ! -s "$d/pid" ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i + 1)); done
if [ -s "$d/pid" ]; then cat "$d/pid"; else echo '!5'; fi
"""
)

#: Run as ``sh -c PROC_STDIN sh DIR EOF`` with the bytes to write on its own stdin: writes them
#: to the process's stdin, then with EOF=1 closes it (kills the holder). Exit 3: the process
#: has no stdin; 4: it has ended; 5: its stdin was closed. The FIFO is opened read-write, which
#: never blocks even if the process is gone by then (the bytes are then dropped with the pipe);
#: a process that leaves its stdin unread makes a write past the pipe's 64 KiB wait, and the
#: caller's timeout ends it.
PROC_STDIN = (
    LIVE_FUNCTION
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
    STAT_FUNCTION
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
PROC_READ = BYTE_COPY + '__sl_copy "$1/out" "$2" "$3"\n'

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
    LIVE_FUNCTION
    + BYTE_COPY
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
    __sl_copy "$d/out" "$off" $((size - off))
    off=$size
  elif [ $fin = 1 ]; then
    exit 0
  else
    sleep 0.02
  fi
done
"""
)
