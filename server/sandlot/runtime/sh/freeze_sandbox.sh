# shellcheck shell=sh
# shellcheck disable=SC2086
# (SC2086: $__sl_fields splits into the stat fields on purpose.)
# Run as ``sh -c FREEZE_SANDBOX``, in a process of its own: stops every process the sandbox
# user may signal but this one (one ``kill(-1)``: the kernel walks the task list while no fork
# can run, so nothing escapes it), after printing the pids of those already stopped (at most
# 256; a job stopped in a terminal stays so after the thaw), which the service keeps: nothing
# in the sandbox, which the sandbox user could rewrite, tells the thaw what to leave. Not the
# engine's cgroup freezer: a ``docker exec`` whose start races a freeze is caught in the frozen
# cgroup and wedges the container (its unpause and removal hang with it until a host's root
# kills the exec), while a stopped process keeps no new process from starting. But the kill
# reaches an exec's own start too: runc's init, between taking the sandbox user's uid and
# becoming the command, is the sandbox user's; stopped there, it held the engine's start of the
# exec and with it every exit and start of the container (the freeze's own exec, the thaw, its
# removal) until a host's root continued it. So it is continued at once: a process whose parent
# is outside the sandbox (the engine's runc) and whose name is runc's init stage. The sandbox
# user cannot make a process with no parent in the sandbox (orphans go to its init), only
# rename the one a docker exec started: at worst that one process runs on through the freeze,
# in its own sandbox, under its limits.
# ---
#@include stat_function.sh

n=0
for f in /proc/[0-9]*/stat; do
  __sl_stat "$f" || continue
  case ${__sl_fields%% *} in
    T|t) p=${f#/proc/}; [ $n -lt 256 ] && printf '%s ' "${p%/stat}"; n=$((n + 1)) ;;
  esac
done
kill -STOP -1 2>/dev/null
for f in /proc/[0-9]*/stat; do
  __sl_stat "$f" || continue
  set -- $__sl_fields
  [ "$2" = 0 ] || continue
  IFS= read -r name < "${f%/stat}/comm" 2>/dev/null || continue
  [ "$name" = "runc:[2:INIT]" ] || continue
  p=${f#/proc/}; kill -CONT "${p%/stat}" 2>/dev/null
done
exit 0
