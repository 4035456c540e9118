"""Parsing MLIR text with every dialect registered, naming the place of verifier errors."""

import re

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import AnyFloat, BytesAttr, DenseIntOrFPElementsAttr, ModuleOp
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.lexer import Span

LITERAL = re.compile(r"-?0x[0-9a-fA-F]+|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
"""A number in a dense literal: hexadecimal, or a decimal integer or float."""


def make_context() -> Context:
    """A context with every upstream dialect and ours registered (loaded lazily)."""
    from xdsl.dialects import get_all_dialects as upstream_dialects

    from cimxdsl.dialects import get_all_dialects, get_upstream_dialects

    ctx = Context()
    for name, factory in {**upstream_dialects(), **get_all_dialects(), **get_upstream_dialects()}.items():
        ctx.register_dialect(name, factory)
    return ctx


def parse_module_text(text: str, name: str) -> ModuleOp:
    """Parse and verify MLIR text; errors name the file, line and column of the failing op."""
    return parse_located_module(text, name)[0]


def parse_located_module(text: str, name: str) -> tuple[ModuleOp, dict[Operation, Span]]:
    """`parse_module_text`, and where each op starts (to name ops in later errors, `location`)."""
    parser = LocatingParser(make_context(), text, name)
    module = parser.parse_module()
    try:
        module.verify()
    except DiagnosticException as e:
        raise IRError(f"{locate_failure(module, parser.op_spans)}{e}") from None
    return module, parser.op_spans


class IRError(ValueError):
    """IR that does not verify, with the place of the failing op; one line."""


class LocatingParser(Parser):
    """A parser that remembers where each operation starts, to name it in verifier errors."""

    def __init__(self, ctx: Context, text: str | bytes, name: str, line_offset: int = 0):
        super().__init__(ctx, text, name)
        self.line_offset = line_offset
        self.op_spans: dict[Operation, Span] = {}

    def parse_operation(self) -> Operation:
        start = Span(self.pos, self.pos, self.lexer.input)  # where the op's first token starts
        op = super().parse_operation()
        self.op_spans[op] = start
        return op

    def parse_dense_int_or_fp_elements_attr(self, type) -> DenseIntOrFPElementsAttr:
        """A `dense<…>` literal. In a float one, MLIR reads a hexadecimal literal as the float's bits
        (xDSL prints NaN, ±∞ and whole floats such as 16777216 so); xDSL 0.74 reads it as an integer
        value (0xFF800000, −∞ in f32, as 4.28657869e+09): those literals are read again, as bits."""
        start = self.pos
        attr = super().parse_dense_int_or_fp_elements_attr(type)
        element = attr.get_element_type()
        text = self.lexer.input.content[start : self.pos]
        text = text.decode() if isinstance(text, bytes) else text
        body = text[text.find("<") + 1 : text.find(">")]
        if not isinstance(element, AnyFloat) or "0x" not in body or '"' in body or "-0x" in body:
            return attr
        dtype = np.dtype(element.format)
        bits = np.dtype(f"<u{dtype.itemsize}")
        values = [
            np.array(int(t, 16), bits).view(dtype) if t.startswith("0x") else dtype.type(t)
            for t in LITERAL.findall(body)
        ]
        data = np.broadcast_to(np.array(values, dtype), (len(attr),))  # a splat's one value, everywhere
        return DenseIntOrFPElementsAttr(attr.type, BytesAttr(np.ascontiguousarray(data).tobytes()))


def locate_failure(module: ModuleOp, op_spans: dict[Operation, Span], line_offset: int = 0) -> str:
    """`file:line:col: ` of the first op of `module` that does not verify (or its name)."""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except DiagnosticException:
            return location(op, op_spans, line_offset)
    return ""


def location(op: Operation, op_spans: dict[Operation, Span], line_offset: int = 0) -> str:
    """`file:line:col: ` where `op` starts, or `in 'op.name': ` for an op the parser did not see."""
    span = op_spans.get(op)
    if span is None:
        return f"in '{op.name}': "
    place = span.get_location()
    return f"{place.file}:{place.line + line_offset}:{place.col}: "
