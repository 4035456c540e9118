"""Every import inside the package points down the layers (function-level imports included):

    device < dialects < interpreters < transforms < frontend < backend < api, explore, tools, ...

The device model imports no xDSL; dialects hold the IR; interpreters are the dialects' executable
semantics (the pim instruction-set machine included); passes may fold constants with them, as
xDSL's `constant-fold-interp` does; the frontend builds IR and calibrates with the interpreter; the
backend serialises and validates what the passes produced; the API and tools sit on top."""

import ast
from pathlib import Path

import pytest

import cimxdsl

PACKAGE = Path(cimxdsl.__file__).parent
LAYERS = ("device", "dialects", "interpreters", "transforms", "frontend", "backend")
"""Bottom to top; every other module of the package is above them all."""


def layer(module: str) -> int:
    """The layer of a dotted module name inside `cimxdsl` (`cimxdsl.backend.emit` -> 5)."""
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else len(LAYERS)


def module_name(path: Path) -> str:
    return ".".join(("cimxdsl", *path.relative_to(PACKAGE).with_suffix("").parts))


def imports(source: str, module: str) -> list[tuple[int, str]]:
    """(line, imported cimxdsl module) of every import in `module`'s source, at any depth."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*module.split(".")[: -node.level], *filter(None, [base])])
            found.append((node.lineno, base))
    return [(line, name) for line, name in found if name == "cimxdsl" or name.startswith("cimxdsl.")]


SOURCES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_down_the_layers(path: Path):
    here = module_name(path)
    upward = [f"line {line}: {name}" for line, name in imports(path.read_text(), here) if layer(name) > layer(here)]
    assert not upward, f"{here} imports from a higher layer: {upward}"


def test_the_check_sees_function_level_and_relative_imports():
    source = (
        "import numpy\ndef f():\n    from cimxdsl.backend.validator import validate\n    from ..backend import emit\n"
    )
    found = imports(source, "cimxdsl.interpreters.probe")
    assert found == [(3, "cimxdsl.backend.validator"), (4, "cimxdsl.backend")]
    assert all(layer(name) > layer("cimxdsl.interpreters.probe") for _, name in found)
