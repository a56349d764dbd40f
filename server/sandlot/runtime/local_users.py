"""Host users of local sandboxes, one each and never shared.

An isolated local sandbox runs as a host user of its own, so it can signal, trace or write
nothing but its own, its process count is bounded per user, and killing everything that user
runs kills exactly that sandbox. That holds only while no two sandboxes get the same uid, so a
uid is claimed by creating a file for it exclusively under the runtime's root, and released
when its sandbox is removed.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from sandlot.domain.errors import SandboxStateError

__all__ = ["UIDS", "claim_uid", "release_uid"]

UIDS = range(200_000, 300_000)  # host users of local sandboxes (one each, never shared)
_CLAIMS = ".uids"  # under the runtime's root; a sandbox's reference never starts with a dot


def claim_uid(root: Path) -> int:
    """A host user no other sandbox of this host has (a claim file, made exclusively)."""
    claims = root / _CLAIMS
    claims.mkdir(mode=0o700, exist_ok=True)
    for _ in range(1000):
        uid = UIDS.start + secrets.randbelow(len(UIDS))
        try:
            os.close(os.open(claims / str(uid), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except FileExistsError:
            continue
        return uid
    raise SandboxStateError("no free host user for a local sandbox")


def release_uid(root: Path, uid: int) -> None:
    """Give ``uid`` back, once nothing of its sandbox is left."""
    (root / _CLAIMS / str(uid)).unlink(missing_ok=True)
