# shellcheck shell=sh
# Prints two counts of this container's cgroup (v1 or v2): processes the kernel OOM-killed,
# and forks refused at the process limit. Built-ins only: it must run when no fork can.
# ---

oom=0; pids=0
for f in /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control; do
  if [ -r "$f" ]; then
    while read -r k v; do [ "$k" = oom_kill ] && oom=$v; done < "$f"; break
  fi
done
for f in /sys/fs/cgroup/pids.events /sys/fs/cgroup/pids/pids.events; do
  if [ -r "$f" ]; then
    while read -r k v; do [ "$k" = max ] && pids=$v; done < "$f"; break
  fi
done
echo "$oom $pids"
