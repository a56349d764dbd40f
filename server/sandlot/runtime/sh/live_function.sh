# shellcheck shell=sh
# ``__sl_live PID``: whether PID runs. Not ``kill -0``: where nothing reaps an orphan (a host
# whose init does not, the local runtime's sandboxes have no init of their own) a process that
# died stays a zombie, which ``kill -0`` takes for alive.
# ---
#@include stat_function.sh

__sl_live() { __sl_stat "/proc/$1/stat" && [ "${__sl_fields%% *}" != Z ]; }
