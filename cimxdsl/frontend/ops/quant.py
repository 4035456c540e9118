"""Quantized ops: QuantizeLinear, DequantizeLinear, QLinearMatMul/Conv, MatMul/ConvInteger (as
dequantized float ops; a QDQ model's scales are kept on the ops)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from onnx import helper
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.ir import Operation, SSAValue

from cimxdsl.frontend.attributes import NodeAttributes, node_error
from cimxdsl.frontend.builder import BITS_ATTRIBUTE, integer_range, mark_scales, shape_of
from cimxdsl.frontend.ops.nn import convolution, matmul
from cimxdsl.frontend.registry import importer

if TYPE_CHECKING:
    from cimxdsl.frontend.onnx_importer import OnnxImporter


"""On an op whose result is dequantized integers: their scales (and `cimxdsl.axis`), so that
quantization reuses a quantized model's scales instead of calibrating."""


def per_axis(im: OnnxImporter, values: np.ndarray | SSAValue, axis: int, rank: int) -> SSAValue:
    """A per-tensor or per-`axis` parameter shaped to broadcast over rank `rank`."""
    if isinstance(values, np.ndarray | np.generic | float | int):
        return im.ir.constant(along_axis(values, axis, rank))
    count = int(np.prod(shape_of(values)))
    shape = [1] * rank
    if count > 1:
        shape[axis % rank] = count
    return im.ir.reshape(values, shape)


Parameter = np.ndarray | SSAValue | None
"""A quantization parameter: a constant, a run-time value, or absent."""


def dequantize(im: OnnxImporter, codes: SSAValue, scale: Parameter, zero: Parameter, axis: int = 1) -> SSAValue:
    """`(q - zero) · scale`, marked with its scale when it is one constant (and the bits of codes a
    QuantizeLinear made)."""
    rank = len(shape_of(codes))
    centered = codes if zero is None else im.ir.binary(arith.SubfOp, codes, per_axis(im, zero, axis, rank))
    value = im.ir.binary(arith.MulfOp, centered, per_axis(im, scale, axis, rank))
    if isinstance(scale, np.ndarray) and scale.size == 1:
        bits = codes.owner.attributes.get(BITS_ATTRIBUTE) if isinstance(codes.owner, Operation) else None
        mark_scales(value, scale, axis % rank, bits.value.data if bits is not None else None)
    return value


def quantize(
    im: OnnxImporter, x: SSAValue, scale: Parameter, zero: Parameter, dtype: np.dtype, axis: int = 1
) -> SSAValue:
    """`clip(round(x / scale) + zero)` to the range of the integer `dtype`."""
    rank = len(shape_of(x))
    scaled = im.ir.unary(math.RoundEvenOp, im.ir.binary(arith.DivfOp, x, per_axis(im, scale, axis, rank)))
    shifted = scaled if zero is None else im.ir.binary(arith.AddfOp, scaled, per_axis(im, zero, axis, rank))
    found = integer_range(dtype)
    low, high = found[:2] if found else (np.iinfo(dtype).min, np.iinfo(dtype).max)
    return im.ir.clamp(shifted, float(low), float(high))


def parameter(im: OnnxImporter, node, index: int) -> Parameter:
    name = node.input[index] if index < len(node.input) else ""
    if not name:
        return None
    return im.constants[name] if name in im.constants else im.input(node, index)


def zero_point_dtype(im: OnnxImporter, node, index: int) -> np.dtype:
    """The integer type of a zero point (uint8 when absent), also for a run-time zero point."""
    name = node.input[index] if index < len(node.input) else ""
    if name in im.constants:
        return im.constants[name].dtype
    for info in im.graph.input:
        if info.name == name:
            return helper.tensor_dtype_to_np_dtype(info.type.tensor_type.elem_type)
    return np.dtype(np.uint8)


@importer("QuantizeLinear")
def import_quantize_linear(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    dtype = zero_point_dtype(im, node, 2)
    if integer_range(dtype) is None:
        raise node_error(node, f"only 8- and 4-bit integers are supported, not {dtype}")
    x, scale, zero = im.input(node, 0), parameter(im, node, 1), parameter(im, node, 2)
    codes = quantize(im, x, scale, zero, dtype, quantization_axis(attrs, x, scale))
    codes.owner.attributes[BITS_ATTRIBUTE] = IntegerAttr(integer_range(dtype)[2], i64)
    return [codes]


@importer("DequantizeLinear")
def import_dequantize_linear(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x, scale, zero = im.input(node, 0), parameter(im, node, 1), parameter(im, node, 2)
    return [dequantize(im, x, scale, zero, quantization_axis(attrs, x, scale))]


def quantization_axis(attrs: NodeAttributes, x: SSAValue, scale: Parameter) -> int:
    """The axis of per-axis scales (checked against the rank); per-tensor scales ignore it."""
    if attrs["block_size"]:
        raise node_error(attrs.node, f"blocked quantization (block_size {attrs['block_size']}) is not supported")
    count = scale.size if isinstance(scale, np.ndarray) else 1 if scale is None else int(np.prod(shape_of(scale)))
    return attrs.axis("axis", len(shape_of(x))) if count > 1 else attrs["axis"]


def along_axis(values, axis: int, rank: int) -> np.ndarray:
    """A per-tensor or per-`axis` parameter shaped to broadcast over rank `rank`."""
    values = np.asarray(values, np.float64)
    shape = [1] * rank
    if values.size > 1:
        shape[axis % rank] = values.size
    return values.reshape(shape)


def dequantized_operand(im: OnnxImporter, node, index: int, scale_index: int, axis: int) -> SSAValue:
    """Input `index` of a QLinear op as floats; constant integer weights stay a (marked) constant."""
    scale, zero = parameter(im, node, scale_index), parameter(im, node, scale_index + 1)
    name = node.input[index]
    if name not in im.constants or not all(isinstance(p, np.ndarray | None) for p in (scale, zero)):
        return dequantize(im, im.input(node, index), scale, zero, axis)
    codes = im.constants[name].astype(np.float64)
    if zero is not None:
        codes = codes - along_axis(zero, axis, codes.ndim)
    value = im.ir.constant((codes * along_axis(scale, axis, codes.ndim)).astype(np.float32))
    mark_scales(value, scale, axis % codes.ndim)
    return value


@importer("QLinearMatMul")
def import_qlinear_matmul(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    product = matmul(im, dequantized_operand(im, node, 0, 1, 1), dequantized_operand(im, node, 3, 4, 1), node)
    return [quantize(im, product, parameter(im, node, 6), parameter(im, node, 7), zero_point_dtype(im, node, 7))]


@importer("QLinearConv")
def import_qlinear_conv(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = dequantized_operand(im, node, 0, 1, 1)
    w = dequantized_operand(im, node, 3, 4, 0)
    result = convolution(im, node, attrs, x, w)
    if len(node.input) > 8 and node.input[8]:
        bias_scale = np.asarray(im.constant(node, 1, "the scale"), np.float64) * np.asarray(
            im.constant(node, 4, "the scale"), np.float64
        )
        bias = im.constant(node, 8, "the bias") * bias_scale
        result = im.ir.binary(arith.AddfOp, result, im.ir.constant(bias.reshape(1, -1, 1, 1)))
    return [quantize(im, result, parameter(im, node, 6), parameter(im, node, 7), zero_point_dtype(im, node, 7))]


def integer_operand(im: OnnxImporter, node, index: int, zero_index: int, axis: int) -> SSAValue:
    value = im.input(node, index)
    zero = parameter(im, node, zero_index)
    rank = len(shape_of(value))
    return value if zero is None else im.ir.binary(arith.SubfOp, value, per_axis(im, zero, axis, rank))


@importer("MatMulInteger")
def import_matmul_integer(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    return [matmul(im, integer_operand(im, node, 0, 2, 0), integer_operand(im, node, 1, 3, -1), node)]


@importer("ConvInteger")
def import_conv_integer(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    return [convolution(im, node, attrs, integer_operand(im, node, 0, 2, 1), integer_operand(im, node, 1, 3, 0))]
