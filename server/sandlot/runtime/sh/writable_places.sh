# shellcheck shell=sh
# Lists, one per line, every place of the root filesystem the sandbox user may write: world-
# writable, or its own, or its group's and group-writable (links are not places). Run on a
# fresh container, it tells whether emptying the workspace and SCRATCH_DIRS is a clean slate.
# ---

u=$(id -u); g=$(id -g)
find / -xdev ! -type l \( -perm -0002 -o -user "$u" -o \( -group "$g" -perm -0020 \) \) -print 2>/dev/null
exit 0
