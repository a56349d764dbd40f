# shellcheck shell=sh
# ``__sl_stat FILE``: the fields of a /proc/PID/stat after the command name, in
# ``$__sl_fields`` (state, parent, group, session...). A command name is the process's own to
# choose and may hold ")" and newlines: the whole file is read, and the name ends at its last ") ".
# ---

__sl_stat() {
  __sl_fields=
  while IFS= read -r __sl_l || [ -n "$__sl_l" ]; do
    __sl_fields="$__sl_fields$__sl_l "
  done < "$1" 2>/dev/null

  [ -n "$__sl_fields" ] || return 1
  __sl_fields=${__sl_fields##*) }
}
