"""When a finished command's sandbox counters are worth a look."""

from __future__ import annotations

import pytest

from sandlot.runtime.limits import worth_a_look


@pytest.mark.parametrize(
    ("exit_code", "timed_out", "stderr", "looked"),
    [
        (None, True, b"", True),  # a timeout: anything may have happened
        (137, False, b"", True),  # killed: the memory limit, perhaps
        (1, False, b"grep: nothing", False),  # a plain failure costs no look
        (0, False, b"", False),
        (2, False, b"sh: can't fork: Resource temporarily unavailable", True),
        # a loop whose forks were refused went on and ended well: it met the limit all the same
        (0, False, b"sh: can't fork: Resource temporarily unavailable\n", True),
        (0, False, b"MemoryError\n", True),
    ],
)
def test_a_command_is_looked_at_when_it_may_have_met_a_limit(
    exit_code: int | None, timed_out: bool, stderr: bytes, looked: bool
) -> None:
    assert worth_a_look(exit_code, timed_out, stderr) is looked
