"""The shell programs the runtimes run inside sandboxes (and the firewall guard's), kept as
``.sh`` files in ``sh/`` and composed here once.

A file opens with a header: ``# shellcheck shell=sh``, then comment lines that say how the
program is called, what it prints and what its exit codes mean, closed by a line ``# ---``.
What follows is the program, byte for byte, where a line ``#@include NAME.sh`` stands for that
file's program (functions shared by several: the byte copy, the path walk, the /proc readers).
Placeholders ``@NAME@`` (a path list, a marker) are filled by the module that owns the
values. The header is not part of the program: the program a sandbox runs is exactly what
it was when these were Python strings (a unit test holds each to its digest).
"""

from __future__ import annotations

import functools
from importlib.resources import files

__all__ = ["program"]

_HEADER_END = "\n# ---\n"
_INCLUDE = "#@include "


@functools.cache
def program(name: str) -> str:
    """The program in ``sh/NAME``, its includes composed (an include of an include too)."""
    text = (files("sandlot.runtime") / "sh" / name).read_text(encoding="utf-8")
    header, found, body = text.partition(_HEADER_END)
    if not found or not header.startswith("# shellcheck shell=sh"):
        raise ValueError(f"sh/{name} has no header closed by '# ---'")
    return "".join(
        program(line.removeprefix(_INCLUDE).strip()) if line.startswith(_INCLUDE) else line
        for line in body.splitlines(keepends=True)
    )
