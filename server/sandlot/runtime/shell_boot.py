"""What the persistent shell (:mod:`sandlot.runtime.shell`) is told when it starts: the shell
functions that frame a session's command (``__sl_run``) and a program of the service's
(``__sl_do``), and the line that binds a session's state directory."""

from __future__ import annotations

from sandlot.runtime.programs import program
from sandlot.runtime.scripts import HELPER_PATH, HELPER_UNSET

__all__ = ["BIND", "BOOT", "ONE_SHOT", "SPOOL_FAILED"]

# what every program of ours runs under: the helper PATH and none of the variables that could
# make a tool another (sh/boot.sh's header says how __sl_run and __sl_do use it)
_HELPER = "PATH=@PATH@; export PATH; unset @UNSET@ TRACEPARENT"
SPOOL_FAILED = b"__sl_spool_failed"


def _filled(text: str) -> str:
    return (
        text.replace("@HELPER@", _HELPER)
        .replace("@PATH@", HELPER_PATH)
        .replace("@UNSET@", " ".join(HELPER_UNSET))
        .replace("@SPOOL@", SPOOL_FAILED.decode())
    )


BOOT = _filled(program("boot.sh"))

BIND = '__sl_S=%s; mkdir -p "$__sl_S" 2>/dev/null\n'

ONE_SHOT = _filled(program("one_shot.sh"))  # sh/one_shot.sh says how it is called
