# shellcheck shell=sh
# ``sh -c FIX_MODES sh WS MODE REL [MODE REL]...`` (each REL as :func:`octal`): set the final
# modes of directories that were unpacked writable.
# ---

cd -P -- "$1" || exit 20; shift
while [ "$#" -ge 2 ]; do
  d=$(printf '%b.' "$2"); d=${d%.}
  chmod "$1" "./$d" 2>/dev/null; shift 2
done
exit 0
