# shellcheck shell=sh
# Run as ``sh -c PROC_FOLLOW sh DIR OFFSET`` with its stdin attached: writes DIR/out from OFFSET
# as it grows and ends once all of it was written and the command is over (DIR/rc exists: the
# leader writes it once the output is complete; or its session leader is gone: killed), or
# once its stdin ends (the reader closed the stream: no follower outlives its reader, even of a
# command that prints nothing for hours). Where the image has GNU tail the bytes come as they
# are written: ``tail -f`` waits on inotify, while this script only looks every 50 ms whether
# the command or the reader is gone; then it exits, and tail, told to follow this script's
# life, reads what is left and ends. (Not the leader's own pid: where nothing reaps an orphan,
# as on a host whose init does not, a dead leader stays a zombie that ``kill -0`` finds alive;
# the leader is looked at through /proc, where a zombie shows as one.) An offset
# past the end is first waited for (tail would take the shorter file for a truncated one and
# start over). Elsewhere (busybox) a loop polls the size every 20 ms; the end is checked
# before the size, so nothing written before it is missed.
# ---
#@include live_function.sh
#@include byte_copy.sh

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
