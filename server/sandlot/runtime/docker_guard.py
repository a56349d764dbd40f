"""Keeping a sandbox with network access away from its host (#27, finding 8).

A sandbox on the shared bridge reaches out through the host, and so, without more, it reaches
every service of the host bound to a wildcard address (through the bridge's gateway, any other
address of the host, or a broadcast) and the link-local range (a cloud's metadata service).
Two layers keep it from them:

- The engine host's firewall: before the first network sandbox starts, and every minute after
  for as long as the runtime lives (a flush of the host's firewall is mended within a minute,
  whether or not sandboxes are being made), a guard container in the engine's network namespace, chrooted
  into a read-only view of the engine host's root (to run the host's own ``iptables``, the one
  Docker uses), installs
  ``INPUT -i <bridge> -j DROP`` (IPv4 and IPv6: nothing from the bridge reaches the host
  itself, whichever address, broadcasts and addresses the host gets later included) and
  ``DOCKER-USER -i <bridge> -d 169.254.0.0/16 -j DROP``, then checks them. Where that cannot
  be done (no iptables, a rootless engine), ``network: true`` is refused (503); where a
  re-check fails, new network sandboxes are refused until one succeeds.
- In each sandbox, before it is handed out, a guard container joins its network namespace
  with ``NET_ADMIN`` alone and makes the gateway, the host's addresses (read by the same image
  in the host's network namespace, again after a minute) and link-local unroutable there
  (``prohibit`` routes: a connect fails at once with EACCES), then checks that each is. The
  sandbox has no capability to undo it, and IPv6 is off in it (a sysctl set at create).

The guard image runs as root with the engine host's root mounted: it is run by the image id
its name had when this runtime first used it, so a name given to another image later changes
nothing here.

What stays reachable is every other address through the gateway: the egress policy proper
(allow lists, private ranges) is the network issue's.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import re
import time
from typing import TYPE_CHECKING, Any

import aiodocker

from sandlot.domain.errors import RuntimeUnavailable, SandboxStateError
from sandlot.runtime.base import LABEL_INSTANCE
from sandlot.runtime.docker_config import NETWORK
from sandlot.runtime.docker_create import ensure_network
from sandlot.runtime.docker_streams import engine
from sandlot.runtime.programs import program

if TYPE_CHECKING:
    from sandlot.runtime.docker import DockerRuntime

__all__ = ["LABEL_GUARD", "LINK_LOCAL", "HostGuard", "parse_addresses"]

log = logging.getLogger(__name__)

LABEL_GUARD = "dev.sandlot.guard"
LINK_LOCAL = "169.254.0.0/16"
_ADDRESSES_TTL = 60.0
_GUARD_SECONDS = 30.0
_BRIDGE_OPTION = "com.docker.network.bridge.name"

_CLOSE = program("guard_close.sh")
_HOST_ADDRESSES = ["ip", "-4", "-o", "addr", "show"]

_FIREWALL = program("guard_firewall.sh")
# what chrooting and changing the firewall take, and nothing else
_FIREWALL_CAPS = ["SYS_CHROOT", "NET_ADMIN", "NET_RAW"]
_BRIDGE_RE = re.compile(r"[A-Za-z0-9_.-]{1,15}")


def parse_addresses(text: str) -> set[str]:
    """The IPv4 addresses in ``ip -4 -o addr show``'s output, loopback left out (a sandbox's
    loopback is its own). Anything that is not an address is ignored, never passed on."""
    found: set[str] = set()
    for line in text.splitlines():
        fields = line.split()
        if "inet" not in fields or fields.index("inet") + 1 >= len(fields):
            continue
        try:
            address = ipaddress.IPv4Interface(fields[fields.index("inet") + 1]).ip
        except ValueError:
            continue
        if not address.is_loopback:
            found.add(str(address))
    return found


class HostGuard:
    """Closes a network sandbox's way to its host; see the module's docstring."""

    #: How often the engine host's firewall is checked (and mended) once network is in use.
    recheck_seconds = 60.0

    def __init__(self, rt: DockerRuntime, image: str) -> None:
        self._rt = rt
        self.image = image
        self._image_id: str | None = None
        self._addresses: set[str] = set()
        self._read_at = float("-inf")
        self._lock = asyncio.Lock()
        self._rechecks: asyncio.Task[None] | None = None
        self._checked = False  # whether the last check of the host's firewall held

    async def ready(self) -> None:
        """Before a network sandbox is made: the sandbox network exists and the engine host's
        firewall is set (see :meth:`firewall`), then checked again every
        :attr:`recheck_seconds` until :meth:`stop`. Raises when it cannot be set."""
        if self._checked and self._rechecks is not None and not self._rechecks.done():
            return
        await ensure_network(self._rt.docker)
        await self.firewall()
        self._checked = True
        if self._rechecks is None or self._rechecks.done():
            self._rechecks = asyncio.ensure_future(self._recheck())

    async def _recheck(self) -> None:
        """Every :attr:`recheck_seconds`, for as long as the runtime lives: one that fails
        refuses new network sandboxes (each tries the firewall itself) until one succeeds."""
        while True:
            await asyncio.sleep(self.recheck_seconds)
            try:
                await self.firewall()
                self._checked = True
            except Exception as exc:
                self._checked = False
                log.error(
                    "the engine host's firewall could not be checked again (checked again in %g s; "
                    "new network sandboxes set it first): %s",
                    self.recheck_seconds,
                    exc,
                )

    async def stop(self) -> None:
        if self._rechecks is not None:
            self._rechecks.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._rechecks
            self._rechecks = None

    async def host_addresses(self) -> set[str]:
        """The engine host's addresses, read again after a minute."""
        async with self._lock:
            if time.monotonic() - self._read_at > _ADDRESSES_TTL:
                code, out = await self._run("host", _HOST_ADDRESSES, [])
                found = parse_addresses(out)
                if code != 0 or not found:
                    raise SandboxStateError(f"could not read the host's addresses: {out.strip()[:200]}")
                self._addresses, self._read_at = found, time.monotonic()
            return set(self._addresses)

    async def firewall(self) -> None:
        """Install and check the engine host's rules for the sandbox bridge: without them, no
        network access."""
        async with self._lock:
            await self._firewall()

    async def _firewall(self) -> None:
        with engine("network inspect"):
            found = await (await self._rt.docker.networks.get(NETWORK)).show()
        options = found.get("Options") or {}
        bridge = str(options.get(_BRIDGE_OPTION) or f"br-{str(found.get('Id', ''))[:12]}")
        if not _BRIDGE_RE.fullmatch(bridge):
            raise SandboxStateError(f"unexpected bridge name {bridge!r} for {NETWORK}")
        code, out = await self._run(
            "host",
            ["chroot", "/host", "/bin/sh", "-c", _FIREWALL, "guard", bridge, LINK_LOCAL],
            _FIREWALL_CAPS,
            host=True,
        )
        if code != 0:
            raise RuntimeUnavailable(
                f"network access is refused: the engine host's firewall could not be set to keep "
                f"sandboxes from it (guard exited {code}): {out.strip()[:200]}"
            )

    async def close(self, container_id: str) -> None:
        """Make the host's addresses, its gateway and link-local unroutable in the sandbox
        ``container_id``'s network namespace, and check that they are."""
        with engine("inspect"):
            info = await self._rt.docker.containers.container(container_id).show()
        networks = (info.get("NetworkSettings") or {}).get("Networks") or {}
        gateway = str((networks.get(NETWORK) or {}).get("Gateway") or "")
        try:
            closed = sorted(await self.host_addresses() | {str(ipaddress.IPv4Address(gateway))})
        except ValueError as exc:
            raise SandboxStateError(f"the sandbox has no IPv4 gateway on {NETWORK} ({gateway!r})") from exc
        code, out = await self._run(
            f"container:{container_id}",
            ["/bin/sh", "-c", _CLOSE, "guard", LINK_LOCAL, *closed],
            ["NET_ADMIN"],
        )
        if code != 0:
            raise SandboxStateError(
                f"could not keep the sandbox from its host (guard exited {code}): {out.strip()[:200]}"
            )

    async def _run(
        self, network: str, cmd: list[str], caps: list[str], *, host: bool = False
    ) -> tuple[int, str]:
        """Run ``cmd`` in the guard image as root with ``caps`` only, in ``network`` (with
        ``host``: the engine host's root mounted read-only at ``/host``); its exit code and
        output. The container is removed whatever happens."""
        host_config: dict[str, Any] = {
            "NetworkMode": network,
            "CapDrop": ["ALL"],
            "CapAdd": caps,
            "SecurityOpt": ["no-new-privileges"],
            "Memory": 32 * 1024 * 1024,
            "PidsLimit": 16,
        }
        if host:
            host_config["Binds"] = ["/:/host:ro"]
        config: dict[str, Any] = {
            "Image": await self._pinned(),
            "Entrypoint": cmd[:1],
            "Cmd": cmd[1:],
            "User": "0:0",
            "Labels": {LABEL_INSTANCE: self._rt.instance, LABEL_GUARD: "1"},
            "HostConfig": host_config,
        }
        with engine("network guard"):
            container = await self._rt.docker.containers.create(config)
        try:
            async with asyncio.timeout(_GUARD_SECONDS):
                with engine("network guard"):
                    await container.start()
                    code = int((await container.wait()).get("StatusCode", -1))
                    out = "".join(await container.log(stdout=True, stderr=True))
        except TimeoutError as exc:
            raise SandboxStateError(f"the network guard did not finish within {_GUARD_SECONDS:g} s") from exc
        finally:
            with contextlib.suppress(SandboxStateError), engine("network guard"):
                await container.delete(force=True)
        return code, out

    async def _pinned(self) -> str:
        """The guard image's id: looked up by name once, then run by id."""
        if self._image_id is None:
            try:
                with engine("network guard image"):
                    found = await self._rt.docker.images.inspect(self.image)
            except SandboxStateError as exc:
                cause = exc.__cause__
                if isinstance(cause, aiodocker.DockerError) and cause.status == 404:
                    raise RuntimeUnavailable(
                        f"network access needs the guard image {self.image!r}, which the engine does "
                        "not have (`sandlot images build-offline`, or set SANDLOT_NETWORK_GUARD_IMAGE "
                        "to an image with busybox's `ip`)"
                    ) from exc
                raise
            self._image_id = str(found["Id"])
        return self._image_id
