# shellcheck shell=sh
# shellcheck disable=SC2209
# (SC2209: t=file (and t=dir...) names an entry's type, not the file(1) command.)
# ``sh -c FS_LIST sh WS REL``: per entry ``TYPE\0SIZE\0NAME\0`` (type: file, dir, symlink, other).
# ---
#@include walk.sh

__sl_walk "$1" "$2" dir
for n in * .[!.]* ..?*; do
  f=./$n
  if [ -L "$f" ]; then t=symlink; elif [ -d "$f" ]; then t=dir; elif [ -f "$f" ]; then t=file
  elif [ -e "$f" ]; then t=other; else continue; fi
  s=0; [ "$t" = file ] && s=$(stat -c %s "$f" 2>/dev/null || echo 0)
  printf '%s\0%s\0%s\0' "$t" "$s" "$n"
done
