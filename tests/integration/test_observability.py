"""Traces, metrics and logs on real Docker and PostgreSQL.

One app with an in-memory span exporter runs a whole session (acquire, three shell commands,
one file write, a failing activity, end) with the client's own ``traceparent`` on every request,
and the span tree is checked: names, parent links, the ``sandlot.*`` attributes, database and
Docker spans, and the error status of the failing activity.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import AsyncIterator

import pytest
from litestar.testing import AsyncTestClient
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from prometheus_client.parser import text_string_to_metric_families

from sandlot.app import create_app
from sandlot.observability.logs import JsonFormatter
from sandlot.observability.tracing import build_provider
from sandlot.settings import Settings
from tests.integration.conftest import Headers, NewTenant


@pytest.fixture
async def traced(app_settings: Settings) -> AsyncIterator[tuple[AsyncTestClient, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = build_provider(app_settings, processor=SimpleSpanProcessor(exporter))
    assert isinstance(provider, TracerProvider)
    app = create_app(app_settings, tracer_provider=provider)
    async with AsyncTestClient(app, timeout=120) as client:
        yield client, exporter


class Traced:
    """Requests that each carry a traceparent of one trace the test owns."""

    def __init__(self, client: AsyncTestClient, headers: Headers) -> None:
        self.client = client
        self.trace_id = secrets.randbits(128) | 1
        self.h = headers
        self.parents: list[int] = []

    def _headers(self) -> Headers:
        parent = secrets.randbits(64) | 1
        self.parents.append(parent)
        return {**self.h, "traceparent": f"00-{self.trace_id:032x}-{parent:016x}-01"}

    async def post(self, path: str, body: dict) -> dict:
        resp = await self.client.post(path, json=body, headers=self._headers())
        return {**resp.json(), "http_status": resp.status_code}

    async def delete(self, path: str) -> int:
        return (await self.client.delete(path, headers=self._headers())).status_code


def _by_id(spans: list[ReadableSpan]) -> dict[int, ReadableSpan]:
    return {s.context.span_id: s for s in spans}


def _parent(span: ReadableSpan, index: dict[int, ReadableSpan]) -> ReadableSpan | None:
    return index.get(span.parent.span_id) if span.parent is not None else None


def _ancestors(span: ReadableSpan, index: dict[int, ReadableSpan]) -> list[str]:
    names = []
    current = _parent(span, index)
    while current is not None:
        names.append(current.name)
        current = _parent(current, index)
    return names


async def test_a_session_makes_the_expected_span_tree(
    traced: tuple[AsyncTestClient, InMemorySpanExporter], new_tenant: NewTenant
) -> None:
    client, exporter = traced
    t = Traced(client, await new_tenant())
    env = await t.post(
        "/v1/environments",
        {"name": f"otel-{secrets.token_hex(3)}", "images": ["sandlot/busybox:latest"], "pool_size": 0},
    )
    assert env["http_status"] == 201
    session = await t.post("/v1/sessions", {"environment": env["name"]})
    assert session["http_status"] == 201
    sid, box = session["id"], session["sandbox_id"]
    run = f"/v1/sessions/{sid}/features/shell/run"
    outputs = [await t.post(run, {"command": cmd}) for cmd in ("echo one", "cd /tmp", "echo $TRACEPARENT")]
    assert all(o["http_status"] == 200 and o["exit_code"] == 0 for o in outputs)
    wrote = await t.post(f"/v1/sessions/{sid}/features/files/write", {"path": "a.txt", "content": "x"})
    assert wrote["http_status"] == 200
    missing = await t.post(f"/v1/sessions/{sid}/features/files/read", {"path": "nope.txt"})
    assert missing["http_status"] == 404
    assert await t.delete(f"/v1/sessions/{sid}") == 204

    spans = [s for s in exporter.get_finished_spans() if s.context.trace_id == t.trace_id]
    index = _by_id(spans)
    names = [s.name for s in spans]

    # every request span continues the client's trace: its parent is the header's span id
    servers = [s for s in spans if s.kind == SpanKind.SERVER]
    assert len(servers) == 8
    assert {s.parent.span_id for s in servers if s.parent} == set(t.parents)
    assert all(s.parent is not None and s.parent.is_remote for s in servers)
    # named by route template, never by raw ids (one name for every session's calls)
    assert sorted({s.name for s in servers}) == [
        "DELETE /v1/sessions/{session_id}",
        "POST /v1/environments",
        "POST /v1/sessions",
        "POST /v1/sessions/{session_id}/features/{feature}/{activity}",
    ]
    route = next(s for s in servers if "features" in s.name)
    assert (route.attributes or {})["http.route"] == "/v1/sessions/{session_id}/features/{feature}/{activity}"

    # TRACEPARENT inside the sandbox belongs to the same trace
    inner = outputs[2]["stdout"].strip()
    assert inner.startswith(f"00-{t.trace_id:032x}-"), inner

    def one(name: str) -> ReadableSpan:
        found = [s for s in spans if s.name == name]
        assert len(found) == 1, (name, names)
        return found[0]

    start = one("session.start")
    assert _parent(start, index) in servers
    attrs = start.attributes or {}
    assert attrs["sandlot.session_id"] == sid and attrs["sandlot.sandbox_id"] == box
    assert attrs["sandlot.environment"] == env["name"] and attrs["sandlot.warm"] is False
    assert attrs["sandlot.outcome"] == "ok"
    claim = one("pool.claim")
    assert _parent(claim, index) is start
    provision = one("sandbox.provision")
    assert "session.start" in _ancestors(provision, index)
    create = one("runtime.create")
    assert "sandbox.provision" in _ancestors(create, index)
    assert any(
        (s.attributes or {}).get("db.system") in ("postgresql", "sqlite")
        and "session.start" in _ancestors(s, index)
        for s in spans
    ), "database calls are spans under the session"

    shell_runs = [s for s in spans if s.name == "activity shell.run"]
    assert len(shell_runs) == 3
    for span in shell_runs:
        assert _parent(span, index) in servers
        a = span.attributes or {}
        assert a["sandlot.feature"] == "shell" and a["sandlot.activity"] == "run"
        assert a["sandlot.session_id"] == sid and a["sandlot.sandbox_id"] == box
        assert a["sandlot.tenant_id"] and a["sandlot.image"] == "sandlot/busybox:latest"
        assert a["sandlot.environment"] == env["name"] and a["sandlot.outcome"] == "ok"
        assert span.status.status_code != StatusCode.ERROR
    assert any(
        s.name == "runtime.open_process" and "activity shell.run" in _ancestors(s, index) for s in spans
    )

    write = one("activity files.write")
    assert (write.attributes or {})["sandlot.outcome"] == "ok"
    failed = one("activity files.read")
    assert failed.status.status_code == StatusCode.ERROR
    assert (failed.attributes or {})["sandlot.outcome"] == "error"
    assert (failed.attributes or {})["error.type"] == "not_found"

    end = one("session.end")
    assert _parent(end, index) in servers
    assert "session.end" in _ancestors(one("sandbox.shutdown"), index)


async def test_without_a_client_traceparent_a_request_starts_its_own_trace(
    traced: tuple[AsyncTestClient, InMemorySpanExporter], new_tenant: NewTenant
) -> None:
    client, exporter = traced
    headers = await new_tenant()
    exporter.clear()
    resp = await client.get("/v1/sessions", headers=headers)
    assert resp.status_code == 200
    servers = [s for s in exporter.get_finished_spans() if s.kind == SpanKind.SERVER]
    assert servers and servers[-1].parent is None


async def test_apps_in_one_process_each_trace_to_their_own_provider(
    traced: tuple[AsyncTestClient, InMemorySpanExporter], app_settings: Settings, new_tenant: NewTenant
) -> None:
    """An untraced app started beside a traced one neither silences it nor receives its spans
    (the tracer was one process-wide setting: the last app started won)."""
    client, exporter = traced
    headers = await new_tenant()
    other = create_app(app_settings.model_copy(update={"instance": f"{app_settings.instance}-other"}))
    async with AsyncTestClient(other, timeout=120) as untraced:
        exporter.clear()
        name = f"two-{secrets.token_hex(3)}"
        body = {"name": name, "images": ["sandlot/busybox:latest"], "pool_size": 0}
        assert (await untraced.post("/v1/environments", json=body, headers=headers)).status_code == 201
        theirs = (await untraced.post("/v1/sessions", json={"environment": name}, headers=headers)).json()
        assert not [s for s in exporter.get_finished_spans() if s.name == "session.start"]
        ours = await client.post("/v1/sessions", json={"environment": name}, headers=headers)
        assert ours.status_code == 201
        starts = [s for s in exporter.get_finished_spans() if s.name == "session.start"]
        assert [(s.attributes or {})["sandlot.session_id"] for s in starts] == [ours.json()["id"]]
        for sid in (theirs["id"], ours.json()["id"]):
            assert (await client.delete(f"/v1/sessions/{sid}", headers=headers)).status_code == 204


async def test_metrics_are_an_operators_only(
    client: AsyncTestClient, new_tenant: NewTenant, operator: Headers
) -> None:
    """Without a key 401, with a tenant's 403 (it answered both, #27 finding 7); an operator's 200."""
    assert (await client.get("/metrics")).status_code == 401
    tenant = await client.get("/metrics", headers=await new_tenant())
    assert tenant.status_code == 403 and "sandlot_" not in tenant.text
    assert (await client.get("/metrics", headers=operator)).status_code == 200


async def test_a_scrapers_key_reads_the_metrics_and_nothing_else(
    client: AsyncTestClient, new_tenant: NewTenant, operator: Headers
) -> None:
    """``metrics:read``: a Prometheus scraper needs no operator key (it was the only way in).
    Only an operator grants it: the figures are the whole service's."""
    wanted = {"name": "scraper", "scopes": ["metrics:read"]}
    made = await client.post("/v1/keys", json=wanted, headers=operator)
    assert made.status_code == 201, made.text
    scraper = {"Authorization": f"Bearer {made.json()['secret']}"}
    resp = await client.get("/metrics", headers=scraper)
    assert resp.status_code == 200 and "sandlot_" in resp.text
    for path in ("/v1/sandboxes", "/v1/environments", "/v1/audit", "/v1/keys", "/v1/tenants"):
        assert (await client.get(path, headers=scraper)).status_code == 403, path
    # nor the keys of its tenant, the operators' (a leaked scrape configuration revoked them all)
    own_id = made.json()["key"]["id"]
    assert (await client.post("/v1/keys", json=wanted, headers=scraper)).status_code == 403
    assert (await client.delete(f"/v1/keys/{own_id}", headers=scraper)).status_code == 403
    refused = await client.post("/v1/keys", json={"scopes": ["metrics:read"]}, headers=await new_tenant())
    assert refused.status_code == 403, refused.text


async def test_metrics_parse_and_count_acquisitions(
    client: AsyncTestClient, new_tenant: NewTenant, operator: Headers
) -> None:
    headers = await new_tenant()

    async def scrape() -> dict[str, float]:
        resp = await client.get("/metrics", headers=operator)
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/plain")
        samples: dict[str, float] = {}
        for family in text_string_to_metric_families(resp.text):
            for sample in family.samples:
                key = sample.name + json.dumps(sample.labels, sort_keys=True)
                samples[key] = sample.value
        return samples

    before = await scrape()
    name = f"m-{secrets.token_hex(3)}"
    created = await client.post(
        "/v1/environments",
        json={"name": name, "images": ["sandlot/busybox:latest"], "pool_size": 0},
        headers=headers,
    )
    assert created.status_code == 201
    ids = []
    for _ in range(3):
        resp = await client.post("/v1/sessions", json={"environment": name}, headers=headers)
        assert resp.status_code == 201
        ids.append(resp.json()["id"])
    bad = await client.post(
        f"/v1/sessions/{ids[0]}/features/files/read", json={"path": "missing"}, headers=headers
    )
    assert bad.status_code == 404
    after = await scrape()
    for sid in ids:
        assert (await client.delete(f"/v1/sessions/{sid}", headers=headers)).status_code == 204

    cold = 'sandlot_acquire_seconds_count{"kind": "cold"}'
    assert after[cold] - before.get(cold, 0) == 3
    errors = 'sandlot_activity_errors_total{"activity": "read", "code": "not_found", "feature": "files"}'
    assert after[errors] - before.get(errors, 0) == 1
    assert after['sandlot_sandboxes{"status": "in_session"}'] >= 3
    assert after['sandlot_node_up{"runtime": "docker"}'] == 1
    assert any(k.startswith("sandlot_pool_target") for k in after)
    text = (await client.get("/metrics", headers=operator)).text
    assert "Bearer" not in text and "ten_" not in text  # no tenant ids or secrets in labels


def test_json_logs_carry_trace_and_span_ids(app_settings: Settings) -> None:
    settings = app_settings.model_copy(update={"otel_service_name": "sandlot-test"})
    provider = build_provider(settings, processor=SimpleSpanProcessor(InMemorySpanExporter()))
    assert provider is not None
    tracer = provider.get_tracer("test")
    record = logging.LogRecord("sandlot.test", logging.INFO, __file__, 1, "hello %s", ("there",), None)
    record.session_id = "ses_1"
    with tracer.start_as_current_span("outer") as span:
        line = json.loads(JsonFormatter().format(record))
        ctx = span.get_span_context()
    assert line["message"] == "hello there" and line["level"] == "info" and line["session_id"] == "ses_1"
    assert line["trace_id"] == f"{ctx.trace_id:032x}" and line["span_id"] == f"{ctx.span_id:016x}"
    outside = json.loads(JsonFormatter().format(record))
    assert "trace_id" not in outside
    assert trace.get_current_span().get_span_context().is_valid is False


def test_tracing_is_off_by_default(app_settings: Settings) -> None:
    assert Settings().otel_exporter == "none"
    assert build_provider(app_settings) is None
