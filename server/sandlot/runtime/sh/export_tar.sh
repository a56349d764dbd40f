# shellcheck shell=sh
# ---
exec xargs -0 -r tar -c -f - --no-recursion
