"""A PostgreSQL server of the test's own, that it may stop and start (the shared one on 5432
is never touched): a cluster made by ``initdb`` in a temporary directory (named for the run:
``tests/sweep.py``) owned by the ``postgres`` user, listening on a free port of 127.0.0.1 with
its socket in that directory.
Every command runs as ``postgres`` through its own ``pg_ctl``."""

from __future__ import annotations

import glob
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.conftest import INSTANCE
from tests.integration.servers import free_port

__all__ = ["OwnPostgres"]


def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    assert found, f"no {name} under /usr/lib/postgresql/*/bin"
    return found[-1]


class OwnPostgres:
    def __init__(self, run: str = INSTANCE) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=f"{run}-pg-"))  # swept by its run's pid
        self.data = self.root / "data"
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        shutil.chown(self.root, "postgres", "postgres")
        self._run(_bin("initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres")

    def _run(self, *argv: str) -> None:
        done = subprocess.run(
            ["runuser", "-u", "postgres", "--", *argv], capture_output=True, timeout=120, check=False
        )
        assert done.returncode == 0, f"{argv}: {done.stderr.decode(errors='replace')}"

    def start(self, extra: str = "") -> None:
        """Start it; ``extra``: more server options (``-c name=value ...``)."""
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off {extra}"
        log = str(self.root / "server.log")
        self._run(_bin("pg_ctl"), "-D", str(self.data), "-l", log, "-o", options, "-w", "start")

    def stop(self) -> None:
        """Stop it (fast: open connections are ended); a no-op when it is not running."""
        if (self.data / "postmaster.pid").exists():
            self._run(_bin("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def destroy(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
