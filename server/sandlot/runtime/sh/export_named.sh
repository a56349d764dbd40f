# shellcheck shell=sh
# ``sh -c EXPORT_NAMED sh WORKSPACE``: reads NUL-separated ``./name``s on stdin and writes a
# tar of those entries alone on stdout (several concatenated when there are many), read as
# the sandbox user, nothing when stdin is empty.
# ---
cd -P -- "$1" || exit 20
#@include export_tar.sh
