"""Where a local sandbox lives on this host, and the record the runtime keeps of it.

Each sandbox is a directory under the runtime's root, named by its reference, holding its
workspace, its state directory and ``sandbox.json`` (labels, environment, workspace, limits and
host user). That file is the only record there is: a restarted service finds its sandboxes by
reading it, every command reads its limits from it, and a directory without it is no sandbox.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from sandlot.domain.errors import NotFound, SandboxStateError
from sandlot.runtime.base import LABEL_INSTANCE, LABEL_MANAGED, OwnedSandbox, SandboxSpec

__all__ = [
    "META",
    "empty_home",
    "home_of",
    "make_home",
    "new_meta",
    "owned_sandboxes",
    "read_meta",
    "uid_of",
]

META = "sandbox.json"


def home_of(root: Path, ref: str) -> Path:
    """The directory of sandbox ``ref`` under ``root``. A reference that could name anything
    else (a path, a hidden entry such as the uid claims) is no sandbox of ours."""
    if not ref or "/" in ref or ref.startswith(".") or "\x00" in ref:
        raise NotFound(f"no local sandbox {ref!r}")
    return root / ref


def new_meta(spec: SandboxSpec, instance: str, uid: int | None) -> dict[str, object]:
    """The record of a sandbox being created from ``spec``, running as host user ``uid``."""
    return {
        "labels": {LABEL_MANAGED: "1", LABEL_INSTANCE: instance, **spec.labels},
        "env": dict(spec.env),
        "workspace": spec.workspace,
        "memory_mb": spec.limits.memory_mb,
        "pids": spec.limits.pids,
        "uid": uid,
    }


def make_home(home: Path, meta: Mapping[str, object], uid: int | None) -> None:
    """Make a new sandbox's directory: the workspace and state directories (given to its host
    user, when it has one) and, last, the record that makes it a sandbox."""
    home.mkdir(mode=0o700)
    for part in ("workspace", "state"):
        (home / part).mkdir(mode=0o700)
        if uid is not None:
            os.chown(home / part, uid, uid)
    (home / META).write_text(json.dumps(meta))


def empty_home(home: Path, uid: int | None) -> None:
    """Empty a sandbox's state directory and workspace (a reset; nothing of it runs now)."""
    state, host_ws = home / "state", home / "workspace"
    shutil.rmtree(state, ignore_errors=True)
    state.mkdir(mode=0o700)
    if uid is not None:
        os.chown(state, uid, uid)
    os.chmod(host_ws, 0o700)
    for child in host_ws.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def read_meta(root: Path, ref: str) -> dict[str, object]:
    """The record of sandbox ``ref``; a sandbox without one is gone."""
    try:
        meta: dict[str, object] = json.loads((home_of(root, ref) / META).read_text())
    except (OSError, ValueError) as exc:
        raise SandboxStateError(f"local sandbox {ref} is gone") from exc
    return meta


def uid_of(meta: Mapping[str, object]) -> int | None:
    """The host user a sandbox runs as, or None when it runs as the service's own."""
    uid = meta.get("uid")
    return int(uid) if isinstance(uid, int) else None


def owned_sandboxes(root: Path, instance: str | None) -> list[OwnedSandbox]:
    """The sandboxes under ``root`` (of ``instance`` only, unless None), by their records."""
    found: list[OwnedSandbox] = []
    if not root.is_dir():
        return found
    for child in root.iterdir():
        try:
            labels = json.loads((child / META).read_text())["labels"]
        except (OSError, ValueError, KeyError):
            continue
        if instance is None or labels.get(LABEL_INSTANCE) == instance:
            found.append(OwnedSandbox(ref=child.name, labels=labels, running=True))
    return found
