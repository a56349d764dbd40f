# shellcheck shell=sh
# shellcheck disable=SC2016
# (SC2016: the single-quoted body is the detached child's own program: it expands there.)
# Run as ``sh -c PROC_START sh DIR CAP COMMAND [CWD [MODE [LIVE]]]``: starts COMMAND detached in
# a new session (its leader's pid is written to DIR/pid once it is set up, and printed as the
# first line), stdout and stderr merged into DIR/out. Only the first CAP bytes are kept; the
# rest is read and dropped, so the command never blocks or dies on a full pipe. ``head -c``
# (coreutils' and busybox's) keeps what it copies in a stdio buffer, which would hold output
# back 4 KiB at a time: it runs unbuffered under coreutils' ``stdbuf``; busybox has none, but
# its ``dd`` copies each read as it comes and counts bytes (coreutils' ``dd`` stops at the
# first short read, so it is only used when it is not coreutils'). The output reaches DIR/out
# as it is written. When COMMAND ends its exit code goes to DIR/rc.tmp, and once every byte is
# in DIR/out it is renamed to DIR/rc: "rc exists" means "the output is complete". A failure
# before the command starts prints ``!CODE`` instead of a pid and exits CODE (``!7``: no room
# for DIR's files; ``!5``: no pid within 5 s).
#
# MODE: empty, stdin is /dev/null. ``stdin``: stdin is the FIFO DIR/in, held open by a
# ``sleep`` of the session (its pid in DIR/holder) so that the command sees no end of input
# until that holder is killed (PROC_STDIN's EOF) or the command ends. ``tty``: the same FIFO
# feeds a terminal that ``script`` (util-linux) opens, on which the command runs: a real tty
# (echo, ^C, isatty) with output in DIR/out as it appears. Without a working ``script`` it
# prints ``!4`` and exits 4 before starting anything. A command started in the background by
# a shell ignores SIGINT and SIGQUIT, and a shell cannot undo that; coreutils' ``env
# --default-signal`` can, so ^C reaches the command where it is there.
#
# LIVE (non-empty): the kept output is also written, as it is stored, on this script's own
# stdout after the pid line, until the command is over (the service reads it live: no
# follower, no polled file). The detached shell prints the pid line itself (this script prints
# nothing: whatever it wrote after that line would read as output), then ``tee``
# writes each piece to DIR/out first, then to a ``dd`` that writes it on that stdout (fd 9 of
# the detached shell) in pieces of up to 64 KiB (busybox's ``tee`` writes 8 KiB at a time,
# and every piece is a frame of the engine's stream to take apart): every byte relayed is
# stored already. This script stays (the engine ends an exec's streams soon after its process
# exits), waiting for the detached shell, its own child (``wait``: nothing in the sandbox can
# hold that up but the detached shell itself), so the stream ends once DIR/rc is there or the
# process was killed. The command, its holder and the capper never see fd 9. When the reader
# goes away the engine drops what the relay writes; when this script is killed the engine
# closes the stream, and ``dd``, then ``tee`` (SIGPIPE ignored), get EPIPE while DIR/out goes
# on: the command never waits on a gone server. The stream is the sandbox user's to write to
# (``/proc/PID/fd``) as much as DIR/out is: the service bounds what it reads of it.
# @TTY_INIT@ (inside the detached body's single quotes) is tty_init.sh, filled in Python.
# ---

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
' sh "$d" "$cap" "$cmd" "$cwd" "$mode" '@TTY_INIT@' "$live" 9>&1 </dev/null >/dev/null 2>&1 &
}
if [ -n "$live" ]; then  # our child, which prints the first line itself: we print nothing
  start; child=$!; exec >/dev/null 2>&1; wait "$child"; exit 0
fi
(start)  # an orphan
i=0
while [ ! -s "$d/pid" ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i + 1)); done
if [ -s "$d/pid" ]; then cat "$d/pid"; else echo '!5'; fi
