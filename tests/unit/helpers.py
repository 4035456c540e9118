"""Shared test helpers: parsing and running pipelines in process."""

from xdsl.context import Context
from xdsl.dialects import get_all_dialects as upstream_dialects
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.passes import PassPipeline

from cimxdsl.dialects import get_all_dialects
from cimxdsl.transforms import get_all_passes


def context() -> Context:
    ctx = Context()
    for name, factory in {**upstream_dialects(), **get_all_dialects()}.items():
        ctx.register_dialect(name, factory)
    return ctx


def parse(text: str) -> ModuleOp:
    module = Parser(context(), text).parse_module()
    module.verify()
    return module


def apply(module: ModuleOp, spec: str) -> ModuleOp:
    """Apply a pass pipeline to `module` in place, verifying the result."""
    PassPipeline.parse_spec(get_all_passes(), spec).apply(context(), module)
    module.verify()
    return module
