"""compose.yaml wires PostgreSQL, Sandlot, the OpenTelemetry collector and Jaeger together.

No engine here can pull their images, so this checks the wiring statically: every name and
port one service uses to reach another matches what the other declares, and Sandlot's
settings in the file are settings Sandlot has."""

from __future__ import annotations

from pathlib import Path

import yaml

from sandlot.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def test_compose_wires_sandlot_to_the_collector_and_the_collector_to_jaeger() -> None:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    services = compose["services"]
    assert {"postgres", "sandlot", "otel-collector", "jaeger"} <= set(services)

    env = services["sandlot"]["environment"]
    fields = set(Settings.model_fields)
    for name in env:
        assert name.startswith("SANDLOT_") and name.removeprefix("SANDLOT_").lower() in fields, name
    assert env["SANDLOT_OTEL_EXPORTER"] == "otlp-http"
    assert env["SANDLOT_OTEL_ENDPOINT"] == "http://otel-collector:4318"
    assert "@postgres:5432/" in env["SANDLOT_DATABASE_URL"]
    assert "/var/run/docker.sock:/var/run/docker.sock" in services["sandlot"]["volumes"]
    assert services["sandlot"]["build"]["context"] == "." and (ROOT / "Dockerfile").is_file()

    mount = next(v for v in services["otel-collector"]["volumes"] if v.startswith("./deploy/"))
    source, target = mount.split(":")[:2]
    assert any(arg.endswith(target) for arg in services["otel-collector"]["command"])
    collector = yaml.safe_load((ROOT / source).read_text())
    assert collector["receivers"]["otlp"]["protocols"]["http"]["endpoint"].endswith(":4318")
    exporters = collector["service"]["pipelines"]["traces"]["exporters"]
    jaeger = next(collector["exporters"][e] for e in exporters if e.startswith("otlp/"))
    assert jaeger["endpoint"] == "jaeger:4317"
    assert services["jaeger"]["environment"]["COLLECTOR_OTLP_ENABLED"] == "true"
    assert "16686:16686" in services["jaeger"]["ports"]
