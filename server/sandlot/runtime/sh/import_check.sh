# shellcheck shell=sh
# ``sh -c IMPORT_CHECK sh WS DIR...`` (each DIR as :func:`octal`): fails (10, the offending
# DIR's index on stdout) if an archive member going into DIR would reach outside through a
# link already on disk.
# ---
#@include walk.sh

ws=$1; shift; i=0
for d in "$@"; do
  ( __sl_walk "$ws" "$d" dir ) 2>/dev/null
  rc=$?
  case $rc in 0|15) ;; 12) ;; *) echo "$i"; exit "$rc" ;; esac
  i=$((i + 1))
done
