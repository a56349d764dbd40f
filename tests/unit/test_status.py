"""The sandbox status machine: every pair of statuses is checked against the table."""

from __future__ import annotations

import itertools

import pytest

from sandlot.domain.status import TRANSITIONS, IllegalTransition, SandboxStatus, transition

S = SandboxStatus

ALLOWED = {
    (S.CREATED, S.SETTING_UP), (S.CREATED, S.SHUTTING_DOWN), (S.CREATED, S.OFFLINE),
    (S.SETTING_UP, S.READY), (S.SETTING_UP, S.ACQUIRED), (S.SETTING_UP, S.SHUTTING_DOWN),
    (S.SETTING_UP, S.OFFLINE),
    (S.READY, S.ACQUIRED), (S.READY, S.SHUTTING_DOWN), (S.READY, S.OFFLINE),
    (S.ACQUIRED, S.IN_SESSION), (S.ACQUIRED, S.READY), (S.ACQUIRED, S.SHUTTING_DOWN),
    (S.ACQUIRED, S.OFFLINE),
    (S.IN_SESSION, S.EXITING_SESSION), (S.IN_SESSION, S.SHUTTING_DOWN), (S.IN_SESSION, S.OFFLINE),
    (S.EXITING_SESSION, S.READY), (S.EXITING_SESSION, S.SHUTTING_DOWN),
    (S.EXITING_SESSION, S.OFFLINE),
    (S.SHUTTING_DOWN, S.OFFLINE),
}  # fmt: skip


@pytest.mark.parametrize(("current", "target"), list(itertools.product(S, S)))
def test_every_transition_matches_the_table(current: S, target: S) -> None:
    if (current, target) in ALLOWED:
        assert transition(current, target) is target
    else:
        with pytest.raises(IllegalTransition) as info:
            transition(current, target)
        assert info.value.code == "illegal_transition"
        assert current.value in info.value.message


def test_offline_is_terminal() -> None:
    assert TRANSITIONS[S.OFFLINE] == frozenset()


def test_every_status_can_reach_offline() -> None:
    for status in S:
        if status is not S.OFFLINE:
            assert S.OFFLINE in TRANSITIONS[status]
