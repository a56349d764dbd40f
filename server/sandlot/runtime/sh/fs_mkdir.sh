# shellcheck shell=sh
# ``sh -c FS_MKDIR sh WS REL``: REL and its missing parents.
# ---
#@include walk.sh

__sl_mk=1; __sl_walk "$1" "$2" dir
