"""The house rules that a reading can check: the layer order (a module imports only from its own
layer or the ones below it), and small modules and functions.

domain < settings < observability < store < runtime < features < services < api, console <
wiring <
the entry points (app, startup, cli). Imports under ``TYPE_CHECKING`` count too: a type from a higher
layer is a dependency on it all the same.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "sandlot"

LAYERS = [
    {"domain"},
    {"settings"},
    {"observability"},
    {"store"},
    {"runtime"},
    {"features"},
    {"services"},
    {"api", "console"},
    {"wiring"},
    {"app", "startup", "cli", "__main__", "__init__"},
]


def _layer(top: str) -> int:
    for rank, names in enumerate(LAYERS):
        if top in names:
            return rank
    raise AssertionError(f"sandlot.{top} belongs to no layer: add it to LAYERS")


def _top(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py")


def _imported(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "sandlot" and len(parts) > 1:
                found.append((node.lineno, parts[1]))
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_module_imports_nothing_from_a_higher_layer(path: Path) -> None:
    own = _layer(_top(path))
    upward = [
        f"line {line}: sandlot.{top}"
        for line, top in _imported(ast.parse(path.read_text(), str(path)))
        if _layer(top) > own
    ]
    assert not upward, f"{path.relative_to(PACKAGE)} imports from a higher layer: {upward}"


def test_the_check_sees_an_upward_import() -> None:
    tree = ast.parse("from sandlot.services.sessions import SessionService\n")
    assert [_layer(top) for _, top in _imported(tree)] == [_layer("services")]
    assert _layer("services") > _layer("features")


#: The size bars of STYLE.md: a module over this many lines, or a function over that many, is
#: asking to be split.
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_and_functions_stay_small(path: Path) -> None:
    text = path.read_text()
    assert text.count("\n") <= MAX_MODULE_LINES, f"{path.name} has {text.count(chr(10))} lines"
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, f"{path.name}: {long}"


def test_only_the_runtime_talks_to_docker() -> None:
    outside = [
        str(path.relative_to(PACKAGE))
        for path in MODULES
        if _top(path) != "runtime"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Import | ast.ImportFrom)
        and any(
            name.split(".")[0] == "aiodocker"
            for name in (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            )
        )
    ]
    assert not outside, f"only runtime/ may import aiodocker: {outside}"


def test_the_console_reaches_only_services() -> None:
    """Console controllers call services; never the runtime or the store."""
    reaching = [
        f"{path.relative_to(PACKAGE)} line {line}: sandlot.{top}"
        for path in MODULES
        if _top(path) == "console"
        for line, top in _imported(ast.parse(path.read_text()))
        if top in ("runtime", "store")
    ]
    assert not reaching, reaching
