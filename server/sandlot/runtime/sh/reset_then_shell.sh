# shellcheck shell=sh
# Run as ``sh -c RESET_THEN_SHELL sh TAIL WORKSPACE STATE DIR...``: RESET_SANDBOX in a
# subshell (its output on stderr, its failure the exit code), then a line saying it is done,
# TAIL (which gives back the environment the sandbox's own processes have), and this process,
# which the reset spared, becomes a fresh ``/bin/sh``: the next session's shell, for the cost
# of the one exec the reset needs anyway.
# @DONE@ is filled in Python (docker_reset._DONE).
# ---
__sl_tail=$1; shift
(
#@include reset_sandbox.sh

) </dev/null >&2 || exit $?
printf '%s\n' @DONE@
eval "$__sl_tail"; unset __sl_tail; exec /bin/sh
