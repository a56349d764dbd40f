# shellcheck shell=sh
# ``sh -c SCAN_WORKSPACE sh WORKSPACE STATE_DIR``, stdin attached: the listing, then the
# export of the names that come on stdin, in one process (one ``docker exec`` for both).
# ---
#@include list_workspace.sh
#@include export_tar.sh
