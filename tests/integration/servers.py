"""``sandlot serve`` as a real process for the tests that need one: started with the given
settings on a free port, waited for until it is ready, stopped by its pid (and its workers with
it) whatever happens."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

__all__ = ["Served", "free_port", "serve"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Served:
    url: str
    pid: int
    log: Path


@contextmanager
def serve(settings: dict[str, str], log: Path, *, timeout: float = 60) -> Iterator[Served]:
    """``settings``: SANDLOT_* variables (the port is chosen here). Its output goes to ``log``
    (read it when a test fails)."""
    port = free_port()
    env = {**os.environ, **settings, "SANDLOT_PORT": str(port)}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "sandlot", "serve"], env=env, stdout=out, stderr=subprocess.STDOUT
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail(f"sandlot serve did not come up:\n{log.read_text(errors='replace')[-3000:]}")
                time.sleep(0.2)
            yield Served(url, proc.pid, log)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
