"""The ``sandlot`` command: serve, migrate, tenants, keys, images, openapi.

Every command takes ``--json`` for machine-readable output. ``sandlot keys create`` prints only
the new key when its output is piped, so ``KEY=$(sandlot keys create ...)`` just works.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import click

from sandlot.domain.quotas import QUOTAS
from sandlot.settings import Settings

__all__ = ["app_factory", "main"]

T = TypeVar("T")


def app_factory() -> Any:
    """Granian's entry point in each worker: settings from the environment."""
    from sandlot.app import create_app
    from sandlot.observability.logs import configure_logging

    settings = Settings()
    configure_logging(settings)
    return create_app(settings)


def _out(as_json: bool, data: Any, text: str | Callable[[], str]) -> None:
    if as_json:
        click.echo(json.dumps(data, indent=2, default=str))
    else:
        click.echo(text() if callable(text) else text)


def _run(make: Callable[[Settings], Coroutine[Any, Any, T]]) -> T:
    from sandlot.domain.errors import SandlotError

    settings = Settings()
    try:
        return asyncio.run(make(settings))
    except SandlotError as exc:
        raise click.ClickException(f"{exc.code}: {exc.message}") from exc


async def _accounts(settings: Settings, use: Callable[[Any], Awaitable[T]]) -> T:
    from sandlot.services.accounts import AccountService
    from sandlot.store import migrate
    from sandlot.store.engine import make_engine, make_sessionmaker

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    await asyncio.to_thread(migrate.upgrade, settings.database_url)
    engine = make_engine(settings.database_url)
    try:
        return await use(AccountService(make_sessionmaker(engine)))
    finally:
        await engine.dispose()


json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")


@click.group()
@click.version_option(package_name="sandlot")
def main() -> None:
    """Sandlot: isolated sandboxes for AI agents."""


# -- serve / migrate / openapi -------------------------------------------------------------


@main.command()
@click.option("--host", default=None, help="Bind address (SANDLOT_HOST).")
@click.option("--port", type=int, default=None, help="Port (SANDLOT_PORT).")
@click.option("--workers", type=int, default=None, help="Worker processes (SANDLOT_WORKERS).")
@json_option
def serve(host: str | None, port: int | None, workers: int | None, as_json: bool) -> None:
    """Migrate the store, choose the runtime, serve; once the service answers, create the
    first operator key if none exists and print the address (and that key)."""
    import os

    from sandlot.startup import serve as start

    for name, value in (("HOST", host), ("PORT", port), ("WORKERS", workers)):
        if value is not None:
            os.environ[f"SANDLOT_{name}"] = str(value)
    start(Settings(), as_json=as_json)


@main.command()
@click.option("--revision", default="head", show_default=True)
@click.option("--downgrade", "down", default=None, help="Downgrade to this revision instead.")
@json_option
def migrate(revision: str, down: str | None, as_json: bool) -> None:
    """Apply (or revert) database migrations."""
    from sandlot.store import migrate as m

    settings = Settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    if down is not None:
        m.downgrade(settings.database_url, down)
    else:
        m.upgrade(settings.database_url, revision)
    _out(as_json, {"ok": True, "revision": down or revision}, f"migrated to {down or revision}")


@main.command()
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None)
@json_option
def openapi(output: Path | None, as_json: bool) -> None:
    """Write the OpenAPI document (to stdout without --output)."""
    from sandlot.app import create_app

    doc = create_app(Settings()).openapi_schema.to_schema()
    text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    if output is None:
        click.echo(text, nl=False)
    else:
        output.write_text(text)
        _out(as_json, {"ok": True, "path": str(output)}, f"wrote {output}")


# -- tenants ---------------------------------------------------------------------------------


def _tenant_dict(t: Any) -> dict[str, Any]:
    return {
        "id": t.id,
        "name": t.name,
        **{q: getattr(t, q) for q in QUOTAS},
        "allow_network": t.allow_network,
        "created_at": t.created_at.isoformat(),
    }


def quota_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--max-sandboxes`` and the rest: one option per quota (unset: left as it is)."""
    for quota in reversed(QUOTAS):
        kind = float if quota == "max_cpus" else int
        flag = "--" + quota.replace("_", "-")
        command = click.option(flag, quota, type=kind, default=None)(command)
    return command


@main.group()
def tenants() -> None:
    """Manage tenants."""


@tenants.command("create")
@click.argument("name")
@quota_options
@click.option("--allow-network", is_flag=True, help="Let its sandboxes have network access.")
@json_option
def tenants_create(name: str, allow_network: bool, as_json: bool, **quota: Any) -> None:
    """Create a tenant (quotas not given take the defaults)."""
    tenant = _run(
        lambda s: _accounts(s, lambda a: a.create_tenant(name, allow_network=allow_network, **quota))
    )
    _out(as_json, _tenant_dict(tenant), f"created tenant {tenant.name} ({tenant.id})")


@tenants.command("set")
@click.argument("tenant")
@quota_options
@click.option(
    "--allow-network/--no-network", default=None, help="Whether its sandboxes may have network access."
)
@json_option
def tenants_set(tenant: str, allow_network: bool | None, as_json: bool, **quota: Any) -> None:
    """Change a tenant's quotas (by id or name; --max-ttl-seconds 0: the service's longest)."""
    row = _run(
        lambda s: _accounts(s, lambda a: a.update_tenant(tenant, allow_network=allow_network, **quota))
    )
    _out(as_json, _tenant_dict(row), f"updated tenant {row.name} ({row.id})")


@tenants.command("list")
@json_option
def tenants_list(as_json: bool) -> None:
    """List tenants."""
    rows = _run(lambda s: _accounts(s, lambda a: a.list_tenants()))
    _out(
        as_json,
        [_tenant_dict(t) for t in rows],
        lambda: "\n".join(f"{t.id}  {t.name}  max_sandboxes={t.max_sandboxes}" for t in rows),
    )


# -- keys ------------------------------------------------------------------------------------


def _key_dict(k: Any) -> dict[str, Any]:
    return {
        "id": k.id,
        "tenant_id": k.tenant_id,
        "name": k.name,
        "prefix": k.prefix,
        "scopes": k.scopes,
        "created_at": k.created_at.isoformat(),
        "revoked_at": k.revoked_at.isoformat() if k.revoked_at else None,
    }


@main.group()
def keys() -> None:
    """Manage API keys."""


@keys.command("create")
@click.option(
    "--tenant",
    default=None,
    help="Tenant id or name; the operators' own for --operator or --scope metrics:read alone.",
)
@click.option("--name", default="", help="A label for the key.")
@click.option("--scope", "scopes", multiple=True, help="Scope to grant (repeatable).")
@click.option("--operator", is_flag=True, help="Grant the operator scope (sees every tenant).")
@json_option
def keys_create(
    tenant: str | None, name: str, scopes: tuple[str, ...], operator: bool, as_json: bool
) -> None:
    """Create an API key; it is shown once."""
    from sandlot.services.accounts import OPERATOR_TENANT

    async def make(a: Any) -> Any:
        if tenant is None:
            if not operator and set(scopes) != {"metrics:read"}:  # a scraper's key is no tenant's
                raise click.UsageError("--tenant is required (or --operator, or --scope metrics:read alone)")
            if not any(t.name == OPERATOR_TENANT for t in await a.list_tenants()):
                await a.create_tenant(OPERATOR_TENANT)
        return await a.create_key(
            tenant or OPERATOR_TENANT, name=name, scopes=scopes or None, operator=operator
        )

    created = _run(lambda s: _accounts(s, make))
    if as_json:
        click.echo(json.dumps({**_key_dict(created.key), "key": created.plaintext}, indent=2))
    elif not sys.stdout.isatty():
        click.echo(created.plaintext)
    else:
        click.echo(f"key {created.key.id} scopes={','.join(created.key.scopes)}")
        click.echo(f"{created.plaintext}\n(shown once: keep it now)")


@keys.command("revoke")
@click.argument("key")
@json_option
def keys_revoke(key: str, as_json: bool) -> None:
    """Revoke a key by id or prefix."""
    revoked = _run(lambda s: _accounts(s, lambda a: a.revoke_key(key)))
    _out(as_json, _key_dict(revoked), f"revoked {revoked.id}")


@keys.command("list")
@click.option("--tenant", default=None)
@json_option
def keys_list(tenant: str | None, as_json: bool) -> None:
    """List keys (never their secrets)."""
    rows = _run(lambda s: _accounts(s, lambda a: a.list_keys(tenant)))
    _out(
        as_json,
        [_key_dict(k) for k in rows],
        lambda: "\n".join(
            f"{k.id}  sl_{k.prefix}_…  {','.join(k.scopes)}" + ("  REVOKED" if k.revoked_at else "")
            for k in rows
        ),
    )


# -- images ----------------------------------------------------------------------------------


async def _images(settings: Settings, use: Callable[[Any], Awaitable[T]]) -> T:
    from sandlot.runtime.docker_images import image_service

    async with image_service(settings.docker_url) as service:
        return await use(service)


@main.group()
def images() -> None:
    """Manage sandbox images on the Docker engine."""


@images.command("list")
@json_option
def images_list(as_json: bool) -> None:
    rows = _run(lambda s: _images(s, lambda i: i.list_images()))
    _out(
        as_json,
        rows,
        lambda: "\n".join(
            f"{','.join(r['tags']) or '<none>'}  {r['id'][7:19]}  {r['size'] / 1e6:.1f} MB" for r in rows
        ),
    )


@images.command("pull")
@click.argument("name")
@json_option
def images_pull(name: str, as_json: bool) -> None:
    _run(lambda s: _images(s, lambda i: i.pull(name)))
    _out(as_json, {"ok": True, "image": name}, f"pulled {name}")


@images.command("import")
@click.argument("rootfs", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("name")
@json_option
def images_import(rootfs: Path, name: str, as_json: bool) -> None:
    """Make image NAME from a root filesystem tar (like docker import)."""
    _run(lambda s: _images(s, lambda i: i.import_rootfs(rootfs, name)))
    _out(as_json, {"ok": True, "image": name}, f"imported {name}")


@images.command("build-offline")
@click.option("--image", "which", multiple=True, help="Only this built-in image (repeatable).")
@click.option("--force", is_flag=True, help="Rebuild even when present.")
@json_option
def images_build_offline(which: tuple[str, ...], force: bool, as_json: bool) -> None:
    """Build sandlot/busybox:latest and sandlot/python:3 from Debian packages, no registry."""
    from sandlot.runtime.docker_images import BUILTIN_IMAGES

    def progress(line: str) -> None:
        click.echo(line, err=as_json)

    built = _run(
        lambda s: _images(
            s, lambda i: i.build_offline(which or BUILTIN_IMAGES, force=force, progress=progress)
        )
    )
    _out(as_json, {"built": built}, f"built: {', '.join(built) or 'nothing (all present)'}")
