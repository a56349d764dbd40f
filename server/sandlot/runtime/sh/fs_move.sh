# shellcheck shell=sh
# ``sh -c FS_MOVE sh WS FROM TO``: rename FROM to TO, or into TO when that is a directory.
# ---
#@include walk.sh

__sl_walk "$1" "$2" parent
[ -e "./$__sl_leaf" ] || [ -L "./$__sl_leaf" ] || exit 15
from=$(pwd -P; echo .); from=${from%.}; from=${from%?}; name=$__sl_leaf
__sl_mk=1; __sl_walk "$1" "$3" follow
to=$__sl_leaf
if [ -d "./$to" ]; then cd "./$to" || exit 13; to=$name; fi
mv -fT "$from/$name" "./$to" || exit 13
