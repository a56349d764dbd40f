# shellcheck shell=sh
# Run as ``sh -c REPORT_PID_AND_EXEC sh CWD ARGV...``: prints its pid on stderr, enters CWD
# (when not empty; 126 and the reason on stderr when it cannot), then becomes ARGV. The pid is
# that of a session leader (every ``docker exec`` starts a new session), which lets
# KILL_SESSION find the whole process tree later, even processes that left the process group.
# ---
printf "%s\n" "$$" >&2; if [ -n "$1" ]; then cd "$1" || exit 126; fi; shift; exec "$@"