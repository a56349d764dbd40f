# shellcheck shell=sh
# ``sh -c FS_REMOVE sh WS REL``: REL (a directory with everything in it; a link, not its target).
# ---
#@include walk.sh

__sl_walk "$1" "$2" parent
[ -e "./$__sl_leaf" ] || [ -L "./$__sl_leaf" ] || exit 15
rm -rf "./$__sl_leaf" || exit 13
