"""What a sandbox cannot see or reach, asked from inside it through the API: the host's
processes, the Docker socket, another tenant's sandbox (processes, files, address) and, with
network off, anything at all: the host's gateways, the Sandlot server's port, PostgreSQL.

Capabilities, root and the network-on bridge between sandboxes are proven at the runtime level
in ``tests/integration/runtime/test_docker_isolation.py``."""

from __future__ import annotations

import json
import secrets
import socket
from typing import Any
from urllib.parse import urlsplit

import aiodocker
import pytest
from litestar.testing import AsyncTestClient

from tests.abuse.sandboxes import Tenant

PROBE = """
import json, socket, sys
out = {}
for host, port in json.loads(sys.argv[1]):
    try:
        socket.create_connection((host, port), 2).close()
        out[f"{host}:{port}"] = "connected"
    except OSError as e:
        out[f"{host}:{port}"] = type(e).__name__
print(json.dumps(out))
"""


def _host_address() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))  # no packet is sent: this picks the outgoing address
        return str(s.getsockname()[0])


async def _gateways() -> list[str]:
    docker = aiodocker.Docker()
    try:
        found = []
        for net in await docker.networks.list():
            for conf in (net.get("IPAM") or {}).get("Config") or []:
                if conf.get("Gateway"):
                    found.append(conf["Gateway"])
        return found
    finally:
        await docker.close()


@pytest.fixture
async def other(client: AsyncTestClient, accounts: Any) -> Tenant:
    tenant = await accounts.create_tenant(f"b-{secrets.token_hex(4)}", allow_network=True)
    key = await accounts.create_key(tenant.id)
    return Tenant(client, {"Authorization": f"Bearer {key.plaintext}"})


@pytest.mark.timeout(150)
async def test_a_sandbox_sees_no_host_no_docker_no_neighbour_and_reaches_nothing(
    client: AsyncTestClient, new_tenant: Any, other: Tenant, live_server: str
) -> None:
    me = Tenant(client, await new_tenant())
    marker = f"marker-{secrets.token_hex(4)}"
    async with other.sandbox(network=True) as theirs, me.sandbox() as mine:
        planted = await other.exec(
            theirs,
            f"echo secret > /workspace/{marker}; (setsid sleep 4242 &); (nc -lk -p 8000 -e echo hi &); true",
        )
        assert planted["exit_code"] == 0, planted
        docker = aiodocker.Docker()
        try:
            info = await docker.containers.container(f"sandlot-{theirs}").show()
        finally:
            await docker.close()
        their_address = next(iter(info["NetworkSettings"]["Networks"].values()))["IPAddress"]

        procs = await me.exec(mine, "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done")
        seen = [line for line in procs["stdout"].splitlines() if line.strip()]
        assert len(seen) <= 5, seen  # init, keepalive, this shell and its tr
        for foreign in ("dockerd", "postgres", "containerd", "sleep 4242", "granian", "pytest"):
            assert not any(foreign in line for line in seen), (foreign, seen)

        sockets = await me.exec(
            mine, "ls /var/run/docker.sock /run/docker.sock 2>&1; find / -xdev -type s 2>/dev/null; true"
        )
        lines = sockets["stdout"].splitlines()
        assert len(lines) >= 2 and all("No such file or directory" in line for line in lines[:2]), lines
        assert not any("docker" in line or "containerd" in line for line in lines[2:]), lines
        found = await me.exec(mine, f"find / -name '{marker}' 2>/dev/null; true")
        assert marker not in found["stdout"]

        interfaces = await me.exec(mine, "ls /sys/class/net")
        assert interfaces["stdout"].split() == ["lo"]
        server = urlsplit(live_server)
        host = _host_address()
        targets = [(gw, port) for gw in await _gateways() for port in (5432, server.port, 22)]
        targets += [(host, 5432), (host, server.port), ("127.0.0.1", 5432), ("127.0.0.1", server.port)]
        targets += [(their_address, 8000), ("1.1.1.1", 53)]
        probe = await me.exec(mine, ["python3", "-c", PROBE, json.dumps(targets)], timeout=60)
        reached = json.loads(probe["stdout"])
        assert len(reached) == len(set(targets)) and "connected" not in reached.values(), reached
