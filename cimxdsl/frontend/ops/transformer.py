"""Transformer layers: LayerNormalization, Gelu and Trilu (causal masks)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import i1
from xdsl.ir import SSAValue

from cimxdsl.frontend.builder import shape_of
from cimxdsl.frontend.ops.math import mean
from cimxdsl.frontend.registry import importer

if TYPE_CHECKING:
    from cimxdsl.frontend.onnx_importer import OnnxImporter


@importer("LayerNormalization")
def import_layer_norm(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """`(x - mean) / sqrt(var + eps) · scale + bias` over the axes from `axis` on; also the mean and
    the inverse standard deviation (the optional outputs)."""
    x = im.input(node, 0)
    rank = len(shape_of(x))
    axes = list(range(attrs.axis("axis", rank), rank))
    centered = im.ir.binary(arith.SubfOp, x, mean_value := mean(im, x, axes))
    variance = mean(im, im.ir.binary(arith.MulfOp, centered, centered), axes)
    deviation = im.ir.unary(math.SqrtOp, im.ir.scalar_op(arith.AddfOp, variance, attrs["epsilon"]))
    inverse = im.ir.insert(arith.DivfOp(im.ir.splat(1.0, shape_of(deviation)), deviation))
    result = im.ir.binary(arith.MulfOp, im.ir.binary(arith.MulfOp, centered, inverse), im.input(node, 1))
    if len(node.input) > 2 and node.input[2]:
        result = im.ir.binary(arith.AddfOp, result, im.input(node, 2))
    return [result, mean_value, inverse]


@importer("Gelu")
def import_gelu(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """`x/2 · (1 + erf(x/√2))`, or with `approximate="tanh"` `x/2 · (1 + tanh(√(2/π)·(x + 0.044715·x³)))`."""
    x = im.input(node, 0)
    if attrs["approximate"] == "tanh":
        cube = im.ir.binary(arith.MulfOp, im.ir.binary(arith.MulfOp, x, x), x)
        inner = im.ir.binary(arith.AddfOp, x, im.ir.scalar_op(arith.MulfOp, cube, 0.044715))
        curve = im.ir.unary(math.TanhOp, im.ir.scalar_op(arith.MulfOp, inner, float(np.sqrt(2 / np.pi))))
    else:
        curve = im.ir.unary(math.ErfOp, im.ir.scalar_op(arith.MulfOp, x, float(1 / np.sqrt(2))))
    half = im.ir.scalar_op(arith.MulfOp, x, 0.5)
    return [im.ir.binary(arith.MulfOp, half, im.ir.scalar_op(arith.AddfOp, curve, 1.0))]


@importer("Trilu")
def import_trilu(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """The upper (or lower) triangle of the last two dimensions, from diagonal `k` on; the rest 0."""
    x = im.input(node, 0)
    k = im.optional_constant(node, 1)
    k = 0 if k is None else int(np.ravel(k)[0])
    rows, cols = shape_of(x)[-2:]
    ones = np.ones((rows, cols), bool)
    mask = np.triu(ones, k) if attrs["upper"] else np.tril(ones, k)
    zeros = im.ir.splat(0, shape_of(x), x.type.element_type)
    return [im.ir.select(im.ir.constant(mask, i1), x, zeros)]
