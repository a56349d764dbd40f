"""The server's memory stays bounded under archive abuse (issue #11, acceptance): five clients
at once each upload a decompression bomb and download a 700 MiB workspace from a real
``sandlot serve``. The report had a 1 MB bomb take a worker from 133 MB to 2.24 GB."""

from __future__ import annotations

import asyncio
import gzip
import io
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import BUSYBOX, INSTANCE
from tests.integration.conftest import NewTenant
from tests.integration.servers import Server

WORKSPACE_MIB = 700
CLIENTS = 5
RSS_LIMIT_MB = 300


def _rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def _tree(root: int) -> list[int]:
    """``root`` and its descendants (granian's workers)."""
    found, frontier = [root], [root]
    while frontier:
        parent = frontier.pop()
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                if ppid == parent:
                    found.append(int(entry.name))
                    frontier.append(int(entry.name))
    return found


@pytest.fixture(scope="module")
def server(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    data = tmp_path_factory.mktemp("memory")
    settings = {
        "SANDLOT_DATABASE_URL": pg_url,
        "SANDLOT_RUNTIME": "docker",
        "SANDLOT_INSTANCE": f"{INSTANCE}-mem",
        "SANDLOT_DATA_DIR": str(data),
        "SANDLOT_BOOTSTRAP_OPERATOR_KEY": "false",
        "SANDLOT_MAX_SNAPSHOT_BYTES": str(768 << 20),
    }
    with Server(settings, data / "server.log") as served:
        yield served.url, served.pid


def _bomb() -> bytes:
    """A tar of 1 GiB of zeros, gzipped to about 1 MB."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = tarfile.TarInfo("zeros")
        info.size = 1 << 30
        tar.addfile(info, io.BytesIO(bytes(info.size)))
    return gzip.compress(raw.getvalue(), compresslevel=9)


@pytest.mark.timeout(900)
async def test_bombs_and_big_downloads_leave_the_servers_memory_bounded(
    server: tuple[str, int], new_tenant: NewTenant
) -> None:
    url, pid = server
    h = await new_tenant()
    bomb = await asyncio.to_thread(_bomb)
    async with httpx.AsyncClient(base_url=url, headers=h, timeout=600) as http:
        await http.post("/v1/environments", json={"name": "mem", "images": [BUSYBOX], "disk_mb": 4096})
        sid = (await http.post("/v1/sessions", json={"environment": "mem"})).json()["id"]
        made = await http.post(
            f"/v1/sessions/{sid}/features/shell/run",
            json={"command": f"head -c {WORKSPACE_MIB << 20} /dev/zero > big && echo made", "timeout": 300},
        )
        assert made.json()["stdout"] == "made\n", made.text
        processes = _tree(pid)  # the server and its workers (granian starts them once)
        baseline = _rss_mb(processes)

        peak = baseline
        done = asyncio.Event()

        async def sample() -> None:
            nonlocal peak
            while not done.is_set():
                peak = max(peak, _rss_mb(processes))
                await asyncio.sleep(0.1)

        async def abuse() -> tuple[int, int]:
            up = await http.put(f"/v1/sessions/{sid}/workspace", content=bomb)
            received = 0
            async with http.stream("GET", f"/v1/sessions/{sid}/workspace") as down:
                assert down.status_code == 200
                async for chunk in down.aiter_raw():
                    received += len(chunk)
            return up.status_code, received

        sampler = asyncio.create_task(sample())
        started = time.monotonic()
        results = await asyncio.gather(*(abuse() for _ in range(CLIENTS)))
        elapsed = time.monotonic() - started
        done.set()
        await sampler
        await http.delete(f"/v1/sessions/{sid}")
    for status, received in results:
        assert status == 413  # each bomb stopped at the snapshot limit while it unpacked
        assert received > WORKSPACE_MIB << 20  # each got the whole workspace
    print(
        f"\n{CLIENTS} clients, each a {len(bomb) / 1e6:.2f} MB bomb (1 GiB inside) and a "
        f"{WORKSPACE_MIB} MiB download, in {elapsed:.1f} s: server RSS {baseline:.0f} MB before, "
        f"{peak:.0f} MB at most (all its processes)"
    )
    assert peak < RSS_LIMIT_MB
