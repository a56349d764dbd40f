"""Fault: the disk that holds the blobs fills up (the server's data directory on a 32 MiB
tmpfs the test mounts, and unmounts, itself).

Checkpoints are taken until one does not fit: that one is a 507 ``disk_full`` and leaves no
partial blob behind, the session and the service keep working, every earlier checkpoint
still restores byte for byte, and once space is freed (an asset deleted) a new checkpoint
works again."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import BUSYBOX, INSTANCE
from tests.faults.conftest import (
    HASHES,
    assert_blobs_whole,
    assert_clear,
    assert_restores,
    fault_server,
    instance,
    new_session,
    sh,
    tenant_headers,
    wait_agreement,
)

#: Each checkpoint (and the ballast asset) is about 10 MB: the third checkpoint does not fit.
WORKSPACE_BYTES = 10_000_000


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 32 MiB tmpfs in ``tmp_path`` (named for the run: tests/sweep.py), unmounted at the end."""
    data = tmp_path / f"{INSTANCE}-disk"
    data.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(data)], check=True)
    try:
        yield data
    finally:
        subprocess.run(["umount", str(data)], check=True)


@pytest.mark.timeout(150)
async def test_a_checkpoint_that_does_not_fit_is_507_and_leaves_the_others_intact(
    db_url: str, small_disk: Path
) -> None:
    mine = instance("full")
    headers = await tenant_headers(db_url)
    with fault_server(db_url, mine, small_disk) as server:
        async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=60) as http:
            assert (
                await http.post("/v1/environments", json={"name": "d", "images": [BUSYBOX]})
            ).status_code == 201
            ballast = await http.put("/v1/assets/ballast", content=b"\0" * WORKSPACE_BYTES)
            assert ballast.status_code == 201, ballast.text
            sid = await new_session(http, "d")
            acked: dict[str, str] = {}
            for n in range(6):
                await sh(http, sid, f"head -c {WORKSPACE_BYTES} /dev/urandom > big.bin; echo {n} > n")
                resp = await http.post(f"/v1/sessions/{sid}/checkpoints")
                if resp.status_code != 201:
                    break
                acked[resp.json()["id"]] = await sh(http, sid, HASHES)
            else:
                pytest.fail("the disk never filled")
            assert resp.status_code == 507 and resp.json()["code"] == "disk_full", resp.text
            assert_clear(resp)
            assert len(acked) >= 1, "not even one checkpoint fitted"

            await assert_blobs_whole(db_url, small_disk / "blobs")
            listed = (await http.get(f"/v1/sessions/{sid}/checkpoints")).json()
            assert [c["id"] for c in listed] == list(acked)
            assert await sh(http, sid, "cat n") == f"{len(acked)}\n"  # the session is unharmed
            assert (await http.get("/readyz")).status_code == 200

            assert (await http.delete("/v1/assets/ballast")).status_code == 204
            resp = await http.post(f"/v1/sessions/{sid}/checkpoints")
            assert resp.status_code == 201, resp.text
            acked[resp.json()["id"]] = await sh(http, sid, HASHES)
            await assert_blobs_whole(db_url, small_disk / "blobs")
            await http.delete(f"/v1/sessions/{sid}")
            await assert_restores(http, "d", acked)
            await wait_agreement(db_url, mine)
