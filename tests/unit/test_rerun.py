"""The test command's rerun (``--reruns 1`` with the FLAKY report of ``tests/flaky.py``), run on
a scratch test file in a pytest of its own: a test that fails once and then passes lets the run
pass and is named FLAKY in its last lines; one that fails twice fails the run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRATCH = """
from pathlib import Path

def test_fails_once():
    mark = Path(__file__).with_name("tried")
    if not mark.exists():
        mark.write_text("once")
        assert 6 * 7 == 41, "the first try fails"

def test_steady():
    pass
"""

ALWAYS = """
def test_fails_twice():
    raise RuntimeError("fails every time")
"""


def _run(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text("from tests.flaky import pytest_terminal_summary  # noqa: F401\n")
    (tmp_path / "test_scratch.py").write_text(body)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--reruns", "1", "-p", "no:cacheprovider", "-q", "-ra", "."],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_test_that_fails_once_passes_the_run_and_is_named_flaky(tmp_path: Path) -> None:
    run = _run(tmp_path, SCRATCH)
    assert run.returncode == 0, run.stdout + run.stderr
    tail = run.stdout.strip().splitlines()[-3:]
    assert any(
        line == "FLAKY test_scratch.py::test_fails_once: AssertionError: the first try fails" for line in tail
    ), run.stdout
    assert "test_steady" not in "\n".join(tail)


def test_a_test_that_fails_twice_fails_the_run_and_is_not_flaky(tmp_path: Path) -> None:
    run = _run(tmp_path, ALWAYS)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "FAILED test_scratch.py::test_fails_twice" in run.stdout
    assert "FLAKY" not in run.stdout
