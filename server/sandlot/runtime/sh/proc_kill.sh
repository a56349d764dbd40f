# shellcheck shell=sh
# Run as ``sh -c PROC_KILL sh DIR SID``: KILL_SESSION for a background process: its session
# SID and, when it has a terminal, the terminal's session (DIR/tsid, digits only).
# ---

d=$1; shift
t=; read -r t < "$d/tsid" 2>/dev/null
case $t in ""|*[!0-9]*) ;; *) set -- "$@" "$t" ;; esac
#@include kill_session.sh
