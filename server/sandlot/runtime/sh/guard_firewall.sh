# shellcheck shell=sh
# shellcheck disable=SC2034
# (SC2034: i only counts the tries.)
# shellcheck disable=SC2086
# (SC2086: $t is a command's name and $v6 an optional one (empty: no word).)
# $1: the sandbox bridge, $2: link-local. Runs in the engine's network namespace, chrooted into a
# read-only view of the engine host's root (so with the host's own iptables, the one Docker
# uses: no process is looked for by name, which any host user could take); makes sure nothing
# from the bridge reaches the host itself (INPUT: any address of it, broadcasts, addresses it
# gets later) and nothing goes to link-local through it (DOCKER-USER), then checks. A busy
# xtables lock is waited for a few times; IPv6 only where the kernel has it.
# ---

set -u
b=$1 ll=$2
command -v iptables >/dev/null || { echo "the engine host has no iptables"; exit 21; }
try() { for i in 1 2 3 4 5; do "$@" && return 0; sleep 1; done; return 1; }
v6=; [ -e /proc/net/if_inet6 ] && command -v ip6tables >/dev/null && v6=ip6tables
for t in iptables $v6; do
    $t -C INPUT -i "$b" -j DROP 2>/dev/null || try $t -I INPUT 1 -i "$b" -j DROP || exit 22
    try $t -C INPUT -i "$b" -j DROP || exit 23
done
iptables -C DOCKER-USER -i "$b" -d "$ll" -j DROP 2>/dev/null ||
    try iptables -I DOCKER-USER 1 -i "$b" -d "$ll" -j DROP || exit 24
try iptables -C DOCKER-USER -i "$b" -d "$ll" -j DROP || exit 25
