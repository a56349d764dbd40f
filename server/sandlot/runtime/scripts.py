"""Small POSIX shell programs the runtimes run inside sandboxes, each a file in ``sh/``
(:mod:`sandlot.runtime.programs`) whose header says how it is called and what it prints.

They only use what busybox and Debian both have (sh, read, kill, readlink).
"""

from __future__ import annotations

from sandlot.runtime.programs import program

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

BYTE_COPY = program("byte_copy.sh")

#: Where in-sandbox bookkeeping lives (persistent shell state): a tmpfs, never the workspace.
STATE_ROOT = "/dev/shm/.sandlot"

#: Where background processes keep their output (up to the output limit each) and bookkeeping
#: on Docker: the container's disk, within its disk limit, emptied by the reset with /tmp.
PROCESS_ROOT = "/tmp/.sandlot/proc"

REPORT_PID_AND_EXEC = program("report_pid_and_exec.sh")

STAT_FUNCTION = program("stat_function.sh")

LIVE_FUNCTION = program("live_function.sh")

KILL_SESSION = program("kill_session.sh")

KILL_TREE = program("kill_tree.sh")

FREEZE_SANDBOX = program("freeze_sandbox.sh")

THAW_SANDBOX = program("thaw_sandbox.sh")

LIMIT_COUNTS = program("limit_counts.sh")

#: The places a session can write besides the workspace; a reset empties them all.
SCRATCH_DIRS = ("/tmp", "/var/tmp", "/run/lock", "/dev/shm", "/dev/mqueue")

WRITABLE_PLACES = program("writable_places.sh")

RESET_SANDBOX = program("reset_sandbox.sh")
