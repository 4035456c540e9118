"""Every import inside the package points down the layers (function-level imports included):

    device < dialects < interpreters < {frontend, transforms, backend} < api, flow, explore, tools, ...

The device model imports no xDSL; dialects hold the IR; interpreters are the dialects' executable
semantics (the pim instruction-set machine included); passes may fold constants with them, as
xDSL's `constant-fold-interp` does. The three stages stand side by side and none imports another:
the frontend builds IR (and calibrates with the interpreter), the passes rewrite it, the backend
reads what the passes produced (serialises, validates, estimates). The flows, the API and the tools
above chain them. Inside `transforms`, the two flows (`memristor`, `pim`) stand side by side on
`common` (and the pass registry): neither imports the other, and `common` imports neither."""

import ast
from pathlib import Path

import pytest

import cimxdsl

PACKAGE = Path(cimxdsl.__file__).parent
LAYERS = (("device",), ("dialects",), ("interpreters",), ("frontend", "transforms", "backend"))
"""Bottom to top, each a group of packages side by side; every other module of the package is above them all."""
ABOVE = len(LAYERS)


def package(module: str) -> str:
    """The package of a dotted module name inside `cimxdsl` (`cimxdsl.backend.emit` -> `backend`)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer(module: str) -> int:
    """The layer of a dotted module name inside `cimxdsl` (`cimxdsl.backend.emit` -> 3)."""
    return next((i for i, group in enumerate(LAYERS) if package(module) in group), ABOVE)


FLOWS = ("memristor", "pim")
"""The flows of `transforms`, each a package side by side on `transforms.common`."""


def flow(module: str) -> str:
    """The flow of a module inside `cimxdsl.transforms` (`cimxdsl.transforms.pim.pim_codegen` -> `pim`), or ''."""
    parts = module.split(".")
    return parts[2] if package(module) == "transforms" and len(parts) > 2 and parts[2] in FLOWS else ""


def allowed(here: str, imported: str) -> bool:
    """Down the layers, or within one package (inside `transforms`, within one flow or down to what
    the flows share); never sideways into another package of the same layer."""
    if package(imported) == package(here) == "transforms":
        return flow(imported) in ("", flow(here))
    if layer(imported) < layer(here) or package(imported) == package(here):
        return True
    return layer(imported) == layer(here) == ABOVE


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
    wrong = [f"line {line}: {name}" for line, name in imports(path.read_text(), here) if not allowed(here, name)]
    assert not wrong, f"{here} imports from a higher layer or a stage beside its own: {wrong}"


def test_the_check_sees_function_level_and_relative_imports():
    source = (
        "import numpy\ndef f():\n    from cimxdsl.backend.validator import validate\n    from ..backend import emit\n"
    )
    found = imports(source, "cimxdsl.interpreters.probe")
    assert found == [(3, "cimxdsl.backend.validator"), (4, "cimxdsl.backend")]
    assert not any(allowed("cimxdsl.interpreters.probe", name) for _, name in found)


@pytest.mark.parametrize(
    ("here", "imported"),
    [
        ("cimxdsl.backend.emit", "cimxdsl.transforms.pim.pim_codegen"),
        ("cimxdsl.transforms.pim.pim_codegen", "cimxdsl.backend.emit"),
        ("cimxdsl.transforms.memristor.tile", "cimxdsl.frontend"),
        ("cimxdsl.frontend.builder", "cimxdsl.transforms.memristor.tile"),
        ("cimxdsl.dialects.pim", "cimxdsl.interpreters"),
        ("cimxdsl.transforms.pim.cinm_to_spatial", "cimxdsl.transforms.memristor.tile"),
        ("cimxdsl.transforms.memristor.pipeline", "cimxdsl.transforms.pim.pipeline"),
        ("cimxdsl.transforms.common.stages", "cimxdsl.transforms.memristor.schedule"),
    ],
)
def test_a_stage_imports_no_stage_beside_it_nor_above(here: str, imported: str):
    assert not allowed(here, imported)


@pytest.mark.parametrize(
    ("here", "imported"),
    [
        ("cimxdsl.backend.emit", "cimxdsl.backend.memory"),
        ("cimxdsl.backend.emit", "cimxdsl.dialects.pim"),
        ("cimxdsl.flow.pim", "cimxdsl.transforms.pim.pim_codegen"),
        ("cimxdsl.flow.pim", "cimxdsl.backend.emit"),
        ("cimxdsl.api", "cimxdsl.flow.pim"),
        ("cimxdsl.transforms.pim.pipeline", "cimxdsl.transforms.common.pipeline"),
        ("cimxdsl.transforms.memristor.pipeline", "cimxdsl.transforms"),
    ],
)
def test_imports_down_or_within_a_package_are_allowed(here: str, imported: str):
    assert allowed(here, imported)
