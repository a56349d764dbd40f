# shellcheck shell=sh
# Run as ``sh -c PROC_STDIN sh DIR EOF`` with the bytes to write on its own stdin: writes them
# to the process's stdin, then with EOF=1 closes it (kills the holder). Exit 3: the process
# has no stdin; 4: it has ended; 5: its stdin was closed. The FIFO is opened read-write, which
# never blocks even if the process is gone by then (the bytes are then dropped with the pipe);
# a process that leaves its stdin unread makes a write past the pipe's 64 KiB wait, and the
# caller's timeout ends it.
# ---
#@include live_function.sh

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
