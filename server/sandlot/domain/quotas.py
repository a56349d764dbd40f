"""The names of a tenant's quotas (its columns, the API's fields, the CLI's options)."""

from __future__ import annotations

__all__ = ["QUOTAS"]

#: ``max_ttl_seconds`` 0 or None: no longest of the tenant's own (the service's applies).
QUOTAS = (
    "max_sandboxes",
    "max_memory_mb",
    "max_cpus",
    "max_sessions",
    "max_disk_mb",
    "max_snapshot_mb",
    "max_ttl_seconds",
    "max_keys",
    "max_environments",
)
