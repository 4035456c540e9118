"""Element-wise arithmetic, comparisons, logic and reductions."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects import arith, math, tosa
from xdsl.dialects.builtin import f32, i1
from xdsl.ir import SSAValue

from cimxdsl.frontend.attributes import node_error
from cimxdsl.frontend.builder import shape_of
from cimxdsl.frontend.ops.shape import convert, is_integer
from cimxdsl.frontend.registry import importer

if TYPE_CHECKING:
    from cimxdsl.frontend.onnx_importer import OnnxImporter


INTEGER_OPS = {
    arith.AddfOp: arith.AddiOp,
    arith.SubfOp: arith.SubiOp,
    arith.MulfOp: arith.MuliOp,
    arith.DivfOp: arith.DivSIOp,
}
"""The integer op of each float op (int32/int64 tensors, as index arithmetic; division truncates)."""


def elementwise(kind) -> Callable:
    def handler(im: OnnxImporter, node, attrs) -> list[SSAValue]:
        lhs, rhs = im.input(node, 0), im.input(node, 1)
        return [im.ir.binary(INTEGER_OPS[kind] if is_integer(lhs) else kind, lhs, rhs)]

    return handler


importer.register("Add", elementwise(arith.AddfOp))
importer.register("Sub", elementwise(arith.SubfOp))
importer.register("Mul", elementwise(arith.MulfOp))
importer.register("Div", elementwise(arith.DivfOp))


@importer("Sum")
def import_sum(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    total = im.input(node, 0)
    for index in range(1, len(node.input)):
        total = im.ir.binary(arith.AddfOp, total, im.input(node, index))
    return [total]


def unary(kind) -> Callable:
    def handler(im: OnnxImporter, node, attrs) -> list[SSAValue]:
        return [im.ir.unary(kind, im.input(node, 0))]

    return handler


importer.register("Tanh", unary(math.TanhOp))


def reduce_axes(im: OnnxImporter, kind, x: SSAValue, axes) -> SSAValue:
    """A `tosa.reduce_*` over each of `axes`, the dimensions kept (as 1)."""
    for axis in axes:
        x = im.ir.reduce(kind, x, axis)
    return x


def mean(im: OnnxImporter, x: SSAValue, axes) -> SSAValue:
    """The mean over `axes`, the dimensions kept (as 1)."""
    count = int(np.prod([shape_of(x)[a] for a in axes]))
    return im.ir.scalar_op(arith.MulfOp, reduce_axes(im, tosa.ReduceSumOp, x, axes), 1.0 / max(count, 1))


def reduction_axes(im: OnnxImporter, node, attrs, rank: int) -> list[int] | None:
    """The axes of a Reduce* node (an attribute before opset 18, or ReduceSum's since 13, else an
    input); None when empty axes mean "no reduction"."""
    axes = attrs["axes"]
    if axes is None and len(node.input) > 1 and node.input[1]:
        axes = [int(a) for a in np.ravel(im.constant(node, 1, "axes"))]
    if not axes:
        return None if attrs["noop_with_empty_axes"] else list(range(rank))
    if any(not -rank <= a < rank for a in axes):
        raise node_error(node, f"axes {list(axes)} must be in [{-rank}, {rank - 1}]")
    return sorted({a % rank for a in axes})


def reduction(reduce: Callable[[OnnxImporter, SSAValue, list[int]], SSAValue], empty: bool = True) -> Callable:
    """A Reduce* node: `reduce(im, x, axes)` keeps the reduced dimensions, dropped unless `keepdims`;
    `empty` tells whether a reduction over no elements is defined (a sum is, a maximum is not)."""

    def handler(im: OnnxImporter, node, attrs) -> list[SSAValue]:
        x = im.input(node, 0)
        shape = shape_of(x)
        axes = reduction_axes(im, node, attrs, len(shape))
        if axes is None:
            return [x]
        if not empty and any(shape[a] == 0 for a in axes):
            raise node_error(node, "a reduction over no elements is not supported")
        result = reduce(im, x, axes)
        return [
            result if attrs["keepdims"] else im.ir.reshape(result, [d for i, d in enumerate(shape) if i not in axes])
        ]

    return handler


importer.register("ReduceMean", reduction(mean))
importer.register("ReduceSum", reduction(lambda im, x, axes: reduce_axes(im, tosa.ReduceSumOp, x, axes)))
importer.register("ReduceMax", reduction(lambda im, x, axes: reduce_axes(im, tosa.ReduceMaxOp, x, axes), empty=False))


def float_input(im: OnnxImporter, node, index: int) -> SSAValue:
    value = im.input(node, index)
    if is_integer(value):
        raise node_error(node, "integer operands are not supported (models compute in float)")
    return value


@importer("Pow")
def import_pow(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    base, exponent = float_input(im, node, 0), im.input(node, 1)
    if is_integer(exponent):
        exponent = convert(im, exponent, f32)
    return [im.ir.binary(math.PowFOp, base, exponent)]


@importer("Reciprocal")
def import_reciprocal(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = float_input(im, node, 0)
    return [im.ir.insert(arith.DivfOp(im.ir.splat(1.0, shape_of(x)), x))]


@importer("Neg")
def import_neg(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = im.input(node, 0)
    if is_integer(x):
        return [im.ir.insert(arith.SubiOp(im.ir.splat(0, shape_of(x), x.type.element_type), x))]
    return [im.ir.unary(arith.NegfOp, x)]


def float_unary(kind) -> Callable:
    def handler(im: OnnxImporter, node, attrs) -> list[SSAValue]:
        return [im.ir.unary(kind, float_input(im, node, 0))]

    return handler


importer.register("Erf", float_unary(math.ErfOp))
importer.register("Exp", float_unary(math.ExpOp))
importer.register("Sqrt", float_unary(math.SqrtOp))


@importer("IsNaN")
def import_is_nan(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = float_input(im, node, 0)
    return [im.ir.map(lambda a: arith.CmpfOp(a, a, "uno"), [x], i1)]


@importer("IsInf")
def import_is_inf(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """`x` beyond the largest float32 (+∞, −∞ or either, by `detect_positive`/`detect_negative`)."""
    x = float_input(im, node, 0)
    largest = float(np.finfo(np.float32).max)
    positive, negative = attrs["detect_positive"], attrs["detect_negative"]
    if not positive and not negative:
        return [im.ir.constant(np.zeros(shape_of(x), bool), i1)]
    if positive and negative:
        return [im.ir.compare(im.ir.unary(math.AbsFOp, x), im.ir.splat(largest, shape_of(x)), "gt")]
    return [im.ir.compare(x, im.ir.splat(largest if positive else -largest, shape_of(x)), "gt" if positive else "lt")]


def logical(kind) -> Callable:
    """And, Or, Xor of booleans, with broadcasting."""

    def handler(im: OnnxImporter, node, attrs) -> list[SSAValue]:
        return [im.ir.binary(kind, boolean_input(im, node, 0), boolean_input(im, node, 1))]

    return handler


importer.register("And", logical(arith.AndIOp))
importer.register("Or", logical(arith.OrIOp))
importer.register("Xor", logical(arith.XOrIOp))


@importer("Not")
def import_not(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = boolean_input(im, node, 0)
    return [im.ir.binary(arith.XOrIOp, x, im.ir.constant(np.ones(shape_of(x), bool), i1))]


def boolean_input(im: OnnxImporter, node, index: int) -> SSAValue:
    value = im.input(node, index)
    if value.type.element_type != i1:
        raise node_error(node, f"the operands must be booleans, got {value.type.element_type}")
    return value


@importer("Where")
def import_where(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    return [im.ir.select(im.input(node, 0), im.input(node, 1), im.input(node, 2))]


def comparison(predicate: str) -> Callable:
    """Equal (`eq`), Less (`lt`), Greater (`gt`), …: signed for integers, ordered for floats."""

    def handler(im: OnnxImporter, node, attrs) -> list[SSAValue]:
        lhs, rhs = im.input(node, 0), im.input(node, 1)
        if lhs.type.element_type != rhs.type.element_type:
            raise node_error(node, f"the operands differ in type ({lhs.type.element_type}, {rhs.type.element_type})")
        signed = "s" + predicate if predicate != "eq" and is_integer(lhs) else predicate
        return [im.ir.compare(lhs, rhs, signed)]

    return handler


importer.register("Equal", comparison("eq"))
importer.register("Less", comparison("lt"))
importer.register("Greater", comparison("gt"))
importer.register("LessOrEqual", comparison("le"))
importer.register("GreaterOrEqual", comparison("ge"))


def variadic(kind) -> Callable:
    """Max/Min of any number of float inputs, with broadcasting."""

    def handler(im: OnnxImporter, node, attrs) -> list[SSAValue]:
        result = float_input(im, node, 0)
        for index in range(1, len(node.input)):
            result = im.ir.binary(kind, result, float_input(im, node, index))
        return [result]

    return handler


importer.register("Max", variadic(arith.MaximumfOp))
importer.register("Min", variadic(arith.MinimumfOp))
