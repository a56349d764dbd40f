# shellcheck shell=sh
# Run as ``sh -c PROC_READ sh DIR OFFSET LIMIT``: at most LIMIT bytes of DIR/out from OFFSET.
# ---
#@include byte_copy.sh
__sl_copy "$1/out" "$2" "$3"
