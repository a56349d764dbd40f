# shellcheck shell=sh
# What a process with a terminal runs first, under ``script``: it leads the terminal's own
# session (``script`` makes one), so it notes its pid in DIR/tsid for status and kill, gives the
# terminal a size, then runs the command (in ``$SL_CMD``).
# ---
echo $$ > "$SL_D/tsid"; c=$SL_CMD; unset SL_D SL_CMD; stty cols 80 rows 24 2>/dev/null; eval "$c"