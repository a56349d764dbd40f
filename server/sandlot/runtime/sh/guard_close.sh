# shellcheck shell=sh
# $1: the link-local range, then each address to close. Every route is added, then every
# address must fail to route (ip route get: "Permission denied" for a prohibit route).
# ---

set -u
range=$1; shift
ip route add prohibit "$range" || exit 10
for a in "$@"; do ip route add prohibit "$a/32" || exit 11; done
for a in "${range%/*}" "$@"; do
    if ip route get "$a" >/dev/null 2>&1; then echo "still routed: $a"; exit 12; fi
done
[ "$(cat /proc/sys/net/ipv6/conf/all/disable_ipv6)" = 1 ] || { echo "IPv6 is on"; exit 13; }
