"""Environment variables a client may set: shell identifiers, none of Sandlot's own names."""

from __future__ import annotations

import pytest

from sandlot.domain.env import validate_env
from sandlot.domain.errors import InvalidInput


@pytest.mark.parametrize("name", ["__sl_dd", "__SL_CWD", "__Sl_x", "1X", "A-B", "", "a" * 129])
def test_names_that_are_not_identifiers_or_are_ours_are_refused(name: str) -> None:
    with pytest.raises(InvalidInput):
        validate_env({name: "0"})


def test_ordinary_names_and_values_pass_but_not_nul() -> None:
    validate_env({"PATH": "/bin", "_x": "", "sl_dd": "1", "A__sl_": "v"})
    with pytest.raises(InvalidInput):
        validate_env({"X": "a\x00b"})
