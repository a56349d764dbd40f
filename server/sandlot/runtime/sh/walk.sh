# shellcheck shell=sh
# ``__sl_walk WS REL MODE`` (REL as :func:`octal`): with MODE ``parent`` stop at REL's last
# name (``$__sl_leaf``, in the current directory); ``follow`` also follows a link at the last
# name; ``dir`` enters the last name too (the current directory is then REL itself).
# ``__sl_mk=1`` creates missing directories on the way.
# ---

__sl_in() ( while :; do [ . -ef "$__sl_ws" ] && exit 0; [ . -ef / ] && exit 1; cd .. || exit 1; done )
__sl_link() {
  __sl_hops=$((__sl_hops + 1)); [ "$__sl_hops" -gt 40 ] && exit 16
  __sl_t=$(readlink -- "./$1"; echo .); __sl_t=${__sl_t%.}; __sl_t=${__sl_t%?}
  [ -n "$__sl_t" ] || exit 15
  case $__sl_t in
    /*)
      case $__sl_t in
        "$__sl_ws") __sl_t=. ;;
        "$__sl_ws"/*) __sl_t=${__sl_t#"$__sl_ws"/} ;;
        *) exit 10 ;;
      esac
      cd -P -- "$__sl_ws" || exit 20 ;;
  esac
  if [ -n "$__sl_todo" ]; then __sl_todo=$__sl_t/$__sl_todo; else __sl_todo=$__sl_t; fi
}
__sl_walk() {
  __sl_ws=$1; __sl_todo=$(printf '%b.' "$2"); __sl_todo=${__sl_todo%.}
  __sl_mode=$3; __sl_hops=0; __sl_leaf=
  cd -P -- "$__sl_ws" 2>/dev/null || exit 20
  while [ -n "$__sl_todo" ]; do
    case $__sl_todo in
      */*) __sl_c=${__sl_todo%%/*}; __sl_todo=${__sl_todo#*/} ;;
      *) __sl_c=$__sl_todo; __sl_todo= ;;
    esac
    case $__sl_c in
      ''|.) continue ;;
      ..) cd .. || exit 13; __sl_in || exit 10; continue ;;
    esac
    if [ -z "$__sl_todo" ] && [ "$__sl_mode" != dir ]; then
      if [ "$__sl_mode" = follow ] && [ -L "./$__sl_c" ]; then __sl_link "$__sl_c"; continue; fi
      __sl_leaf=$__sl_c; return 0
    fi
    if [ -L "./$__sl_c" ]; then __sl_link "$__sl_c"; continue; fi
    if [ -d "./$__sl_c" ]; then cd "./$__sl_c" || exit 13
    elif [ -e "./$__sl_c" ]; then exit 12
    elif [ "${__sl_mk:-0}" = 1 ]; then
      mkdir "./$__sl_c" 2>/dev/null || [ -d "./$__sl_c" ] || exit 13
      cd "./$__sl_c" || exit 13
    else
      # missing from here on; what follows must not climb back out once it is made
      case "/$__sl_todo/" in */../*) exit 10 ;; esac
      exit 15
    fi

  done
  [ "$__sl_mode" = dir ] || exit 11
}
