from __future__ import annotations

import pytest

from sandlot.domain.errors import InvalidInput, PathOutsideWorkspace
from sandlot.domain.paths import resolve_workspace_path

WS = "/workspace"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("a.txt", "/workspace/a.txt"),
        ("dir/sub/a.txt", "/workspace/dir/sub/a.txt"),
        ("./a/../b", "/workspace/b"),
        ("/workspace/x", "/workspace/x"),
        ("//workspace//x", "/workspace/x"),
        (".", "/workspace"),
    ],
)
def test_paths_inside_the_workspace_resolve(given: str, expected: str) -> None:
    assert resolve_workspace_path(WS, given) == expected


@pytest.mark.parametrize(
    "given",
    ["../etc/passwd", "/etc/passwd", "a/../../x", "/workspace/../etc", "/workspacefoo/x", "/"],
)
def test_paths_leaving_the_workspace_are_refused(given: str) -> None:
    with pytest.raises(PathOutsideWorkspace):
        resolve_workspace_path(WS, given)


@pytest.mark.parametrize("given", ["", "a\x00b"])
def test_empty_or_nul_paths_are_invalid(given: str) -> None:
    with pytest.raises(InvalidInput):
        resolve_workspace_path(WS, given)
