"""A second Docker engine beside the main one, that a test may stop and restart.

It has its own data root (never on the main engine's btrfs filesystem: dockerd's btrfs driver
turns that filesystem's quotas off when it stops, which would take the main engine's disk
limits with it), its own exec root and socket, and no iptables. Its default
bridge is one of its own (``--bridge=none`` would make dockerd delete the main engine's
``docker0``). Images are copied in from the main engine. Only this process's own dockerd is
ever stopped, by its pid.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

__all__ = ["SecondEngine"]

_BRIDGE, _BRIDGE_ADDRESS = "sl2br0", "172.31.254.1/24"
_ROOT = Path("/var/lib")


class SecondEngine:
    def __init__(self, name: str) -> None:
        self.name = name
        self.data_root = _ROOT / f"{name}-data"
        self.exec_root = Path(f"/run/{name}-exec")
        self.socket = Path(f"/run/{name}.sock")
        self.url = f"unix://{self.socket}"
        self.log = Path(f"/tmp/{name}.log")
        self.proc: subprocess.Popen[bytes] | None = None

    def _args(self) -> list[str]:
        args = [
            "dockerd",
            "--data-root",
            str(self.data_root),
            "--exec-root",
            str(self.exec_root),
            "-H",
            self.url,
            "--pidfile",
            f"/run/{self.name}.pid",
            f"--bridge={_BRIDGE}",
            "--iptables=false",
        ]
        return args

    def docker(self, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            ["docker", "-H", self.url, *args], input=stdin, capture_output=True, timeout=300, check=False
        )

    def start(self, timeout: float = 60) -> None:
        if subprocess.run(["ip", "link", "show", _BRIDGE], capture_output=True, check=False).returncode:
            for step in (
                ["ip", "link", "add", "name", _BRIDGE, "type", "bridge"],
                ["ip", "addr", "add", _BRIDGE_ADDRESS, "dev", _BRIDGE],
                ["ip", "link", "set", _BRIDGE, "up"],
            ):
                subprocess.run(step, check=True, capture_output=True)
        self.exec_root.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(self._args(), stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while self.docker("info").returncode != 0:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the second dockerd did not come up; see {self.log}")
            time.sleep(0.3)

    def stop(self, timeout: float = 60) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def load(self, *images: str) -> None:
        """Copy images from the main engine (skipping those already here)."""
        for image in images:
            if self.docker("image", "inspect", image).returncode == 0:
                continue
            saved = subprocess.run(["docker", "save", image], capture_output=True, timeout=300, check=True)
            loaded = self.docker("load", stdin=saved.stdout)
            if loaded.returncode != 0:
                raise RuntimeError(f"could not load {image}: {loaded.stderr.decode()}")

    def remove_labelled(self, label: str) -> None:
        found = self.docker("ps", "-aq", "--filter", f"label={label}").stdout.decode().split()
        if found:
            self.docker("rm", "-f", "-v", *found)

    def destroy(self) -> None:
        self.stop()
        shutil.rmtree(self.exec_root, ignore_errors=True)
