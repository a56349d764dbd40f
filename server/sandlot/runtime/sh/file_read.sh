# shellcheck shell=sh
# ``sh -c FILE_READ sh WS REL LIMIT``: on stdout ``K<size>\n`` then the file's bytes.
# ---
#@include walk.sh
#@include byte_copy.sh

__sl_walk "$1" "$2" follow
f=./$__sl_leaf
[ -e "$f" ] || exit 15
[ -d "$f" ] && exit 11
[ -f "$f" ] || exit 17
[ -r "$f" ] || exit 13
exec 3< "$f" || exit 13
size=$(stat -c %s "$f") || exit 15
if [ "$size" -gt "$3" ]; then echo "$size" >&2; exit 18; fi
printf 'K%s\n' "$size"
__sl_take "$size" <&3
