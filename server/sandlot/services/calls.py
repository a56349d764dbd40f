"""The activity call path: one feature activity run in a session's sandbox.

This is the hot path of Sandlot (every shell command is one call), so it trusts the session
service's cache of hot sessions and hands its record to the batching
:class:`~sandlot.services.activities.ActivityRecorder` instead of writing it. Each call checks
the session and its sandbox, finds the activity, validates its arguments, runs it as an
``activity <feature>.<name>`` span and records and counts it whatever the outcome. A sandbox
that breaks during a call ends the session. Kept apart from
:class:`~sandlot.services.sessions.SessionService`, which finds the caller's session and
composes this back in.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any

from pydantic import ValidationError

from sandlot.domain.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    SandboxStateError,
    SandlotError,
    SessionEnded,
)
from sandlot.domain.status import SESSION_ACTIVE as ACTIVE
from sandlot.domain.status import SESSION_ENDED as ENDED
from sandlot.domain.status import SandboxStatus as S
from sandlot.domain.status import session_unusable
from sandlot.features.base import ActivityArgs, ActivitySpec, SessionContext, Upload
from sandlot.observability.metrics import Metrics
from sandlot.observability.tracing import span
from sandlot.runtime.shells import ShellManager
from sandlot.services.activities import ActivityRecord, ActivityRecorder
from sandlot.services.assets import resolve_placeholders
from sandlot.services.environments import EnvironmentService
from sandlot.services.exec_users import ExecUsers
from sandlot.store.tables import Environment, Sandbox, Session

__all__ = ["ActivityCalls"]


def _summary(args: Mapping[str, Any]) -> str:
    text = json.dumps(args, default=str, sort_keys=True)
    return text if len(text) <= 500 else text[:497] + "..."


def _parse(spec: ActivitySpec, args: Mapping[str, Any]) -> ActivityArgs:
    """The activity's arguments as its model; the first validation error is the client's 422."""
    try:
        return spec.args.model_validate(dict(args))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "args"
        raise InvalidInput(f"{field}: {first['msg']}", field=field) from exc


_PRINTED = ("stdout", "stderr", "encoding", "truncated")


def _signalled(result: Any) -> int | None:
    """The exit code of a command result that a signal ended (128 + n as a shell reports it,
    or -n): perhaps its session's end, which kills every process of the session."""
    code = result.get("exit_code") if isinstance(result, dict) else None
    return code if isinstance(code, int) and (code >= 128 or code < 0) else None


def _check_upload(spec: ActivitySpec, name: str, args: Mapping[str, Any], upload: Upload | None) -> None:
    """A streamed call only to an activity that takes one, with its streamed argument given
    once (in the body, not also among the JSON arguments)."""
    if upload is None:
        return
    if spec.upload is None:
        raise InvalidInput(f"{name} takes no streamed body; send its arguments as JSON")
    if args.get(spec.upload) is not None:
        raise InvalidInput(
            f"{spec.upload}: streamed in the body, so not among the arguments too", field=spec.upload
        )


class ActivityCalls:
    """Shares the session service's cache of hot sessions; ``end``, ``reload`` and
    ``sandbox_lost`` are the session service's own (ending a session is its business)."""

    def __init__(
        self,
        *,
        environments: EnvironmentService,
        shells: ShellManager,
        recorder: ActivityRecorder,
        hot: dict[str, tuple[Session, Sandbox]],
        context: Callable[[Session, Sandbox], SessionContext],
        end: Callable[[str, str], Awaitable[Session]],
        reload: Callable[[str], Awaitable[Session]],
        sandbox_lost: Callable[[Session, Sandbox, SandboxStateError], Awaitable[None]],
        metrics: Metrics,
        exec_users: ExecUsers,
    ) -> None:
        self._metrics = metrics
        self._exec_users = exec_users
        self._environments = environments
        self._shells = shells
        self._recorder = recorder
        self._hot = hot
        self._context = context
        self._end = end
        self._reload = reload
        self._sandbox_lost = sandbox_lost

    async def call(
        self,
        sess: Session,
        box: Sandbox | None,
        feature_name: str,
        activity_name: str,
        args: Mapping[str, Any],
        upload: Upload | None = None,
    ) -> Any:
        """Run ``feature_name.activity_name`` with ``args`` in the session ``sess`` (found by
        the caller, with the sandbox it holds); ``upload``: the streamed argument of a
        streamed call."""
        session_id = sess.id  # the service's id (the caller may have used its own)
        env = await self._environments.cached(None, sess.environment_id)
        if sess.status != ACTIVE:
            raise session_unusable(session_id, sess.status)
        if box is None or box.status != S.IN_SESSION.value or box.runtime_ref is None:
            await self._end(session_id, "sandbox lost")
            raise SandboxStateError(f"the sandbox of session {session_id} is gone; start a new session")
        feature = self._environments.features_of(env).get(feature_name)
        if feature is None or not feature.applies_to(box.image):
            raise NotFound(f"feature {feature_name!r} is not available in this session")
        spec = feature.activities().get(activity_name)
        if spec is None:
            raise NotFound(f"feature {feature_name!r} has no activity {activity_name!r}")
        _check_upload(spec, f"{feature_name}.{activity_name}", args, upload)
        args = resolve_placeholders(dict(args), sess.state.get("assets") or {})
        parsed = _parse(spec, args)
        record = ActivityRecord(
            tenant_id=sess.tenant_id,
            session_id=sess.id,
            sandbox_id=box.id,
            feature=feature_name,
            name=activity_name,
            args_summary=_summary(args),
        )
        user_check = partial(self._exec_users.allow, box, listed=env.exec_users or [])
        extra = {"upload": upload, "user_check": user_check}
        return await self._run(sess, box, env, record, lambda ctx: spec.method(feature, ctx, parsed), extra)

    async def _run(
        self,
        sess: Session,
        box: Sandbox,
        env: Environment,
        record: ActivityRecord,
        invoke: Callable[[SessionContext], Awaitable[Any]],
        extra: Mapping[str, Any],
    ) -> Any:
        """Run the activity (``invoke``, given the session's context with ``extra``) as its
        span; a success makes the session hot, and every outcome is recorded and counted (an
        error by its code)."""
        started = time.perf_counter()
        activity_span = span(
            f"activity {record.feature}.{record.name}",
            tenant=sess.tenant_id,
            environment=env.name,
            image=box.image,
            sandbox=box.id,
            session=sess.id,
            feature=record.feature,
            activity=record.name,
        )
        try:
            with activity_span:
                result = await invoke(dataclasses.replace(self._context(sess, box), **extra))
            if (code := _signalled(result)) is not None:
                await self._still_active(sess.id, code, result)
            self._hot[sess.id] = (sess, box)
            return result
        except SandlotError as exc:
            record.error, record.error_code = exc.message[:1000], exc.code
            if isinstance(exc, SandboxStateError):
                await self._sandbox_broke(sess, box, exc)
            raise
        except Exception as exc:
            record.error, record.error_code = str(exc)[:1000], "internal_error"
            raise
        finally:
            record.duration_ms = (time.perf_counter() - started) * 1000
            self._recorder.record(record)
            outcome = "ok" if record.error_code is None else "error"
            self._metrics.activities.labels(record.feature, record.name, outcome).inc()
            if record.error_code is not None:
                self._metrics.activity_errors.labels(record.feature, record.name, record.error_code).inc()

    async def _still_active(self, session_id: str, code: int, result: Mapping[str, Any]) -> None:
        """A command a signal ended: when its session ended meanwhile (elsewhere: a client's
        end, its ttl), the end cut it short, and the answer says so with what it printed,
        never as an ordinary result. Asked of the store only for such commands."""
        fresh = await self._reload(session_id)
        if fresh.status != ACTIVE:
            raise self._cut_short(session_id, fresh.status, result, exit_code=code)

    def _cut_short(self, session_id: str, status: str, printed: Mapping[str, Any], **more: Any) -> Conflict:
        """The answer for a call its session's end (or suspend) overtook: 409, ``session_ended``
        with what the command had printed where that is known (a one-shot from the session's
        launcher gives its output only at its end)."""
        self._hot.pop(session_id, None)
        if status != ENDED:
            return session_unusable(session_id, status)
        known = printed.get("stdout") or printed.get("stderr")
        output = {k: v for k, v in printed.items() if known and k in _PRINTED}
        return SessionEnded(
            f"session {session_id} ended while the call ran: its end cut the call short",
            status=status,
            **output,
            **more,
        )

    async def _sandbox_broke(self, sess: Session, box: Sandbox, exc: SandboxStateError) -> None:
        """The sandbox failed during the activity: when the session was ended elsewhere (its
        end retired our shells and its reset killed its processes) the client gets 409 for
        the ended session; otherwise the sandbox is lost and the session ends."""
        session_id = sess.id
        self._hot.pop(session_id, None)
        fresh = await self._reload(session_id)
        if fresh.status != ACTIVE:
            await self._shells.close(session_id)
            raise self._cut_short(session_id, fresh.status, exc.extra) from exc
        await self._sandbox_lost(sess, box, exc)
