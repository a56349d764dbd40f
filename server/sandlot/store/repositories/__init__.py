"""Repositories: the only code that writes SQL. They flush, never commit.

A repository scoped to one tenant (or to an operator, ``tenant_id=None``, who sees every
tenant) finds nothing when asked for another tenant's id, which the API reports as 404, so ids
cannot be probed. One module per concept; every dialect branch lives here, in the store.
"""

from sandlot.store.repositories.accounts import ApiKeyRepository, TenantRepository
from sandlot.store.repositories.audit import AuditRepository, take_tokens
from sandlot.store.repositories.environments import EnvironmentRepository
from sandlot.store.repositories.pools import PoolRepository
from sandlot.store.repositories.sandboxes import ACTIVE, SandboxQuery, SandboxRepository
from sandlot.store.repositories.sessions import ActivityRepository, SessionRepository
from sandlot.store.repositories.stats import StatsRepository

__all__ = [
    "ACTIVE",
    "ActivityRepository",
    "ApiKeyRepository",
    "AuditRepository",
    "EnvironmentRepository",
    "PoolRepository",
    "SandboxQuery",
    "SandboxRepository",
    "SessionRepository",
    "StatsRepository",
    "TenantRepository",
    "take_tokens",
]
