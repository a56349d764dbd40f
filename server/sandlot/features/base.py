"""Features: named capabilities bound to sandboxes, and their activities.

A feature is either sandbox-based (it applies to sandboxes whose image matches
``applicable_images``, a regex) or runs in the service itself. Its lifecycle hooks are
``setup``/``teardown`` (per sandbox), ``setup_session``/``teardown_session`` (per session) and
``housekeep`` (periodic, per sandbox). Methods marked with :func:`activity` are callable through
``POST /v1/sessions/{id}/features/{feature}/{activity}``; each call is an *activity*: timed,
recorded, and (with issue #5) traced.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict

from sandlot.domain.errors import NotPermitted
from sandlot.domain.patterns import compile_pattern

if TYPE_CHECKING:
    from sandlot.observability.metrics import Metrics
    from sandlot.runtime.base import SandboxRuntime
    from sandlot.runtime.shell import PersistentShell
    from sandlot.runtime.shells import ShellManager
    from sandlot.settings import Settings

__all__ = [
    "ActivityArgs",
    "ActivitySpec",
    "Feature",
    "SandboxContext",
    "SessionContext",
    "Upload",
    "activity",
]

A = TypeVar("A", bound="ActivityArgs")


class ActivityArgs(BaseModel):
    """Base of every activity's argument model (unknown fields are refused)."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True, slots=True)
class SandboxContext:
    """What a feature hook may touch: one sandbox. ``shells``: this process's persistent
    shells (a pool sandbox's may already be open, see ``ShellManager.warm``)."""

    sandbox_id: str
    ref: str
    image: str
    workspace: str
    runtime: SandboxRuntime
    settings: Settings
    shells: ShellManager | None = None


@dataclass(frozen=True, slots=True)
class Upload:
    """The streamed part of an activity call: ``size`` bytes (announced by the request), as
    they arrive; it stands for the argument the activity names (see :func:`activity`)."""

    chunks: AsyncIterator[bytes]
    size: int


@dataclass(frozen=True, slots=True)
class SessionContext(SandboxContext):
    """A sandbox during one session; ``shells`` gives the session's persistent shell.
    ``upload`` is the call's streamed argument, if any; ``user_check`` lets a command run as
    another user or refuses (see :meth:`allow_user`)."""

    session_id: str = ""
    tenant_id: str = ""
    metrics: Metrics | None = None
    upload: Upload | None = None
    user_check: Callable[[str], Awaitable[None]] | None = None

    def shell(self) -> PersistentShell:
        assert self.shells is not None
        return self.shells.get(self.session_id, self.ref, self.sandbox_id)

    def launcher(self) -> PersistentShell | None:
        """The shell the session's one-shot commands run from, when one-shots may go there
        (``shell_channels``; see :mod:`sandlot.runtime.launcher`)."""
        if self.shells is None or not self.settings.shell_channels:
            return None
        return self.shells.launcher(self.session_id, self.ref)

    async def allow_user(self, user: str) -> None:
        """Let a command of this session run as ``user``, or raise (422, 403 or 409): the
        environment and the service must allow that user, and the sandbox is never reused."""
        if self.user_check is None:
            raise NotPermitted(f"no command of this session may run as {user!r}", field="user")
        await self.user_check(user)


@dataclass(frozen=True, slots=True)
class ActivitySpec:
    name: str
    args: type[ActivityArgs]
    method: Callable[[Any, SessionContext, Any], Awaitable[Any]]
    summary: str
    upload: str | None = None


def activity(
    args: type[A], *, upload: str | None = None
) -> Callable[
    [Callable[[Any, SessionContext, A], Awaitable[Any]]],
    Callable[[Any, SessionContext, A], Awaitable[Any]],
]:
    """Mark a feature method as an activity taking ``args`` (a pydantic model). ``upload``
    names the argument that a streamed call sends as raw bytes after its JSON arguments
    (``ctx.upload``) instead of inside them."""

    def mark(fn: Callable[[Any, SessionContext, A], Awaitable[Any]]) -> Any:
        fn.__sandlot_activity__ = args  # type: ignore[attr-defined]
        fn.__sandlot_upload__ = upload  # type: ignore[attr-defined]
        return fn

    return mark


class Feature:
    """Base class of every feature. Subclasses set ``name`` and define activities."""

    name: ClassVar[str] = ""
    sandbox_based: ClassVar[bool] = True
    description: ClassVar[str] = ""

    def __init__(self, applicable_images: str = ".*", **config: Any) -> None:
        self._pattern = compile_pattern(applicable_images, "features")  # a tenant's: linear time
        self.applicable_images = applicable_images
        self.config = config

    def applies_to(self, image: str) -> bool:
        return not self.sandbox_based or self._pattern.fullmatch(image)

    @classmethod
    def activities(cls) -> dict[str, ActivitySpec]:
        """The class's activities by name (computed once per class)."""
        cached: dict[str, ActivitySpec] | None = cls.__dict__.get("_activities")
        if cached is None:
            cached = cls._find_activities()
            cls._activities = cached  # type: ignore[attr-defined]
        return cached

    @classmethod
    def _find_activities(cls) -> dict[str, ActivitySpec]:
        found: dict[str, ActivitySpec] = {}
        for attr in dir(cls):
            fn = getattr(cls, attr, None)
            args = getattr(fn, "__sandlot_activity__", None)
            if args is not None and fn is not None:
                doc = (fn.__doc__ or "").strip().splitlines()
                upload = getattr(fn, "__sandlot_upload__", None)
                found[attr] = ActivitySpec(attr, args, fn, doc[0] if doc else "", upload)
        return found

    async def setup(self, ctx: SandboxContext) -> None:
        """A sandbox this feature applies to was set up."""

    async def teardown(self, ctx: SandboxContext) -> None:
        """A sandbox this feature applies to is shutting down."""

    async def setup_session(self, ctx: SessionContext) -> None:
        """A session starts on a sandbox this feature applies to."""

    async def teardown_session(self, ctx: SessionContext) -> None:
        """A session ends; release per-session resources."""

    async def housekeep(self, ctx: SandboxContext) -> None:
        """Periodic check; raise :class:`SandboxStateError` if the sandbox is unusable."""
