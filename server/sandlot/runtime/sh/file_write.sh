# shellcheck shell=sh
# ``sh -c FILE_WRITE sh WS REL SIZE`` with the bytes on stdin: written to a new file beside
# the target, which replaces it (keeping its mode) only once all SIZE bytes arrived; a
# read-only file or directory is refused, as the sandbox user would be refused.
# ---
#@include walk.sh
#@include byte_copy.sh

__sl_mk=1; __sl_walk "$1" "$2" follow
f=./$__sl_leaf; size=$3; mode=
[ -d "$f" ] && exit 11
if [ -e "$f" ]; then [ -w "$f" ] || exit 13; mode=$(stat -c %a "$f"); fi
[ -w . ] || exit 13
# a name no one can guess, created by this very open (set -C: never an existing file or FIFO)
tmp=$(mktemp -u ./.sandlot-upload-XXXXXXXXXX) || exit 13
set -C
__sl_take "$size" > "$tmp" || { rm -f "$tmp"; exit 14; }
set +C
got=$(stat -c %s "$tmp")
[ "$((got))" -eq "$size" ] || { rm -f "$tmp"; exit 21; }
[ -z "$mode" ] || chmod "$mode" "$tmp"
mv -f "$tmp" "$f" || { rm -f "$tmp"; exit 13; }
