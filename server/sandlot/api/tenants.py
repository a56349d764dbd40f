"""``/v1/tenants`` (operators) and ``/v1/keys`` (operators: any tenant's; a tenant key: its own
tenant's keys, with no more scopes than it has itself)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from litestar import Controller, delete, get, patch, post
from litestar.params import FromPath, JSONBody, QueryParameter
from pydantic import BaseModel, Field

from sandlot.api.deps import PrincipalDep, ServicesDep
from sandlot.api.problems import problems
from sandlot.api.schemas import MAX_SECONDS, In, Out

__all__ = [
    "KeyController",
    "KeyCreate",
    "KeyCreated",
    "KeyOut",
    "TenantController",
    "TenantCreate",
    "TenantOut",
    "TenantUpdate",
    "TenantUsageOut",
]


class _Quotas(In):
    max_sandboxes: Annotated[int | None, Field(ge=0, le=1_000_000)] = None
    max_memory_mb: Annotated[int | None, Field(ge=0, le=1 << 30)] = None
    max_cpus: Annotated[float | None, Field(ge=0, le=1_000_000)] = None
    max_sessions: Annotated[int | None, Field(ge=0, le=1_000_000)] = None
    max_disk_mb: Annotated[int | None, Field(ge=0, le=1 << 30)] = None
    max_snapshot_mb: Annotated[int | None, Field(ge=0, le=1 << 30)] = None
    max_ttl_seconds: Annotated[
        int | None, Field(ge=0, le=MAX_SECONDS, description="0: no longest of its own (the service's)")
    ] = None
    max_keys: Annotated[int | None, Field(ge=0, le=100_000, description="API keys not revoked")] = None
    max_environments: Annotated[int | None, Field(ge=0, le=100_000)] = None


class TenantCreate(_Quotas):
    """A tenant; unset quotas take the service's defaults."""

    name: Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")]
    allow_network: bool = False


class TenantUpdate(_Quotas):
    """New quotas for a tenant (only those given change); what runs keeps running, new
    sandboxes, sessions and snapshots meet them."""

    allow_network: bool | None = None


class TenantOut(Out):
    id: str
    name: str
    max_sandboxes: int
    max_memory_mb: int
    max_cpus: float
    max_sessions: int
    max_disk_mb: int
    max_snapshot_mb: int
    max_ttl_seconds: int | None
    max_keys: int
    max_environments: int
    allow_network: bool
    created_at: datetime


class TenantUsageOut(Out):
    """What a tenant uses now, against its quotas."""

    sandboxes: int
    memory_mb: int
    cpus: float
    disk_mb: int
    sessions: int
    snapshot_bytes: int = Field(description="What its snapshots keep: each file content once")
    snapshot_blobs: int = Field(description="Distinct file contents (and older tar snapshots) kept")
    keys: int = Field(description="API keys not revoked")
    environments: int


class KeyCreate(In):
    """A key for ``tenant`` (id or name; operators only, a tenant key makes keys for its own)."""

    name: Annotated[str, Field(max_length=100)] = ""
    scopes: Annotated[
        list[Literal["operator", "sandboxes:read", "sandboxes:write", "metrics:read"]] | None,
        Field(max_length=4),
    ] = None
    tenant: Annotated[str | None, Field(min_length=1, max_length=100)] = None


class KeyOut(Out):
    """A key as it is stored: never its secret or digest."""

    id: str
    tenant_id: str
    name: str
    prefix: str
    scopes: list[str]
    created_at: datetime
    revoked_at: datetime | None


class KeyCreated(BaseModel):
    key: KeyOut
    secret: str = Field(description="The key itself: shown this once, never stored")


TenantFilter = Annotated[str | None, QueryParameter(max_length=100)]


class TenantController(Controller):
    path = "/v1/tenants"
    tags = ["tenants"]

    @post("/", status_code=201, summary="Create a tenant (operators)", responses=problems(409, 413))
    async def create(
        self, data: JSONBody[TenantCreate], services: ServicesDep, principal: PrincipalDep
    ) -> TenantOut:
        tenant = await services.tenants.create_tenant(principal, **data.model_dump(exclude_unset=True))
        return TenantOut.of(tenant)

    @get("/", summary="List tenants (operators; a tenant key sees its own)", responses=problems())
    async def list_tenants(self, services: ServicesDep, principal: PrincipalDep) -> list[TenantOut]:
        return [TenantOut.of(t) for t in await services.tenants.tenants(principal)]

    @get("/{tenant:str}", summary="Get a tenant (by id or name)", responses=problems(404))
    async def get_tenant(
        self, tenant: FromPath[str], services: ServicesDep, principal: PrincipalDep
    ) -> TenantOut:
        return TenantOut.of(await services.tenants.tenant(principal, tenant))

    @patch("/{tenant:str}", summary="Change a tenant's quotas (operators)", responses=problems(404))
    async def update(
        self,
        tenant: FromPath[str],
        data: JSONBody[TenantUpdate],
        services: ServicesDep,
        principal: PrincipalDep,
    ) -> TenantOut:
        fields = data.model_dump(exclude_unset=True)
        return TenantOut.of(await services.tenants.update_tenant(principal, tenant, **fields))

    @get("/{tenant:str}/usage", summary="What a tenant uses now, against its quotas", responses=problems(404))
    async def usage(
        self, tenant: FromPath[str], services: ServicesDep, principal: PrincipalDep
    ) -> TenantUsageOut:
        found = await services.tenants.tenant(principal, tenant)
        return TenantUsageOut.of((await services.tenants.usage(principal, [found]))[found.id])


class KeyController(Controller):
    path = "/v1/keys"
    tags = ["keys"]

    @post(
        "/",
        status_code=201,
        summary="Create an API key (its secret is shown once)",
        responses=problems(404, 413),
    )
    async def create(
        self, data: JSONBody[KeyCreate], services: ServicesDep, principal: PrincipalDep
    ) -> KeyCreated:
        created = await services.tenants.create_key(
            principal, tenant=data.tenant, name=data.name, scopes=data.scopes
        )
        return KeyCreated(key=KeyOut.of(created.key), secret=created.plaintext)

    @get(
        "/",
        summary="List API keys (a tenant key: its tenant's; operators: all, or ?tenant=)",
        responses=problems(404),
    )
    async def list_keys(
        self, services: ServicesDep, principal: PrincipalDep, tenant: TenantFilter = None
    ) -> list[KeyOut]:
        return [KeyOut.of(k) for k in await services.tenants.keys(principal, tenant)]

    @delete(
        "/{key_id:str}",
        summary="Revoke an API key (it stops working at once here, within seconds elsewhere)",
        responses=problems(404),
    )
    async def revoke(self, key_id: FromPath[str], services: ServicesDep, principal: PrincipalDep) -> None:
        await services.tenants.revoke_key(principal, key_id)
