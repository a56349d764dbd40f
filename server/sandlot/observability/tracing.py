"""OpenTelemetry tracing: set up from settings, and the spans Sandlot opens itself.

Request spans come from Litestar's OpenTelemetry middleware (only installed when tracing is
on); under them, the services open child spans for lifecycle events and for every feature
activity with the ``sandlot.*`` attributes below. Background loops start their own root spans
and link them to the spans that created the sandboxes they touch.

When tracing is off, :func:`span` gets OpenTelemetry's non-recording spans: no exporter,
no processor, no allocation beyond the span object, so the cost is not measurable (the
benchmark ``bench/bench_tracing.py`` shows it).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import operator
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextvars import ContextVar, Token
from typing import Any, ParamSpec, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.propagate import inject
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import ParentBasedTraceIdRatio
from opentelemetry.trace import Link, Span, SpanContext, Status, StatusCode

from sandlot import __version__
from sandlot.settings import Settings

__all__ = [
    "ATTR",
    "SandboxSpans",
    "TracedRuntime",
    "bind_tracer",
    "build_provider",
    "current_traceparent",
    "name_request_span",
    "request_span_start",
    "route_of",
    "span",
    "traced",
    "traced_env",
    "tracer_for",
    "tracing",
    "unbind_tracer",
]

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")

#: Attribute names on Sandlot's spans (never a secret: ids and names only).
ATTR = {
    "tenant": "sandlot.tenant_id",
    "environment": "sandlot.environment",
    "image": "sandlot.image",
    "sandbox": "sandlot.sandbox_id",
    "session": "sandlot.session_id",
    "feature": "sandlot.feature",
    "activity": "sandlot.activity",
    "outcome": "sandlot.outcome",
    "error_type": "error.type",
    "reason": "sandlot.reason",
    "to_status": "sandlot.to_status",
    "warm": "sandlot.warm",
}


_NO_TRACER: trace.Tracer = trace.NoOpTracer()
#: The tracer of the app whose work is running. Each app binds its own (:func:`bind_tracer`):
#: its lifespan before the background loops start (their tasks inherit it) and its middleware
#: for every request, so several apps in one process never share one.
_tracer: ContextVar[trace.Tracer] = ContextVar("sandlot_tracer", default=_NO_TRACER)


def tracer_for(provider: trace.TracerProvider | None) -> trace.Tracer:
    """Sandlot's tracer from ``provider``; the non-recording one when tracing is off."""
    return provider.get_tracer("sandlot", __version__) if provider is not None else _NO_TRACER


def bind_tracer(tracer: trace.Tracer) -> Token[trace.Tracer]:
    """Make ``tracer`` the one :func:`span` uses in this context (and the tasks it starts)."""
    return _tracer.set(tracer)


def unbind_tracer(token: Token[trace.Tracer]) -> None:
    """Undo :func:`bind_tracer`. A context torn down elsewhere (an app whose lifespan the loop
    finished in another task) keeps its binding: nothing runs in it any more."""
    with contextlib.suppress(ValueError):
        _tracer.reset(token)


def tracing() -> bool:
    """Whether the work running now is traced."""
    return _tracer.get() is not _NO_TRACER


def build_provider(settings: Settings, *, processor: SpanProcessor | None = None) -> TracerProvider | None:
    """A tracer provider from settings, or None when tracing is off.

    ``processor`` replaces the exporter from settings (tests pass an in-memory one)."""
    if processor is None and settings.otel_exporter == "none":
        return None
    provider = TracerProvider(
        resource=Resource.create(
            {"service.name": settings.otel_service_name, "service.version": __version__}
        ),
        sampler=ParentBasedTraceIdRatio(settings.otel_sample_ratio),
    )
    if processor is None:
        processor = BatchSpanProcessor(_exporter(settings))
    provider.add_span_processor(processor)
    return provider


def _exporter(settings: Settings) -> Any:
    kind = settings.otel_exporter
    endpoint = settings.otel_endpoint or None
    if kind == "otlp-http":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(endpoint=f"{endpoint.rstrip('/')}/v1/traces" if endpoint else None)
    if kind == "otlp-grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcExporter,
        )

        return GrpcExporter(endpoint=endpoint, insecure=settings.otel_insecure)
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    return ConsoleSpanExporter()


_PARAM_TYPE = re.compile(r"\{(\w+):[^}]*\}")


def request_span_start(scope: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """A request span's name when it starts, before routing: the method alone (the raw path
    holds ids, a new name per session, which no trace backend can group)."""
    return str(scope.get("method") or scope.get("type", "")).strip(), {}


def route_of(scope: Mapping[str, Any]) -> str | None:
    """The route template of a routed request, without parameter types:
    ``/v1/sessions/{session_id}`` (None before routing)."""
    template = scope.get("path_template")
    return _PARAM_TYPE.sub(r"{\1}", str(template)) if template else None


def name_request_span(scope: Mapping[str, Any]) -> None:
    """Once routed, name the current request span by its route template and set
    ``http.route``: ``POST /v1/sessions/{session_id}/features/{feature}/{activity}``."""
    current = trace.get_current_span()
    route = route_of(scope)
    if not route or not current.is_recording():
        return
    method = str(scope.get("method", "")).strip()
    current.update_name(f"{method} {route}" if method else route)
    current.set_attribute("http.route", route)


def _attributes(values: Mapping[str, Any]) -> dict[str, Any]:
    return {ATTR.get(k, k): v for k, v in values.items() if v is not None}


@contextlib.contextmanager
def span(
    name: str,
    *,
    links: list[Link] | None = None,
    root: bool = False,
    **attributes: Any,
) -> Iterator[Span]:
    """A span named ``name`` under the current one (``root``: a new trace, for background
    work). Keyword attributes use the short names of :data:`ATTR`. An exception marks the span
    as an error with ``error.type`` (the Sandlot error code where there is one) and goes on."""
    ctx = otel_context.Context() if root else None
    with _tracer.get().start_as_current_span(
        name,
        context=ctx,
        links=links,
        attributes=_attributes(attributes),
        record_exception=False,
        set_status_on_exception=False,
    ) as current:
        try:
            yield current
        except BaseException as exc:
            if current.is_recording():
                fail(current, exc)
            raise
        else:
            if current.is_recording() and ATTR["outcome"] not in getattr(current, "attributes", {}):
                current.set_attribute(ATTR["outcome"], "ok")


def traced(
    name: str,
    *,
    result: Callable[[Any], Mapping[str, Any]] | None = None,
    **arguments: str,
) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
    """Run every call of the decorated coroutine function inside :func:`span` ``name``, so a
    traced method needs no untraced twin that repeats its signature.

    Each keyword is an attribute (a short name of :data:`ATTR`) and where its value comes from:
    a parameter of the function, or a dotted path into one (``"row.id"``); None values are left
    out, as :func:`span` does. ``result`` maps the return value to more attributes, set when the
    call succeeds (ids known only once the work is done)."""

    def decorate(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        signature = inspect.signature(fn)
        sources = {attr: _argument(signature, path) for attr, path in arguments.items()}

        @functools.wraps(fn)
        async def call(*args: P.args, **kwargs: P.kwargs) -> R:
            values: dict[str, Any] = {}
            if tracing():  # binding costs microseconds; a no-op span drops attributes anyway
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                values = {attr: get(bound.arguments) for attr, get in sources.items()}
            with span(name, **values) as current:
                value = await fn(*args, **kwargs)
                if result is not None:
                    current.set_attributes(_attributes(result(value)))
                return value

        return call

    return decorate


def _argument(signature: inspect.Signature, path: str) -> Callable[[Mapping[str, Any]], Any]:
    """A getter of ``path`` (``"param"`` or ``"param.attr"``) from a call's bound arguments.
    A path that names no parameter fails when the module is imported, not on the first call."""
    param, _, rest = path.partition(".")
    if param not in signature.parameters:
        raise TypeError(f"traced: {path!r} names no parameter of {signature}")
    attribute = operator.attrgetter(rest) if rest else None

    def get(bound: Mapping[str, Any]) -> Any:
        value = bound[param]
        return attribute(value) if attribute is not None else value

    return get


def fail(current: Span, exc: BaseException) -> None:
    """Mark ``current`` as failed by ``exc``."""
    code = getattr(exc, "code", None) or type(exc).__name__
    current.set_attribute(ATTR["outcome"], "error")
    current.set_attribute(ATTR["error_type"], str(code))
    current.set_status(Status(StatusCode.ERROR, str(exc)[:300]))
    current.record_exception(exc)


def current_traceparent() -> str:
    """The W3C ``traceparent`` of the current span, or "" when nothing is being traced."""
    if not tracing():
        return ""
    carrier: dict[str, str] = {}
    inject(carrier)
    return carrier.get("traceparent", "")


def traced_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` plus ``TRACEPARENT`` of the current span (when tracing), so a command run in a
    sandbox can continue the trace."""
    traceparent = current_traceparent()
    return {**env, "TRACEPARENT": traceparent} if traceparent else dict(env)


class SandboxSpans:
    """Remembers the span that created each sandbox, so background work that touches the
    sandbox later can link to it (bounded; the oldest are forgotten first)."""

    def __init__(self, limit: int = 10_000) -> None:
        self._limit = limit
        self._spans: OrderedDict[str, SpanContext] = OrderedDict()

    def remember(self, sandbox_id: str) -> None:
        if not tracing():
            return
        ctx = trace.get_current_span().get_span_context()
        if ctx.is_valid:
            self._spans[sandbox_id] = ctx
            self._spans.move_to_end(sandbox_id)
            while len(self._spans) > self._limit:
                self._spans.popitem(last=False)

    def links(self, sandbox_ids: list[str]) -> list[Link]:
        return [Link(self._spans[s], {ATTR["sandbox"]: s}) for s in sandbox_ids if s in self._spans]


class TracedRuntime:
    """Wraps a :class:`~sandlot.runtime.base.SandboxRuntime` so every call is a
    ``runtime.<method>`` span (``sandlot.runtime`` and, where the first argument is a
    container reference, ``sandlot.runtime_ref``). Installed only when tracing is on."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.name = inner.name

    def __getattr__(self, attr: str) -> Any:
        target = getattr(self._inner, attr)
        if attr.startswith("_") or not inspect.iscoroutinefunction(target):
            return target

        @functools.wraps(target)
        async def traced(*args: Any, **kwargs: Any) -> Any:
            attrs: dict[str, Any] = {"sandlot.runtime": self.name}
            if args and isinstance(args[0], str):
                attrs["sandlot.runtime_ref"] = args[0][:64]
            with span(f"runtime.{attr}", **attrs):
                return await target(*args, **kwargs)

        return traced
