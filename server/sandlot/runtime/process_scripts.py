"""Programs that run a tenant's command in the background inside a sandbox and keep its
output there: started detached (``PROC_START``), read from any offset (``PROC_READ``), followed
live (``PROC_FOLLOW``), fed (``PROC_STDIN``), looked at (``PROC_STATUS``) and killed
(``PROC_KILL``). Everything about a process is files in its directory on the sandbox's tmpfs,
so any API process, and a restarted service, can reach it.

They only use what busybox and Debian both have, as :mod:`sandlot.runtime.scripts` does. Each
is a file in ``sh/`` (see :mod:`sandlot.runtime.programs`) whose header says how it is called.
"""

from __future__ import annotations

from sandlot.runtime.programs import program

__all__ = ["PROC_FOLLOW", "PROC_KILL", "PROC_READ", "PROC_START", "PROC_STATUS", "PROC_STDIN"]

PROC_KILL = program("proc_kill.sh")

# the detached body runs tty_init.sh first under a terminal; it sits in single quotes there
PROC_START = program("proc_start.sh").replace("@TTY_INIT@", program("tty_init.sh"))

PROC_STDIN = program("proc_stdin.sh")

PROC_STATUS = program("proc_status.sh")

PROC_READ = program("proc_read.sh")

PROC_FOLLOW = program("proc_follow.sh")
