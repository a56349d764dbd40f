"""Environment variables a client may set in a sandbox."""

from __future__ import annotations

import re
from collections.abc import Mapping

from sandlot.domain.errors import InvalidInput

__all__ = ["validate_env"]

_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


def validate_env(env: Mapping[str, str]) -> None:
    """422 for a name that is not a shell identifier or is one of ours (``__sl_``, any case:
    the names our shell functions and their state use), or a value holding a NUL byte."""
    for name, value in env.items():
        if not _ENV_NAME_RE.match(name):
            raise InvalidInput(f"invalid environment variable name {name!r}", field="env")
        if name.lower().startswith("__sl_"):
            raise InvalidInput(
                f"environment variable names starting __sl_ are Sandlot's: {name!r}", field="env"
            )
        if "\x00" in value:
            raise InvalidInput(f"environment variable {name!r} contains a NUL byte", field="env")
