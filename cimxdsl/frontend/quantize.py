"""Post-training quantization of the imported float program.

Every `linalg.matmul`/`linalg.conv_2d_nchw_fchw`/`linalg.conv_2d_ngchw_gfchw` whose weights are a
constant becomes an integer product for the crossbars:

    x_q = quantize(x, s_x)                    per-tensor activation scale from calibration
    W_q = round(W / s_w)                      per-output-channel symmetric weight scales
    y   = dequantize(x_q · W_q, s_x · s_w)    back to float on the host

Activations that are never negative (after ReLU) use unsigned codes (0 … 2^bits - 1), others
symmetric signed codes. Each product may have its own bits (`precision`, by layer name: the name of
the product's result), 1 to 8; a 1-bit weight is a ternary sign (-1, 0, +1), and so is a signed
1-bit input where the device takes one (`ternary_inputs`: bipolar DACs drive a sign and one bit of
magnitude in one pass); elsewhere a 1-bit input must be non-negative. The integer product of a layer
with its own bits carries them as the attributes `weight_bits` and `input_bits`, which
`linalg-to-cinm` and the crossbar lowerings keep down to the device (the other layers run at the
device's bits). A quantized ONNX model's codes imply a layer's bits where they take fewer than the
defaults (4-bit types, or constant weights whose codes use fewer bits than their type): that layer
then keeps those bits and the model's scales. A layer of a binary or ternary network (weights -a, 0,
+a per output channel, inputs -1, 0, +1 on the calibration set) takes 1-bit weights and 2-bit
inputs, or 1-bit ternary inputs with `ternary_inputs` (`binary_precision`): its products are exact
integers on 1-bit cells. A product of two run-time tensors (`linalg.batch_matmul`: attention's Q·Kᵀ
and P·V) quantizes both with per-tensor scales: the left as an activation, the right, which a
crossbar would hold, as symmetric weight codes. `calibrate` runs the float program on sample inputs
and records the range of every product's inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, TensorType, f32, i32
from xdsl.dialects.linalg.ops import Conv2DNchwFchwOp, Conv2DNgchwGfchwOp, MatmulOp
from xdsl.interpreter import Interpreter
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import Rewriter

from cimxdsl.dialects import cinm
from cimxdsl.dialects.upstream import BatchMatmulOp
from cimxdsl.dialects.utils import dense_array, dense_attr, reassociation, set_precision, symmetric_limit
from cimxdsl.frontend.builder import BITS_ATTRIBUTE, SCALES_ATTRIBUTE
from cimxdsl.interpreters import Program

Product = MatmulOp | Conv2DNchwFchwOp | Conv2DNgchwGfchwOp
TERNARY = (-1, 0, 1)
BINARY_PRECISION = (1, 2)
"""(weight bits, input bits) of a binary or ternary layer: 1-bit weights are ternary signs, and
2-bit signed input codes hold -1, 0 and +1 (1-bit ones too where the device takes ternary inputs)."""


@dataclass
class Range:
    """The smallest and largest value seen at a product's input, and whether every value was -1, 0
    or +1 (as `Sign` and `Round(Clip(x, -1, 1))` produce)."""

    low: float = np.inf
    high: float = -np.inf
    ternary: bool = True

    def update(self, values: np.ndarray) -> None:
        self.low = min(self.low, float(np.min(values)))
        self.high = max(self.high, float(np.max(values)))
        self.ternary = self.ternary and bool(np.isin(values, TERNARY).all())


class RangeRecorder(Interpreter.Listener):
    """Records the range of the inputs of every quantizable product while the float program runs:
    the first input of a product with constant weights, both of a run-time product."""

    def __init__(self, products: Sequence[Operation]):
        self.ranges = {op: tuple(Range() for _ in range(2 if isinstance(op, BatchMatmulOp) else 1)) for op in products}

    def will_interpret_op(self, op: Operation, args) -> None:
        for seen, values in zip(self.ranges.get(op, ()), args):
            seen.update(np.asarray(values))


def weights_of(op: Product) -> np.ndarray | None:
    owner = op.inputs[1].owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, DenseIntOrFPElementsAttr):
        return dense_array(owner.value)
    return None


def quantizable(module: ModuleOp) -> list[Operation]:
    return [
        op
        for op in module.walk()
        if isinstance(op, BatchMatmulOp) or (isinstance(op, Product) and weights_of(op) is not None)
    ]


def calibrate(module: ModuleOp, samples: Sequence[Sequence[np.ndarray]]) -> dict[Operation, tuple[Range, ...]]:
    """Run the float program on each sample (a list of inputs) and return every product's input ranges."""
    recorder = RangeRecorder(quantizable(module))
    program = Program(module, "ideal", listeners=[recorder])
    for inputs in samples:
        program(list(inputs))
    return recorder.ranges


def activation_scale(seen: Range, bits: int, layer: str = "", ternary: bool = False) -> tuple[float, bool]:
    """The scale of an activation and whether its codes are signed (symmetric: ±1 at one bit, a
    ternary sign, which only a device with `ternary` inputs takes)."""
    if seen.low >= 0:
        return max(seen.high, 1e-12) / (2**bits - 1), False
    if bits < 2 and not ternary:
        raise ValueError(
            f"layer '{layer}': 1-bit inputs must be non-negative (or ternary, on bipolar DACs), but its inputs "
            f"reach {seen.low:.4g}"
        )
    return max(abs(seen.low), abs(seen.high), 1e-12) / symmetric_limit(bits), True


def weight_scales(weights: np.ndarray, axis: int, bits: int) -> np.ndarray:
    """Symmetric per-output-channel scales (`axis` indexes the output channels)."""
    others = tuple(i for i in range(weights.ndim) if i != axis)
    peak = np.max(np.abs(weights), axis=others)
    return np.maximum(peak, 1e-12) / symmetric_limit(bits)


def given_bits(value: SSAValue) -> int | None:
    """The bits of the codes a quantized ONNX model gave `value` (see `mark_scales`), if known."""
    bits = value.owner.attributes.get(BITS_ATTRIBUTE) if isinstance(value.owner, Operation) else None
    return bits.value.data if bits is not None else None


def given_scales(value: SSAValue, axis: int, size: int, bits: int = 8) -> np.ndarray | None:
    """The scales a quantized ONNX model gave `value` (see `mark_scales`), along `axis`, if any and
    if its codes have `bits` bits (8 when the model does not say)."""
    owner = value.owner
    scales = owner.attributes.get(SCALES_ATTRIBUTE) if isinstance(owner, Operation) else None
    if scales is None or (given_bits(value) or 8) != bits:
        return None
    values = dense_array(scales).astype(np.float64)
    if values.size == 1:
        return np.full(size, values[0])
    if owner.attributes["cimxdsl.axis"].value.data != axis or values.size != size:
        return None
    return values


def quantize_product(
    op: Product, seen: Range, weight_bits: int, input_bits: int, own: bool = False, ternary: bool = False
) -> None:
    """Replace `op` by quantize → integer product → dequantize (→ + the original `outs`). With
    8-bit codes, the scales of a quantized ONNX model are kept; others come from the weights and
    the calibration. `own`: the bits are the layer's own, which the product then carries;
    `ternary`: a signed 1-bit input is a ternary sign."""
    weights = weights_of(op)
    assert weights is not None
    grouped = isinstance(op, Conv2DNgchwGfchwOp)
    filters = weights.reshape(-1, *weights.shape[2:]) if grouped else weights  # GFCHW as (G·F)CHW
    channel_axis = 1 if isinstance(op, MatmulOp) else 0
    given = given_scales(op.inputs[1], channel_axis, filters.shape[channel_axis], weight_bits)
    w_scales = weight_scales(filters, channel_axis, weight_bits) if given is None else given
    shape = [1] * filters.ndim
    shape[channel_axis] = -1
    limit = symmetric_limit(weight_bits)
    codes = np.clip(np.rint(filters / w_scales.reshape(shape)), -limit, limit).reshape(weights.shape)
    x_scale, signed = activation_scale(seen, input_bits, op.res[0].name_hint or op.name, ternary)
    given_input = given_scales(op.inputs[0], 0, 1, input_bits)
    if given_input is not None:
        x_scale = float(given_input[0])

    image, (init,) = op.inputs[0], op.outputs
    result_type = op.res[0].type
    assert isinstance(result_type, TensorType) and isinstance(image.type, TensorType)
    new_ops: list[Operation] = [
        quantized := cinm.QuantizeOp(
            image,
            dense_attr(np.array([x_scale]), f32),
            TensorType(i32, image.type.get_shape()),
            input_bits,
            signed,
        ),
        weight_codes := arith.ConstantOp(dense_attr(codes, i32)),
        zeros := tensor.EmptyOp([], TensorType(i32, result_type.get_shape())),
    ]
    integer_type = TensorType(i32, result_type.get_shape())
    if isinstance(op, MatmulOp):
        product = MatmulOp([quantized.result, weight_codes.result], [zeros.tensor])
    else:
        product = type(op)(
            [quantized.result, weight_codes.result],
            [zeros.tensor],
            [integer_type],
            strides=op.strides,
            dilations=op.dilations,
        )
    product.res[0].name_hint = op.res[0].name_hint
    new_ops.append(set_precision(product, (weight_bits, input_bits) if own else None))
    new_ops += dequantized_channels(product.res[0], x_scale * w_scales, result_type)
    result: SSAValue = new_ops[-1].results[0]
    if not is_fresh(init):
        new_ops.append(add := arith.AddfOp(result, init))
        result = add.result
    Rewriter.replace_op(op, new_ops, [result])


def dequantized_channels(codes: SSAValue, scales: np.ndarray, result_type: TensorType) -> list[Operation]:
    """Ops dequantizing `codes` with a scale per channel (axis 1; of a grouped convolution's
    N×G×F×… result, the G·F channels merged for the purpose)."""
    shape = result_type.get_shape()
    if len(shape) < 5:
        return [cinm.DequantizeOp(codes, dense_attr(scales, f32), result_type, axis=1)]
    channels = (shape[0], shape[1] * shape[2], *shape[3:])
    merge = reassociation([[0], [1, 2], *([i] for i in range(3, len(shape)))])
    merged = tensor.CollapseShapeOp.create(
        operands=[codes], result_types=[TensorType(i32, channels)], properties={"reassociation": merge}
    )
    merged_type = TensorType(result_type.element_type, channels)
    dequantized = cinm.DequantizeOp(merged.results[0], dense_attr(scales, f32), merged_type, axis=1)
    split = tensor.ExpandShapeOp(dequantized.result, [], merge, shape, result_type)
    return [merged, dequantized, split]


def quantize_runtime_product(
    op: BatchMatmulOp, seen: tuple[Range, Range], weight_bits: int, input_bits: int, own: bool = False
) -> None:
    """Replace `op` by the integer product of its quantized operands, dequantized (→ + its `outs`);
    `own` as for `quantize_product`."""
    name = op.result.name_hint or op.name
    peak = max(abs(seen[1].low), abs(seen[1].high), 1e-12)
    (left_scale, left_signed), right_scale = (
        activation_scale(seen[0], input_bits, name),
        peak / symmetric_limit(weight_bits),
    )
    result_type = op.result.type
    assert isinstance(result_type, TensorType)
    codes = [
        cinm.QuantizeOp(
            value, dense_attr(np.array([scale]), f32), TensorType(i32, value.type.get_shape()), bits, signed
        )
        for value, scale, bits, signed in (
            (op.lhs, left_scale, input_bits, left_signed),
            (op.rhs, right_scale, weight_bits, True),
        )
    ]
    zeros = tensor.EmptyOp([], TensorType(i32, result_type.get_shape()))
    product = BatchMatmulOp(codes[0].result, codes[1].result, zeros.tensor)
    set_precision(product, (weight_bits, input_bits) if own else None)
    product.result.name_hint = op.result.name_hint
    dequantized = cinm.DequantizeOp(product.result, dense_attr(np.array([left_scale * right_scale]), f32), result_type)
    new_ops: list[Operation] = [*codes, zeros, product, dequantized]
    result: SSAValue = dequantized.result
    if not is_fresh(op.init):
        new_ops.append(add := arith.AddfOp(result, op.init))
        result = add.result
    Rewriter.replace_op(op, new_ops, [result])


def is_fresh(value: SSAValue) -> bool:
    return isinstance(value.owner, tensor.EmptyOp)


def implied_precision(op: Operation, weight_bits: int, input_bits: int) -> tuple[int, int] | None:
    """The bits a quantized ONNX model's codes imply for `op`'s weights and input (`given_bits`:
    4-bit types, or constant codes that use fewer bits than their type), when fewer than the
    defaults; None otherwise."""
    implied = tuple(
        min(given_bits(value) or default, default)
        for value, default in ((op.operands[1], weight_bits), (op.operands[0], input_bits))
    )
    return implied if implied != (weight_bits, input_bits) else None  # type: ignore[return-value]


def binary_precision(op: Operation, seen: Range, ternary: bool = False) -> tuple[int, int] | None:
    """`BINARY_PRECISION` (with 1-bit inputs where the device takes `ternary` ones) for a product
    of a binary or ternary network: every output channel's weights take one magnitude a (-a, 0,
    +a: `Sign`, `Where` or `Round` of float weights, scaled), and every input the calibration saw
    is -1, 0 or +1. Such a layer computes exactly on 1-bit cells; None for another."""
    if not isinstance(op, Product) or not seen.ternary:
        return None
    weights = weights_of(op)
    assert weights is not None
    grouped = isinstance(op, Conv2DNgchwGfchwOp)
    filters = np.abs(weights.reshape(-1, *weights.shape[2:]) if grouped else weights)
    axis = 1 if isinstance(op, MatmulOp) else 0
    peak = np.max(filters, axis=tuple(i for i in range(filters.ndim) if i != axis), keepdims=True)
    if not ((filters == 0) | (filters == peak)).all():
        return None
    return (BINARY_PRECISION[0], 1) if ternary else BINARY_PRECISION


def first_non_binary_weight(module: ModuleOp) -> tuple[str, int] | None:
    """(layer, weight) of the first integer weight code of a quantized `module` that is neither -1
    nor +1 (what a binary mapping cannot hold), or None."""
    for op in quantizable(module):
        codes = weights_of(op) if isinstance(op, Product) else None
        if codes is None or codes.dtype.kind not in "iu":
            continue
        bad = codes[(codes != -1) & (codes != 1)]
        if bad.size:
            return op.results[0].name_hint or op.name, int(bad.flat[0])
    return None


def layer_names(module: ModuleOp) -> list[str]:
    """The names of the products `quantize` quantizes (their results' names), in program order."""
    return [op.results[0].name_hint or op.name for op in quantizable(module)]


def quantize(
    module: ModuleOp,
    samples: Sequence[Sequence[np.ndarray]],
    weight_bits: int = 8,
    input_bits: int = 8,
    calibrated: ModuleOp | None = None,
    precision: Mapping[str, tuple[int, int]] | None = None,
    ternary_inputs: bool = False,
) -> ModuleOp:
    """Quantize every product with constant weights in place, calibrated on `samples`: inputs of
    `module`, or of `calibrated`, the same float program for another batch, whose products' ranges
    then stand for those of `module`'s products in the same order. `precision`: (weight bits,
    input bits) by layer name (`layer_names`), for the layers that do not take `weight_bits` and
    `input_bits`; their products carry their bits (the attributes `weight_bits`, `input_bits`),
    the others run at the device's. `ternary_inputs`: the device takes a signed 1-bit input as a
    ternary sign in one pass (bipolar DACs)."""
    precision = precision or {}
    recorded = calibrate(module if calibrated is None else calibrated, samples)
    products = quantizable(module)
    if [op.name for op in recorded] != [op.name for op in products]:
        raise ValueError("the calibrated program's products are not those of the program to quantize")
    ranges = dict(zip(products, recorded.values(), strict=True))
    for op, seen in ranges.items():
        if not np.isfinite(seen[0].low):
            raise ValueError(f"calibration never reached the product '{op.results[0].name_hint or op.name}'")
        own = (
            precision.get(op.results[0].name_hint or op.name)
            or implied_precision(op, weight_bits, input_bits)
            or binary_precision(op, seen[0], ternary_inputs)
        )
        bits = own or (weight_bits, input_bits)
        if isinstance(op, BatchMatmulOp):
            quantize_runtime_product(op, seen, *bits, own=own is not None)  # type: ignore[arg-type]
        else:
            quantize_product(op, seen[0], *bits, own=own is not None, ternary=ternary_inputs)
    module.verify()
    return module
