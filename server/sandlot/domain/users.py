"""Who a command may run as inside a sandbox.

Every command runs as the image's user unless a request names another one. A name goes to the
engine as a JSON string (never through a shell), but it is a tenant's choice all the same: only
names of letters, digits, ``_``, ``.`` and ``-`` (or a numeric uid), up to 32 characters, are
taken, and a name is allowed only when both the service (``exec_users_allowed``) and the
sandbox's environment (``exec_users``) list it, spelled exactly so.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from sandlot.domain.errors import InvalidInput, NotPermitted

__all__ = ["USER_PATTERN", "check_user_name", "require_allowed_user"]

#: A user name or numeric uid, as a request or an allow-list may give it (no group part).
USER_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$"
_USER_RE = re.compile(USER_PATTERN)


def check_user_name(user: str, field: str = "user") -> None:
    """422 for anything but a plain user name or uid."""
    if not _USER_RE.fullmatch(user):
        raise InvalidInput(
            f"{field}: {user[:40]!r} is not a user name or uid (letters, digits, '_', '.', '-'; "
            "at most 32 characters; no group)",
            field=field,
        )


def require_allowed_user(
    user: str, environment_allows: Collection[str], service_allows: Collection[str]
) -> None:
    """403 unless both the environment and the service allow ``user``."""
    check_user_name(user)
    if user not in service_allows:
        raise NotPermitted(
            f"this service runs no command as {user!r} (its setting exec_users_allowed does not list it)",
            field="user",
        )
    if user not in environment_allows:
        raise NotPermitted(
            f"commands in this sandbox may not run as {user!r}: the environment's exec_users does "
            "not list it (a sandbox without an environment runs everything as its image's user)",
            field="user",
        )
