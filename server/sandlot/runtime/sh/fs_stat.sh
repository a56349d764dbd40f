# shellcheck shell=sh
# shellcheck disable=SC2209
# (SC2209: t=file (and t=dir...) names an entry's type, not the file(1) command.)
# ``sh -c FS_STAT sh WS REL``: ``TYPE\0SIZE\0MTIME\0`` of REL itself (a link is not followed).
# ---
#@include walk.sh

if [ -z "$2" ]; then cd -P -- "$1" || exit 20; f=.; else __sl_walk "$1" "$2" parent; f=./$__sl_leaf; fi
if [ -L "$f" ]; then t=symlink; elif [ -d "$f" ]; then t=dir; elif [ -f "$f" ]; then t=file

elif [ -e "$f" ]; then t=other; else exit 15; fi
s=0; [ "$t" = file ] && s=$(stat -c %s "$f")
printf '%s\0%s\0%s\0' "$t" "$s" "$(stat -c %Y "$f" 2>/dev/null || echo 0)"
