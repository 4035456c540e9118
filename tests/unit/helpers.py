"""Shared test helpers: parsing and running pipelines in process."""

from xdsl.dialects.builtin import ModuleOp

from cimxdsl.api import apply_passes
from cimxdsl.parsing import parse_module_text


def parse(text: str) -> ModuleOp:
    return parse_module_text(text, "<test>")


def apply(module: ModuleOp, spec: str) -> ModuleOp:
    """Apply a pass pipeline to `module` in place, verifying the result."""
    apply_passes(module, spec)
    module.verify()
    return module
