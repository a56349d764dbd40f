"""``sandlot serve``: check what the service needs, start it, and say so once it answers.

The start is in three steps. First the checks a newcomer's first start must not fail late on:
the store is migrated and the runtime chosen (``auto`` settles on Docker or local here, once,
and the workers inherit the choice). Then granian serves. A watcher thread waits until this
start's own workers answer ``/healthz`` (each start has a ``boot_id`` they report), and only
then creates the first operator key (on an empty store) and prints the address and the key.
Any failure prints one line with the reason and exits non-zero; no key is printed for a start
that did not come up.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import sys
import threading
import time
import urllib.request
from typing import Any

import click

from sandlot.settings import RuntimeKind, Settings

__all__ = ["serve"]

log = logging.getLogger(__name__)

_ANNOUNCE_WAIT = 120.0  # seconds a worker may take to come up (migrations, the runtime)
# granian logs to stderr like the service does: stdout carries only the announcement
_GRANIAN_LOGS: dict[str, Any] = {
    "handlers": {
        "console": {"formatter": "generic", "class": "logging.StreamHandler", "stream": "ext://sys.stderr"},
        "access": {"formatter": "access", "class": "logging.StreamHandler", "stream": "ext://sys.stderr"},
    }
}


async def _preflight(settings: Settings) -> RuntimeKind:
    """Migrate the store and choose the runtime; returns the kind the workers will use."""
    from sandlot.runtime.select import make_runtime
    from sandlot.store import migrate

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    if settings.migrate_on_start:
        await asyncio.to_thread(migrate.upgrade, settings.database_url)
    runtime = await make_runtime(settings)
    try:
        return RuntimeKind(runtime.name)
    finally:
        await runtime.close()


async def _bootstrap(settings: Settings) -> str | None:
    from sandlot.services.accounts import AccountService
    from sandlot.store.engine import make_engine, make_sessionmaker

    if not settings.bootstrap_operator_key:
        return None
    engine = make_engine(settings.database_url)
    try:
        created = await AccountService(make_sessionmaker(engine)).bootstrap()
    finally:
        await engine.dispose()
    return created.plaintext if created else None


def _probe_host(host: str) -> str:
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


def _answers(url: str, boot_id: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=1) as resp:
            return bool(json.load(resp).get("boot_id") == boot_id)
    except (OSError, ValueError):
        return False


def _announce(settings: Settings, boot_id: str, as_json: bool, stop: threading.Event) -> None:
    """Wait for this start's workers, then bootstrap the first key and print the address."""
    probe = f"http://{_probe_host(settings.host)}:{settings.port}"
    deadline = time.monotonic() + _ANNOUNCE_WAIT
    while not _answers(probe, boot_id):
        if stop.wait(0.2):
            return
        if time.monotonic() > deadline:
            click.echo(f"Sandlot did not answer on {probe} within {_ANNOUNCE_WAIT:g} s", err=True)
            return
    key = asyncio.run(_bootstrap(settings))
    url = f"http://{settings.host}:{settings.port}"
    if as_json:
        click.echo(json.dumps({"url": url, "docs": f"{url}/openapi", "operator_key": key}))
    else:
        click.echo(f"Sandlot listening on {url}  (API docs: {url}/openapi)")
        if key:
            click.echo(f"Operator key (shown once, keep it): {key}")
    sys.stdout.flush()


def serve(settings: Settings, *, as_json: bool) -> None:
    from granian import Granian
    from granian.http import HTTP1Settings

    from sandlot.domain.errors import SandlotError
    from sandlot.observability.logs import configure_logging

    configure_logging(settings)
    try:
        kind = asyncio.run(_preflight(settings))
    except SandlotError as exc:
        raise click.ClickException(f"Sandlot cannot start: {exc.message}") from None
    except Exception as exc:  # a store that cannot be reached or migrated, a bad URL...
        raise click.ClickException(f"Sandlot cannot start: {type(exc).__name__}: {exc}") from None
    boot_id = secrets.token_hex(8)
    os.environ["SANDLOT_RUNTIME"] = kind.value  # decided once: every worker uses the same
    os.environ["SANDLOT_BOOT_ID"] = boot_id
    os.environ["SANDLOT_DATA_DIR"] = str(settings.data_dir)
    stop = threading.Event()
    watcher = threading.Thread(
        target=_announce, args=(settings, boot_id, as_json, stop), name="sandlot-announce", daemon=True
    )
    watcher.start()
    server: Any = Granian(
        "sandlot.cli:app_factory",
        address=settings.host,
        port=settings.port,
        interface="asgi",  # type: ignore[arg-type]
        factory=True,
        workers=settings.workers,
        log_access=False,
        log_dictconfig=_GRANIAN_LOGS,
        # a client that has not sent its request's headers in time is dropped (api/bounds.py
        # bounds what comes after them)
        http1_settings=HTTP1Settings(header_read_timeout=int(settings.header_read_timeout * 1000)),
    )
    try:
        server.serve()
    except SystemExit as exc:
        stop.set()
        if exc.code not in (0, None):
            raise click.ClickException(
                "Sandlot stopped: a worker failed to start (see the log above)"
            ) from None
    except Exception as exc:  # e.g. the address is taken
        stop.set()
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise click.ClickException(
            f"Sandlot cannot start on {settings.host}:{settings.port}: {first}"
        ) from None
    finally:
        stop.set()
