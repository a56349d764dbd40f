"""Dependencies the controllers receive: the services and the calling principal."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from litestar.datastructures import Headers, State
from litestar.di import NamedDependency
from litestar.params import QueryParameter

from sandlot.services.accounts import AccountService, Principal
from sandlot.services.environments import EnvironmentService
from sandlot.services.pools import PoolService
from sandlot.services.processes import ProcessService
from sandlot.services.sandboxes import SandboxService
from sandlot.services.sessions import SessionService
from sandlot.settings import Settings

__all__ = [
    "Limit",
    "Offset",
    "PrincipalDep",
    "Services",
    "ServicesDep",
    "StatusFilter",
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


def provide_services(state: State) -> Services:
    services: Services = state.services
    return services


async def provide_principal(headers: Headers, services: NamedDependency[Services]) -> Principal:
    """The caller, from the ``Authorization`` header (HTTP requests and WebSockets alike)."""
    return await services.accounts.authenticate(headers.get("authorization"))


#: Annotations for controller parameters that receive the dependencies above.
ServicesDep = NamedDependency[Services]
PrincipalDep = NamedDependency[Principal]

#: Query parameters shared by the list endpoints.
StatusFilter = Annotated[list[str] | None, QueryParameter()]
Limit = Annotated[int, QueryParameter(ge=1, le=1000)]
Offset = Annotated[int, QueryParameter(ge=0)]
