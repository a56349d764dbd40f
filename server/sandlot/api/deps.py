"""Dependencies the controllers receive: the services and the calling principal."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from typing import Annotated, Any

from litestar.datastructures import Headers, State
from litestar.di import NamedDependency
from litestar.params import QueryParameter
from litestar.types import Scope

from sandlot.api.bounds import BOUNDS
from sandlot.api.ws import before_accept
from sandlot.domain.errors import RateLimited, SandlotError
from sandlot.services.accounts import AccountService, Principal
from sandlot.services.assets import AssetService
from sandlot.services.audit import AuditService
from sandlot.services.charts import ChartService
from sandlot.services.environments import EnvironmentService
from sandlot.services.health import HealthService
from sandlot.services.overview import OverviewService
from sandlot.services.pools import PoolService
from sandlot.services.processes import ProcessService
from sandlot.services.rate_limits import RateLimiter
from sandlot.services.sandboxes import SandboxService
from sandlot.services.sessions import SessionService
from sandlot.services.sign_ins import SignIns
from sandlot.services.snapshot_gc import SnapshotCollector
from sandlot.services.snapshots import SnapshotService
from sandlot.services.tenants import TenantService
from sandlot.services.terminals import TerminalService
from sandlot.settings import Settings

__all__ = [
    "ALLOWANCE",
    "CALLER",
    "Body",
    "Limit",
    "Offset",
    "PrincipalDep",
    "Services",
    "ServicesDep",
    "StatusFilter",
    "admit",
    "body_chunks",
    "provide_principal",
    "provide_services",
]


@dataclass
class Services:
    """Everything a request may need, built once in the app lifespan."""

    settings: Settings
    accounts: AccountService
    sandboxes: SandboxService
    environments: EnvironmentService
    pools: PoolService
    sessions: SessionService
    processes: ProcessService
    snapshots: SnapshotService
    collector: SnapshotCollector
    assets: AssetService
    terminals: TerminalService
    health: HealthService
    tenants: TenantService
    overview: OverviewService
    charts: ChartService
    limits: RateLimiter
    sign_ins: SignIns
    tenant_limits: RateLimiter
    audit: AuditService


def provide_services(state: State) -> Services:
    services: Services = state.services
    return services


#: Where a request's caller and rate allowance are kept in its ASGI scope's state (for the
#: ``Accountable`` middleware: the audit trail and the ``RateLimit-*`` headers).
CALLER = "sandlot.caller"
ALLOWANCE = "sandlot.allowance"


async def admit(services: Services, caller: Awaitable[Principal], scope: Scope) -> Principal:
    """The caller (``caller`` authenticates it), its request counted against its key's rate
    limit and its tenant's (429 beyond), a WebSocket also against its key's open sockets (``api/bounds.py``),
    and noted for the audit trail. A WebSocket's refusal is the close of ``api.ws.before_accept``."""
    try:
        principal = await caller
        state = scope.setdefault("state", {})
        state[CALLER] = principal
        try:
            state[ALLOWANCE] = await services.limits.admit(principal)
        except RateLimited as exc:
            state[ALLOWANCE] = exc.allowance
            raise
        await services.tenant_limits.admit(principal)  # every key of the tenant draws from it too
        bounds = state.get(BOUNDS)
        if bounds is not None:
            bounds.hold_socket(scope, principal)
        return principal
    except SandlotError as exc:
        if scope["type"] == "websocket":
            raise before_accept(exc) from None
        raise


async def provide_principal(headers: Headers, services: NamedDependency[Services], scope: Scope) -> Principal:
    """The caller, from the ``Authorization`` header (HTTP requests and WebSockets alike)."""
    return await admit(services, services.accounts.authenticate(headers.get("authorization")), scope)


#: Annotations for controller parameters that receive the dependencies above.
ServicesDep = NamedDependency[Services]
PrincipalDep = NamedDependency[Principal]

#: Query parameters shared by the list endpoints.
StatusFilter = Annotated[list[Annotated[str, QueryParameter(max_length=32)]] | None, QueryParameter()]
Limit = Annotated[int, QueryParameter(ge=1, le=1000)]
Offset = Annotated[int, QueryParameter(ge=0, le=1 << 40)]


class Body:
    """A request's body as it arrives (the route's body limit applies while it streams), and
    how many bytes came."""

    def __init__(self, request: Any) -> None:
        self._request = request
        self.received = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._request.stream():
            if chunk:
                self.received += len(chunk)
                yield chunk


def body_chunks(request: Any) -> AsyncIterator[bytes]:
    return Body(request).__aiter__()
