"""Small programs for the interpreter tests: one function, run on given inputs."""

from cimxdsl.interpreters import run
from tests.unit.helpers import parse


def run_main(arguments: str, body: str, results: str, *inputs, device: str = "ideal"):
    """The outputs of `func.func @main(arguments) -> (results) { body }` run on `inputs`."""
    text = f"func.func @main({arguments}) -> ({results}) {{\n{body}\n}}"
    return run(parse(text), inputs, device).outputs
