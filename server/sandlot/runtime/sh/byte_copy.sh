# shellcheck shell=sh
# Shell functions that move bytes in 64 KiB pieces where the image's ``dd`` counts in bytes
# (busybox's and coreutils'), else with ``head``/``tail``, which busybox runs 4 KiB at a time
# (a 1 MiB spool cost 10 ms of the sandbox's CPU through ``head -c``, 2 through ``dd``; each
# small piece is also a frame for the engine and the server when it goes out on a stream).
# ``__sl_dd_ok`` asks once per shell (the persistent shell asks at boot, so its programs never
# do). ``__sl_take N``: N bytes of stdin (fewer only at its end); through ``dd`` never one
# more, so what follows in a shell's input stays there (busybox's ``head -c`` reads past N from
# a pipe: harmless only because the shell is sent nothing after a program's input until the
# program has ended). ``__sl_copy FILE OFFSET COUNT``: at most COUNT bytes of FILE from OFFSET.
# ---

__sl_dd_ok() {
  case ${__sl_dd-} in
    0) return 0 ;;
    1) return 1 ;;
  esac
  dd if=/dev/null bs=1 count=0 iflag=skip_bytes,count_bytes,fullblock 2>/dev/null && __sl_dd=0 || __sl_dd=1
  [ "$__sl_dd" = 0 ]
}
__sl_take() {
  if __sl_dd_ok; then dd bs=65536 count="$1" iflag=count_bytes,fullblock 2>/dev/null; else head -c "$1"; fi
}
__sl_copy() {
  if __sl_dd_ok; then dd if="$1" bs=65536 skip="$2" count="$3" iflag=skip_bytes,count_bytes 2>/dev/null
  else tail -c +$(($2 + 1)) "$1" 2>/dev/null | head -c "$3"; fi
}
