"""Prometheus metrics, served at ``/metrics``.

Counters and histograms are updated where things happen (acquire, commands, activities); the
gauges (sandboxes by status, pools, node health) are read from the store and the runtime when
``/metrics`` is scraped, so every API process reports the same truth. Labels carry statuses,
images, features and error codes only: never a tenant, a key or a path.

With several granian workers each worker keeps its own counters; scrape each worker, or run
one worker per port (documented in the README).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from sandlot.domain.status import SandboxStatus

__all__ = ["Metrics", "PoolFigures"]

_FAST = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


@dataclass(frozen=True, slots=True)
class PoolFigures:
    image: str
    ready: int
    target_min: int
    target_max: int


class Metrics:
    """One app's metrics, in its own registry (built by the app; every API worker has one)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.acquire = Histogram(
            "sandlot_acquire_seconds",
            "Time to start a session on a sandbox; kind=warm (from the pool) or cold (created).",
            ["kind"],
            buckets=_FAST,
            registry=r,
        )
        self.command = Histogram(
            "sandlot_command_seconds",
            "Command latency inside the service; source=shell (persistent shell) or exec.",
            ["source"],
            buckets=_FAST,
            registry=r,
        )
        self.activities = Counter(
            "sandlot_activities",
            "Feature activities called, by feature, activity and outcome (ok or error).",
            ["feature", "activity", "outcome"],
            registry=r,
        )
        self.activity_errors = Counter(
            "sandlot_activity_errors",
            "Failed feature activities by error code.",
            ["feature", "activity", "code"],
            registry=r,
        )
        self.sandboxes = Gauge(
            "sandlot_sandboxes", "Sandboxes by status (every tenant).", ["status"], registry=r
        )
        self.pool_ready = Gauge(
            "sandlot_pool_ready", "Ready pool sandboxes per image (every environment).", ["image"], registry=r
        )
        self.pool_target = Gauge(
            "sandlot_pool_target",
            "Pool bounds per image summed over environments; bound=min or max.",
            ["image", "bound"],
            registry=r,
        )
        self.node_up = Gauge(
            "sandlot_node_up", "1 when this node's sandbox runtime answers.", ["runtime"], registry=r
        )

    def refresh(
        self,
        by_status: dict[str, int],
        pools: Iterable[PoolFigures],
        runtime: str,
        runtime_up: bool,
    ) -> None:
        for status in SandboxStatus:
            self.sandboxes.labels(status.value).set(by_status.get(status.value, 0))
        self.pool_ready.clear()
        self.pool_target.clear()
        for pool in pools:
            self.pool_ready.labels(pool.image).inc(pool.ready)
            self.pool_target.labels(pool.image, "min").inc(pool.target_min)
            self.pool_target.labels(pool.image, "max").inc(pool.target_max)
        self.node_up.clear()
        self.node_up.labels(runtime).set(1 if runtime_up else 0)

    def render(self) -> bytes:
        return generate_latest(self.registry)
