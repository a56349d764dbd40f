"""Request bodies, built with the generated models so a renamed or removed field fails here.

The SDK's methods take plain arguments and dicts; this module turns them into the generated
models the endpoint functions expect, sending exactly the JSON the hand-built bodies used to
(fields left out stay unset rather than taking the model's default).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from sandlot_client._api.models import (
    AssetRef,
    EnvironmentCreate,
    ManifestEntry,
    ProcessInput,
    ProcessStart,
    ProcessStartEnv,
    SessionCreate,
    V1SessionsSessionIdFeaturesActivityCallBody,
)
from sandlot_client._api.types import UNSET, Unset
from sandlot_client.errors import InvalidInput

__all__ = ["activity_args", "environment_create", "process_input", "process_start", "session_create"]

M = TypeVar("M")


def environment_create(name: str, images: list[str], fields: Mapping[str, Any]) -> EnvironmentCreate:
    """``{"name": name, "images": images, **fields}`` as an :class:`EnvironmentCreate`."""
    return _parse(EnvironmentCreate.from_dict, {"name": name, "images": images, **fields})


def session_create(
    environment: str,
    *,
    image: str | None,
    feature: str | None,
    session_id: str | None,
    snapshot_id: str | None,
    assets: list[dict[str, str]] | None,
    files: dict[str, str] | None,
) -> SessionCreate:
    """A session start: arguments left ``None`` (and empty ``files``) are not sent."""
    return SessionCreate(
        environment=environment,
        image=_given(image),
        feature=_given(feature),
        session_id=_given(session_id),
        snapshot_id=_given(snapshot_id),
        assets=UNSET if assets is None else [_parse(AssetRef.from_dict, a) for a in assets],
        manifest=[ManifestEntry(path=p, content=c, encoding=UNSET) for p, c in files.items()]
        if files
        else UNSET,
    )


def process_start(
    command: str, env: dict[str, str] | None, cwd: str | None, *, stdin: bool = False, tty: bool = False
) -> ProcessStart:
    """A background process start (``env`` is always sent, ``{}`` when not given; ``stdin`` and
    ``tty`` only when true)."""
    return ProcessStart(
        command=command,
        cwd=_given(cwd),
        env=ProcessStartEnv.from_dict(env or {}),
        stdin=True if stdin else UNSET,
        tty=True if tty else UNSET,
    )


def process_input(data: str, eof: bool) -> ProcessInput:
    """Text for a process's stdin, and whether to close it after."""
    return ProcessInput(data=data, eof=True if eof else UNSET)


def activity_args(args: Mapping[str, Any]) -> V1SessionsSessionIdFeaturesActivityCallBody:
    """A feature activity's arguments (free-form: each feature defines its own)."""
    return V1SessionsSessionIdFeaturesActivityCallBody.from_dict(args)


def _given(value: str | None) -> str | Unset:
    return UNSET if value is None else value


def _parse(from_dict: Callable[[Mapping[str, Any]], M], data: Mapping[str, Any]) -> M:
    """``from_dict(data)``; data it cannot hold is the :class:`InvalidInput` the service would
    have answered, raised before sending."""
    try:
        return from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInput(f"invalid request body: {exc!r}", code="validation_error") from exc
