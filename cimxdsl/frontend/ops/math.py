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


ARITHMETIC = {"Add": arith.AddfOp, "Sub": arith.SubfOp, "Mul": arith.MulfOp, "Div": arith.DivfOp}


@importer(*ARITHMETIC)
def import_arithmetic(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    kind = ARITHMETIC[node.op_type]
    lhs, rhs = im.input(node, 0), im.input(node, 1)
    return [im.ir.binary(INTEGER_OPS[kind] if is_integer(lhs) else kind, lhs, rhs)]


@importer("Sum")
def import_sum(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    total = im.input(node, 0)
    for index in range(1, len(node.input)):
        total = im.ir.binary(arith.AddfOp, total, im.input(node, index))
    return [total]


@importer("Tanh")
def import_tanh(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    return [im.ir.unary(math.TanhOp, im.input(node, 0))]


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


REDUCTIONS: dict[str, tuple[Callable[[OnnxImporter, SSAValue, list[int]], SSAValue], bool]] = {
    "ReduceMean": (mean, True),
    "ReduceSum": (lambda im, x, axes: reduce_axes(im, tosa.ReduceSumOp, x, axes), True),
    "ReduceMax": (lambda im, x, axes: reduce_axes(im, tosa.ReduceMaxOp, x, axes), False),
}
"""Each Reduce* op: `reduce(im, x, axes)`, which keeps the reduced dimensions, and whether a
reduction over no elements is defined (a sum is, a maximum is not)."""


@importer(*REDUCTIONS)
def import_reduction(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """The reduced dimensions are dropped unless `keepdims`."""
    reduce, empty = REDUCTIONS[node.op_type]
    x = im.input(node, 0)
    shape = shape_of(x)
    axes = reduction_axes(im, node, attrs, len(shape))
    if axes is None:
        return [x]
    if not empty and any(shape[a] == 0 for a in axes):
        raise node_error(node, "a reduction over no elements is not supported")
    result = reduce(im, x, axes)
    return [result if attrs["keepdims"] else im.ir.reshape(result, [d for i, d in enumerate(shape) if i not in axes])]


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


FLOAT_UNARY = {"Erf": math.ErfOp, "Exp": math.ExpOp, "Sqrt": math.SqrtOp, "Round": math.RoundEvenOp}
"""(ONNX's Round rounds half to even.)"""


@importer(*FLOAT_UNARY)
def import_float_unary(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    return [im.ir.unary(FLOAT_UNARY[node.op_type], float_input(im, node, 0))]


@importer("Sign")
def import_sign(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """-1, 0 or +1 by the sign of a float `x` (the activation of binary and ternary networks)."""
    x = float_input(im, node, 0)
    zero, one = im.ir.splat(0.0, shape_of(x)), im.ir.splat(1.0, shape_of(x))
    negative = im.ir.select(im.ir.compare(x, zero, "lt"), im.ir.splat(-1.0, shape_of(x)), zero)
    return [im.ir.select(im.ir.compare(x, zero, "gt"), one, negative)]


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


LOGICAL = {"And": arith.AndIOp, "Or": arith.OrIOp, "Xor": arith.XOrIOp}


@importer(*LOGICAL)
def import_logical(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """And, Or, Xor of booleans, with broadcasting."""
    return [im.ir.binary(LOGICAL[node.op_type], boolean_input(im, node, 0), boolean_input(im, node, 1))]


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


COMPARISONS = {"Equal": "eq", "Less": "lt", "Greater": "gt", "LessOrEqual": "le", "GreaterOrEqual": "ge"}


@importer(*COMPARISONS)
def import_comparison(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """Equal (`eq`), Less (`lt`), Greater (`gt`), …: signed for integers, ordered for floats."""
    predicate = COMPARISONS[node.op_type]
    lhs, rhs = im.input(node, 0), im.input(node, 1)
    if lhs.type.element_type != rhs.type.element_type:
        raise node_error(node, f"the operands differ in type ({lhs.type.element_type}, {rhs.type.element_type})")
    signed = "s" + predicate if predicate != "eq" and is_integer(lhs) else predicate
    return [im.ir.compare(lhs, rhs, signed)]


EXTREMA = {"Max": arith.MaximumfOp, "Min": arith.MinimumfOp}


@importer(*EXTREMA)
def import_extremum(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """Max/Min of any number of float inputs, with broadcasting."""
    kind = EXTREMA[node.op_type]
    result = float_input(im, node, 0)
    for index in range(1, len(node.input)):
        result = im.ir.binary(kind, result, float_input(im, node, index))
    return [result]
