"""Keeping a sandbox with network access away from its host (#27, finding 8).

A sandbox on the shared bridge reaches out through the host, and so, without more, it reaches
every service of the host bound to a wildcard address (through the bridge's gateway or any
other address of the host) and the link-local range (a cloud's metadata service). Before a
network sandbox is handed out, a short-lived guard container joins its network namespace with
``NET_ADMIN`` alone and makes those addresses unroutable there (``prohibit`` routes: a connect
fails at once with EACCES), then checks that each is; the sandbox itself has no capability to
undo it, and IPv6 is off in it (a sysctl set at create). The host's addresses are read by the
same image in the host's network namespace, through the engine, so they are the engine's
host's own (a remote engine included), and read again after a minute.

What stays reachable is every other address through the gateway: the egress policy proper
(allow lists, private ranges) is the network issue's.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import time
from typing import TYPE_CHECKING, Any

import aiodocker

from sandlot.domain.errors import RuntimeUnavailable, SandboxStateError
from sandlot.runtime.base import LABEL_INSTANCE
from sandlot.runtime.docker_config import NETWORK
from sandlot.runtime.docker_streams import engine

if TYPE_CHECKING:
    from sandlot.runtime.docker import DockerRuntime

__all__ = ["LABEL_GUARD", "LINK_LOCAL", "HostGuard", "parse_addresses"]

LABEL_GUARD = "dev.sandlot.guard"
LINK_LOCAL = "169.254.0.0/16"
_ADDRESSES_TTL = 60.0
_GUARD_SECONDS = 30.0

# $1: the link-local range, then each address to close. Every route is added, then every
# address must fail to route (ip route get: "Permission denied" for a prohibit route).
_CLOSE = r"""
set -u
range=$1; shift
ip route add prohibit "$range" || exit 10
for a in "$@"; do ip route add prohibit "$a/32" || exit 11; done
for a in "${range%/*}" "$@"; do
    if ip route get "$a" >/dev/null 2>&1; then echo "still routed: $a"; exit 12; fi
done
[ "$(cat /proc/sys/net/ipv6/conf/all/disable_ipv6)" = 1 ] || { echo "IPv6 is on"; exit 13; }
"""
_HOST_ADDRESSES = ["ip", "-4", "-o", "addr", "show"]


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

    def __init__(self, rt: DockerRuntime, image: str) -> None:
        self._rt = rt
        self.image = image
        self._addresses: set[str] = set()
        self._read_at = float("-inf")
        self._lock = asyncio.Lock()

    async def host_addresses(self) -> set[str]:
        async with self._lock:
            if time.monotonic() - self._read_at > _ADDRESSES_TTL:
                code, out = await self._run("host", _HOST_ADDRESSES, [])
                found = parse_addresses(out)
                if code != 0 or not found:
                    raise SandboxStateError(f"could not read the host's addresses: {out.strip()[:200]}")
                self._addresses, self._read_at = found, time.monotonic()
            return set(self._addresses)

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

    async def _run(self, network: str, cmd: list[str], caps: list[str]) -> tuple[int, str]:
        """Run ``cmd`` in the guard image as root with ``caps`` only, in ``network``; its exit
        code and output. The container is removed whatever happens."""
        config: dict[str, Any] = {
            "Image": self.image,
            "Cmd": cmd,
            "User": "0:0",
            "Labels": {LABEL_INSTANCE: self._rt.instance, LABEL_GUARD: "1"},
            "HostConfig": {
                "NetworkMode": network,
                "CapDrop": ["ALL"],
                "CapAdd": caps,
                "SecurityOpt": ["no-new-privileges"],
                "Memory": 32 * 1024 * 1024,
                "PidsLimit": 16,
            },
        }
        try:
            with engine("network guard"):
                container = await self._rt.docker.containers.create(config)
        except SandboxStateError as exc:
            cause = exc.__cause__
            if isinstance(cause, aiodocker.DockerError) and cause.status == 404:
                raise RuntimeUnavailable(
                    f"network access needs the guard image {self.image!r}, which the engine does "
                    "not have (`sandlot images build-offline`, or set SANDLOT_NETWORK_GUARD_IMAGE "
                    "to an image with busybox's `ip`)"
                ) from exc
            raise
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
