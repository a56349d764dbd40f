"""The honest rerun's report. The test command (``scripts/test.sh``) runs pytest with
pytest-rerunfailures' ``--reruns 1``: a test that fails runs once more, at once, with nothing
else running beside it (the run is serial). The run passes only if that second try passes;
each test it saved is named at the very end of the output as ``FLAKY <test id>: <first error
line>``. A FLAKY test is a race to find, in the product or in the test, never a pass."""

from __future__ import annotations

import pytest

__all__ = ["pytest_terminal_summary"]


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    stats = terminalreporter.stats
    failed = {r.nodeid for r in stats.get("failed", []) + stats.get("error", [])}
    first: dict[str, str] = {}
    for report in stats.get("rerun", []):
        if report.nodeid not in failed:
            first.setdefault(report.nodeid, _first_error_line(report))
    if first:
        terminalreporter.write_sep("=", f"{len(first)} test(s) passed only on their rerun", yellow=True)
    for nodeid, line in first.items():
        terminalreporter.write_line(f"FLAKY {nodeid}: {line}")


def _first_error_line(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = str(getattr(crash, "message", None) or report.longrepr or "(no error text)")
    lines = [line for line in text.splitlines() if line.strip()]
    return (lines[0] if lines else text)[:300]
