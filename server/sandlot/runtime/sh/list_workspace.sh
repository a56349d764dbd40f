# shellcheck shell=sh
# ``sh -c LIST_WORKSPACE sh WORKSPACE STATE_DIR``: on stdout the mark's ctime, one line of
# numbers per entry, ``F`` when a directory could not be read, then ``E``; on stderr the names,
# NUL-separated, then ``E``.
# ---

cd -P -- "$1" || exit 20
s=$2; mkdir -p "$s" && rm -f "$s/mark" "$s/find-failed" && : > "$s/mark" || exit 21
stat -c '%Z %z' "$s/mark" || exit 21
{ find . -mindepth 1 -print0 2>/dev/null || : > "$s/find-failed"; } | tee /dev/stderr |
  xargs -0 -r stat -c '%f %i %s %h %Y %y %Z %z' 2>/dev/null || echo F
[ -e "$s/find-failed" ] && echo F
printf 'E\0' >&2
echo E
