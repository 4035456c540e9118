"""The package uses only the public API of the libraries it builds on (xDSL above all): every
private attribute it reads (`x._name`, `getattr(x, "_name")`) is one the package defines itself."""

import ast
import functools
from pathlib import Path

import pytest

import cimxdsl

PACKAGE = Path(cimxdsl.__file__).parent


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def defined_names(tree: ast.AST) -> set[str]:
    """Private names a module defines: functions, classes, (class) variables, attributes it assigns."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return {name for name in names if private(name)}


def read_names(tree: ast.AST) -> list[tuple[int, str]]:
    """Private attributes a module reads, with their lines."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and private(node.attr):
            found.append((node.lineno, node.attr))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and private(node.args[1].value)
        ):
            found.append((node.lineno, node.args[1].value))
    return found


@functools.cache
def names_in(text: str) -> tuple[frozenset[str], tuple[tuple[int, str], ...]]:
    """The private names a source defines and those it reads (parsed once per text: the tests below
    each check the whole package)."""
    tree = ast.parse(text)
    return frozenset(defined_names(tree)), tuple(read_names(tree))


def foreign_private_reads(sources: dict[str, str]) -> list[str]:
    """`file:line: name` for each private attribute read in `sources` that none of them defines."""
    names = {path: names_in(text) for path, text in sources.items()}
    ours = set().union(*(defined for defined, _ in names.values()))
    return [f"{path}:{line}: {name}" for path, (_, reads) in names.items() for line, name in reads if name not in ours]


@functools.cache
def package_sources() -> dict[str, str]:
    return {str(path.relative_to(PACKAGE)): path.read_text() for path in sorted(PACKAGE.rglob("*.py"))}


def test_the_package_reads_no_private_attribute_of_another_library():
    assert foreign_private_reads(package_sources()) == []


@pytest.mark.parametrize(
    "code",
    [
        "table = interpreter._impls._impl_dict",
        "table = getattr(interpreter, '_impls')",
        "from xdsl.interpreter import Interpreter\nInterpreter._run_op(interpreter, op, ())",
    ],
)
def test_a_private_read_of_xdsl_is_found(code):
    """The check fails on a read of xDSL's registry (as a prepared function once looked up implementations)."""
    sources = {**package_sources(), "interpreters/probe.py": code}
    assert [r for r in foreign_private_reads(sources) if r.startswith("interpreters/")] != []


@pytest.mark.parametrize(
    "code",
    ["start = parser._current_token.span", "for action in arg_parser._actions:\n    pass"],
)
def test_the_private_reads_once_made_outside_the_interpreters_are_found(code):
    """The span of xDSL's current token (the parser's public `pos` and `lexer.input` give it) and
    argparse's list of arguments (`add_argument` sets the help instead)."""
    assert foreign_private_reads({**package_sources(), "parsing_probe.py": code}) != []


def test_private_attributes_the_package_defines_are_its_own():
    code = (
        "class A:\n    def __init__(self):\n        self._state = 1\n\n    def get(self):\n        return self._state\n"
    )
    assert foreign_private_reads({"a.py": code}) == []
