"""The reset that becomes the next session's shell gives back the container's own environment
for the variables our programs override: a shell run through ``/bin/sh`` with it must see
exactly what a ``docker exec`` of ``/bin/sh`` would (checked with the host's sh)."""

from __future__ import annotations

import subprocess

from sandlot.runtime.docker_reset import restore_env
from sandlot.runtime.scripts import HELPER_PATH, HELPER_UNSET


def _after(container_env: list[str]) -> dict[str, str]:
    """What a shell sees after the tail ran in a process started with our helper environment."""
    helper = {"PATH": HELPER_PATH, **dict.fromkeys(HELPER_UNSET, "")}
    script = restore_env(container_env) + "; exec /usr/bin/env -0"
    out = subprocess.run(["/bin/sh", "-c", script], env=helper, capture_output=True, check=True)
    return dict(entry.split("=", 1) for entry in out.stdout.decode().split("\0") if "=" in entry)


def test_the_containers_values_come_back_and_ours_go() -> None:
    env = _after(["PATH=/opt/tool/bin:/usr/bin:/bin", "LD_LIBRARY_PATH=/opt/lib", "HOME=/workspace"])
    assert env["PATH"] == "/opt/tool/bin:/usr/bin:/bin"
    assert env["LD_LIBRARY_PATH"] == "/opt/lib"
    for name in set(HELPER_UNSET) - {"LD_LIBRARY_PATH"}:
        assert name not in env, name


def test_values_with_quotes_newlines_and_equals_survive() -> None:
    tricky = "a'b\"c $(touch /tmp/nope) `x`\nsecond=line"
    env = _after([f"PATH={tricky}", "ENV=/etc/profile"])
    assert env["PATH"] == tricky
    assert env["ENV"] == "/etc/profile"


def test_without_a_path_of_its_own_the_container_has_none() -> None:
    env = _after(["HOME=/workspace"])
    assert "PATH" not in env and "LD_PRELOAD" not in env
