"""Integer-only import for the spatial/PIM target: a CNN as int8 values in i32 tensors with
power-of-two scales, so every rescaling is a shift the PIM cores' vector units can do.

Each tensor `t` is held as codes `q` with `t ≈ q · 2^e(t)`; `e(t)` comes from the tensor's range
on calibration inputs (`|t| ≤ 127 · 2^e`). Weights are quantized per tensor the same way. A
convolution or dense layer accumulates `q_x · q_W` at exponent `e(x) + e(W)`, adds its bias at that
exponent (plus half a step, so the shift rounds), shifts right to its output's exponent and clamps
to int8. Residual additions shift both operands to the output's exponent. ReLU, max pooling,
global average pooling (floor division) and flattening keep the exponent. `Sign(z)` and the ternary
`Round(Clip(z, -1, 1))` of binary and ternary networks give codes in {-1, 0, 1} at exponent 0, each a
difference of two thresholds on the integer codes `z` comes from (through a BatchNormalization, and
from the product's unclamped accumulator when the product feeds only them), so they decide as the
float network does. A product whose weights are all in {-1, 0, 1} keeps them as codes and carries
1 weight bit (and 2 input bits when its input is such a sign). A trailing Softmax is left
to the host, after the outputs are dequantized (`IntegerProgram.dequantize`).

A layer (a Conv, Gemm or MatMul, by node name) may have its own precision (`precision`: weight
bits, input bits, 1 to 8): its weights are quantized to symmetric `w`-bit codes (`±(2^(w-1) - 1)`,
a ternary sign for one bit), and its int8 input is shifted right (rounding) and clamped to `a`-bit
codes, unsigned when the calibration never saw it negative, where the tensor is computed (before
any reshape; a graph input on the host; its other readers see the narrowed codes too); its product carries the bits
(`weight_bits`, `input_bits`), which the PIM lowering keeps on its crossbars' weights.

Supported ops: those with a handler in `integer_importer` (the `IntegerImporter` methods decorated
with it), and a final Softmax.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import onnx
from xdsl.dialects import arith, func, tensor, tosa
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType, i32, i64
from xdsl.dialects.linalg.ops import FillOp, PoolingNchwMaxOp
from xdsl.interpreter import Interpreter
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue

from cimxdsl.dialects.utils import dense_attr, reassociation, set_argument_bounds, set_precision, symmetric_limit
from cimxdsl.frontend.attributes import NodeAttributes, OnnxImportError, defaults, node_error
from cimxdsl.frontend.builder import IRBuilder, shape_of
from cimxdsl.frontend.loading import input_shape, load_model
from cimxdsl.frontend.onnx_importer import OnnxImporter, node_layer_name, sanitize
from cimxdsl.frontend.ops.nn import conv_pads, pool_geometry
from cimxdsl.frontend.ops.shape import output_shape
from cimxdsl.frontend.pooling import pool_window
from cimxdsl.frontend.registry import integer_importer
from cimxdsl.interpreters import Program

INT8 = (-128, 127)
LOWEST = -(2**31)
RESHAPES = ("Reshape", "Flatten", "Identity", "Dropout")
STEPS = {"Sign": (0.0, 0.0), "Round": (-0.5, 0.5)}
"""The thresholds `(low, high)` of `[z > high] - [z < low]`: Sign(z), and Round(Clip(z, -1, 1))
(half to even, so ±0.5 give 0)."""
ELEMENTWISE = ("Sub", "Add", "Sum", "Mul", "Sign", "Relu", "Clip")
"""The ops applied to an image rather than its flattening when they read one (`on_image`)."""
PRODUCTS = ("Conv", "Gemm", "MatMul")
"""The ops whose products crossbars compute: the layers a precision names."""
MULTIPLIER_BITS = 14
"""Fraction bits of the integer multipliers of an average pooling's `1 / count` and of LRN's factor."""


def exponent(peak: float, limit: int = INT8[1]) -> int:
    """The smallest `e` with `peak ≤ limit · 2^e` (127: int8 codes)."""
    return int(np.ceil(np.log2(max(peak, 1e-30) / limit)))


def ternary(weights: np.ndarray) -> bool:
    """Whether every weight is -1, 0 or 1 (a look at the first few decides for most weights)."""
    flat = np.ravel(weights)
    return all(np.all(np.isin(part, (-1.0, 0.0, 1.0))) for part in (flat[:64], flat))


class PeakRecorder(Interpreter.Listener):
    """The largest magnitude every named value reaches while the float program runs."""

    def __init__(self, values: dict[str, SSAValue]):
        self.names: dict[SSAValue, list[str]] = {}
        for name, value in values.items():  # one value may have several names (Identity, Dropout)
            self.names.setdefault(value, []).append(name)
        self.peaks: dict[str, float] = {}
        self.lows: dict[str, float] = {}
        """The smallest value of each (a negative one says the value is signed)."""

    def did_interpret_op(self, op: Operation, results) -> None:
        for value, result in zip(op.results, results, strict=False):
            for name in self.names.get(value, ()):
                self.see(name, np.asarray(result))

    def see(self, name: str, values: np.ndarray) -> None:
        low, high = float(np.min(values)), float(np.max(values))  # (|values| peaks at -low or high)
        self.peaks[name] = max(self.peaks.get(name, 0.0), max(-low, high))
        self.lows[name] = min(self.lows.get(name, 0.0), low)


@dataclass
class IntegerProgram:
    """An integer program and how to convert its inputs and outputs."""

    module: ModuleOp
    input_exponents: list[int]
    output_exponents: list[int]
    softmax_outputs: list[bool] = field(default_factory=list)
    input_ranges: list[tuple[int, int]] = field(default_factory=list)
    """The codes of each input (int8, or a narrower layer's input bits when it feeds one)."""

    def quantize(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        ranges = self.input_ranges or [INT8] * len(self.input_exponents)
        return [
            np.clip(np.rint(np.asarray(x, np.float64) / 2.0**e), *codes).astype(np.int32)
            for x, e, codes in zip(inputs, self.input_exponents, ranges, strict=True)
        ]

    def dequantize(self, outputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        values = []
        for q, e, softmax in zip(outputs, self.output_exponents, self.softmax_outputs, strict=True):
            y = np.asarray(q, np.float64) * 2.0**e
            if softmax:  # over all axes but the batch (`IntegerImporter.final_softmax`)
                axes = tuple(range(1, y.ndim))
                y = np.exp(y - y.max(axis=axes, keepdims=True))
                y /= y.sum(axis=axes, keepdims=True)
            values.append(y.astype(np.float32))
        return values


class IntegerImporter:
    """Emits the integer program node by node, tracking every tensor's exponent."""

    def __init__(
        self,
        model: onnx.ModelProto,
        peaks: dict[str, float],
        constants: dict[str, np.ndarray],
        lows: dict[str, float] | None = None,
        precision: Mapping[str, tuple[int, int]] | None = None,
    ):
        self.model = model
        self.peaks = peaks
        self.lows = lows or {}
        self.precision = precision or {}
        """(weight bits, input bits) of the layers with their own precision, by layer name."""
        self.input_ranges: dict[str, tuple[int, int]] = {}
        """The codes of the graph inputs quantized on the host to a narrower layer's input bits."""
        self.constants = constants
        self.values: dict[str, SSAValue] = {}
        self.exponents: dict[str, int] = {}
        typed = [*model.graph.value_info, *model.graph.output]
        self.shapes = {info.name: info.type.tensor_type.shape for info in typed}
        self.producer = {out: node for node in model.graph.node for out in node.output}
        self.signs: set[str] = set()
        """The tensors whose codes are all in {-1, 0, 1} (`steps`)."""
        self.absorbed, self.wide = self.fused_steps()
        self.flattened: dict[str, str] = {}
        """The images (by name) that tensors flattened to `[N, C·H·W]` come from."""
        self.shuffles: dict[str, tuple[str, np.ndarray]] = {}
        """A channel split `[N, G, C/G, H, W]` (or its transpose) awaiting the reshape that merges
        it back: the source image and the source channel of each split channel."""

    def run(self) -> IntegerProgram:
        graph = self.model.graph
        inputs = [i for i in graph.input if i.name not in self.constants]
        shapes = [input_shape(i) for i in inputs]
        block = Block(arg_types=[TensorType(i32, s) for s in shapes])
        self.ir = IRBuilder(block, i32)
        narrowed = self.narrowed_inputs()
        for arg, info in zip(block.args, inputs, strict=True):
            arg.name_hint = sanitize(info.name)
            self.values[info.name] = arg
            self.exponents[info.name] = exponent(self.peaks.get(info.name, 1.0))
            if info.name in narrowed:
                _, self.exponents[info.name] = self.narrow(
                    info.name, arg, self.exponents[info.name], narrowed[info.name]
                )
        softmax: dict[str, str] = {}
        for node in graph.node:
            if all(name in self.constants for name in node.output if name):
                continue  # folded by the float import
            if node.output[0] in self.absorbed:
                continue  # computed by the Sign or Round that reads it (`steps`)
            if node.op_type == "Softmax":
                self.final_softmax(node)
                softmax[node.output[0]] = node.input[0]
                continue
            if node.input and node.input[0] in softmax:
                node = self.before_softmax(node, softmax)
            self.ir.layer_name = node_layer_name(node)
            handler = integer_importer.get(node.op_type)
            if handler is None:
                raise OnnxImportError(
                    f"the integer (PIM) import does not support '{node.op_type}' (node '{node.name}')"
                )
            image = self.on_image(node)
            lowered = handler(self, image or node, NodeAttributes(node))
            if lowered is None:
                continue  # a partial channel shuffle (`self.shuffles`)
            value, e = lowered
            if image is not None:
                self.values[image.output[0]], self.exponents[image.output[0]] = value, e
                self.flattened[node.output[0]] = image.output[0]
                if image.output[0] in self.signs:
                    self.signs.add(node.output[0])
                value = self.flatten(value, 1)
            if node.output[0] in narrowed and node.op_type not in RESHAPES:
                value, e = self.narrow(node.output[0], value, e, narrowed[node.output[0]])
            value.name_hint = sanitize(node.output[0])
            self.values[node.output[0]], self.exponents[node.output[0]] = value, e
        outputs = [softmax.get(o.name, o.name) for o in graph.output]
        for name in outputs:
            if name in self.shuffles:
                raise OnnxImportError(f"the graph output '{name}' is a partial channel shuffle")
        results = [self.values[name] for name in outputs]
        self.ir.builder.insert(func.ReturnOp(*results))
        function = func.FuncOp("main", ([a.type for a in block.args], [r.type for r in results]), Region(block))
        ranges = [self.input_ranges.get(i.name, INT8) for i in inputs]
        set_argument_bounds(function, ranges)
        return IntegerProgram(
            ModuleOp([function]),
            [self.exponents[i.name] for i in inputs],
            [self.exponents[name] for name in outputs],
            [o.name in softmax for o in graph.output],
            ranges,
        )

    static_shape = OnnxImporter.static_shape

    def on_image(self, node: onnx.NodeProto) -> onnx.NodeProto | None:
        """An element-wise op on a flattened image (its other operands scalar constants), applied to
        the image instead, the flattening after it (the PIM lowering flattens only into a product)."""
        if node.op_type not in ELEMENTWISE or not node.input or node.input[0] not in self.flattened:
            return None
        if any(n in self.constants and self.constants[n].size != 1 for n in node.input[1:] if n):
            return None
        if any(n not in self.constants for n in node.input[1:] if n):
            return None
        moved = onnx.NodeProto()
        moved.CopyFrom(node)
        moved.input[0] = self.flattened[node.input[0]]
        moved.output[0] = f"{node.output[0]}.image"
        for table in (self.peaks, self.lows):
            if node.output[0] in table:
                table[moved.output[0]] = table[node.output[0]]
        return moved

    def final_softmax(self, node: onnx.NodeProto) -> None:
        """Check that a Softmax (left to the host) is over all axes but the batch."""
        shape = shape_of(self.input(node)[0])
        if int(np.prod(shape[1:])) != shape[NodeAttributes(node).axis("axis", len(shape))]:
            raise node_error(node, "a final Softmax must be over the classes (all axes but the batch)")

    def before_softmax(self, node: onnx.NodeProto, softmax: dict[str, str]) -> onnx.NodeProto:
        """A reshape after the final Softmax, applied to the Softmax's input instead (the host applies
        the Softmax on the last axis after dequantizing)."""
        if node.op_type not in RESHAPES:
            raise node_error(node, "a Softmax is supported only at the end of the network (then reshapes only)")
        moved = onnx.NodeProto()
        moved.CopyFrom(node)
        moved.input[0] = softmax[node.input[0]]
        moved.output[0] = f"{node.output[0]}.before_softmax"
        self.shapes[moved.output[0]] = self.shapes[node.output[0]]
        softmax[node.output[0]] = moved.output[0]
        return moved

    # -- helpers -----------------------------------------------------------------------------------
    def input(self, node, index: int = 0) -> tuple[SSAValue, int]:
        name = node.input[index]
        if name in self.shuffles:
            raise node_error(node, f"input '{name}' is a partial channel shuffle (Reshape, Transpose, Reshape)")
        if name not in self.values:
            raise node_error(node, f"input '{name}' must come from the network")
        return self.values[name], self.exponents[name]

    def weights(self, node, index: int, what: str) -> np.ndarray:
        name = node.input[index] if index < len(node.input) else ""
        if name not in self.constants:
            raise node_error(node, f"{what} must be a constant")
        return self.constants[name].astype(np.float64)

    def splat(self, value: int, shape) -> SSAValue:
        return self.ir.constant(np.full(tuple(shape), value, np.int32), i32)

    def shift(self, value: SSAValue, bits: int) -> SSAValue:
        """`value · 2^-bits`: an arithmetic shift right (left for negative `bits`)."""
        if bits == 0:
            return value
        kind = arith.ShRSIOp if bits > 0 else arith.ShLIOp
        return self.ir.insert(kind(value, self.splat(abs(bits), shape_of(value))))

    def clamp(self, value: SSAValue) -> SSAValue:
        shape = shape_of(value)
        upper = self.ir.insert(arith.MinSIOp(value, self.splat(INT8[1], shape)))
        return self.ir.insert(arith.MaxSIOp(upper, self.splat(INT8[0], shape)))

    def requantize(self, acc: SSAValue, e_acc: int, name: str, bias: np.ndarray | None) -> tuple[SSAValue, int]:
        """Add the bias (and the rounding half step) at `e_acc`, shift to the output's exponent, clamp."""
        e_out = e_acc if name in self.wide else max(exponent(self.peaks[name]), e_acc)
        shift = e_out - e_acc
        shape = shape_of(acc)
        if bias is not None and bias.ndim == 1:
            bias = bias.reshape((1, -1) + (1,) * (len(shape) - 2))  # per channel
        offset = np.zeros(shape) if bias is None else np.broadcast_to(np.rint(bias / 2.0**e_acc), shape)
        if shift > 0:
            offset = offset + 2 ** (shift - 1)
        if offset.any():
            full = np.ascontiguousarray(offset, np.int64)
            if np.all(full == full.flat[0]):
                full = np.full(shape, full.flat[0], np.int64)
            acc = self.ir.insert(arith.AddiOp(acc, self.ir.constant(full, i32)))
        if name in self.wide:
            return acc, e_out  # read only by thresholds (`steps`): the exact accumulator
        return self.clamp(self.shift(acc, shift)), e_out

    @staticmethod
    def quantize_weights(weights: np.ndarray, bits: int = 8) -> tuple[np.ndarray, int]:
        """Symmetric `bits`-bit codes (`±symmetric_limit(bits)`) with a power-of-two scale."""
        limit = symmetric_limit(bits)
        e = exponent(float(max(-np.min(weights), np.max(weights))), limit)
        codes = weights / 2.0**e
        np.clip(np.rint(codes, out=codes), -limit, limit, out=codes)
        return codes.astype(np.int64), e

    def layer_bits(self, node=None, weights: np.ndarray | None = None) -> tuple[int, int] | None:
        """The current layer's own (weight bits, input bits), if it has them; else, for weights all
        in {-1, 0, 1}, 1 weight bit (and 2 input bits when the input is a sign)."""
        bits = self.precision.get(self.ir.layer_name or "")
        if bits is None and weights is not None and ternary(weights):
            bits = (1, 2 if self.source(node.input[0]) in self.signs else 8)
        return bits

    def source(self, name: str) -> str:
        """The tensor `name` is a reshape of (itself if none)."""
        while name in self.producer and self.producer[name].op_type in RESHAPES:
            name = self.producer[name].input[0]
        return name

    def narrowed_inputs(self) -> dict[str, int]:
        """The tensors to narrow to fewer than 8 bits, and to how many: each layer's input with its
        own input bits, followed back through reshapes (a flattened image takes no element-wise op)
        to the tensor a node computes or a graph input (the smallest bits where several layers read it)."""
        narrowed: dict[str, int] = {}
        for node in self.model.graph.node:
            bits = self.precision.get(node_layer_name(node)) if node.op_type in PRODUCTS else None
            if bits is None or bits[1] >= 8:
                continue
            name = self.source(node.input[0])
            narrowed[name] = min(bits[1], narrowed.get(name, 8))
        return narrowed

    def narrow(self, name: str, value: SSAValue, e: int, bits: int) -> tuple[SSAValue, int]:
        """Int8 codes `value` (exponent `e`) of tensor `name` as `bits`-bit codes: shifted right
        (rounding) and clamped, unsigned if never negative on the calibration inputs; a graph input
        is quantized so on the host (`IntegerProgram.input_ranges`)."""
        if name in self.signs and bits >= 2:
            return value, e  # codes in {-1, 0, 1} already
        unsigned = self.lows.get(name, -1.0) >= 0
        if not unsigned and bits < 2:
            raise OnnxImportError(f"tensor '{name}': 1-bit inputs of a layer must be non-negative")
        shift = max(0, (7 if unsigned else 8) - bits)
        low, high = (0, 2**bits - 1) if unsigned else (-symmetric_limit(bits), symmetric_limit(bits))
        if isinstance(value, BlockArgument):
            self.input_ranges[name] = (low, high)
            return value, e + shift
        shape = shape_of(value)
        if shift:
            value = self.shift(self.ir.insert(arith.AddiOp(value, self.splat(2 ** (shift - 1), shape))), shift)
        upper = self.ir.insert(arith.MinSIOp(value, self.splat(high, shape)))
        return self.ir.insert(arith.MaxSIOp(upper, self.splat(low, shape))), e + shift

    def layer_product(self, value: SSAValue, bits: tuple[int, int] | None) -> SSAValue:
        """`value`, the layer's product, marked with its own precision `bits` (if any)."""
        assert isinstance(value.owner, Operation)
        set_precision(value.owner, bits)
        return value

    # -- handlers: (importer, node, attributes) -> (value, exponent), by op type in `integer_importer`
    @integer_importer("Conv")
    def import_conv(self, node, attrs):
        x, e_x = self.input(node)
        weights = self.weights(node, 1, "the weights")
        bits = self.layer_bits(node, weights)
        codes, e_w = self.quantize_weights(weights, (bits or (8, 8))[0])
        codes = self.ungrouped(node, codes, attrs["group"], shape_of(x)[1])
        kernel = weights.shape[2:]
        strides, dilations = attrs["strides"], attrs["dilations"]
        pads = conv_pads(node, attrs, shape_of(x)[2:], kernel, strides, dilations)
        x = self.ir.pad(x, [0, 0, pads[0], pads[1]], [0, 0, pads[2], pads[3]], 0)
        acc = self.layer_product(self.ir.conv(x, self.ir.constant(codes, i32), strides, dilations), bits)
        bias = self.weights(node, 2, "the bias") if len(node.input) > 2 and node.input[2] else None
        return self.requantize(acc, e_x + e_w, node.output[0], bias)

    @staticmethod
    def ungrouped(node, codes: np.ndarray, groups: int, channels: int) -> np.ndarray:
        """The `[F, C, KH, KW]` weights of a grouped convolution: zero outside the groups' blocks."""
        filters, per_group_channels = codes.shape[:2]
        if channels != per_group_channels * groups or filters % groups:
            raise node_error(node, f"{channels} channels and {filters} filters do not fit group {groups}")
        if groups == 1:
            return codes
        dense = np.zeros((filters, channels, *codes.shape[2:]), codes.dtype)
        per_group_filters = filters // groups
        for g in range(groups):
            f, c = g * per_group_filters, g * per_group_channels
            dense[f : f + per_group_filters, c : c + per_group_channels] = codes[f : f + per_group_filters]
        return dense

    @integer_importer("Gemm")
    def import_gemm(self, node, attrs):
        x, e_x = self.input(node)
        if attrs["transA"]:
            raise node_error(node, "transA is not supported by the integer import")
        weights = self.weights(node, 1, "the weights") * attrs["alpha"]
        weights = weights.T if attrs["transB"] else weights
        bits = self.layer_bits(node, weights)
        codes, e_w = self.quantize_weights(weights, (bits or (8, 8))[0])
        acc = self.layer_product(self.ir.matmul(x, self.ir.constant(codes, i32)), bits)
        bias = None
        if len(node.input) > 2 and node.input[2]:
            bias = np.broadcast_to(self.weights(node, 2, "the bias") * attrs["beta"], shape_of(acc))[0]
        return self.requantize(acc, e_x + e_w, node.output[0], bias)

    @integer_importer("MatMul")
    def import_matmul(self, node, attrs):
        return self.import_gemm(node, defaults("Gemm"))

    @integer_importer("Relu")
    def import_relu(self, node, attrs):
        x, e = self.input(node)
        return self.ir.insert(arith.MaxSIOp(x, self.splat(0, shape_of(x)))), e

    @integer_importer("Clip")
    def import_clip(self, node, attrs):
        """A clamp to constant bounds (ReLU6), rounded to the input's steps."""
        x, e = self.input(node)
        low, high = (
            self.constants.get(node.input[i]) if i < len(node.input) and node.input[i] else attrs[key]
            for i, key in ((1, "min"), (2, "max"))
        )
        if low is not None:
            x = self.ir.insert(arith.MaxSIOp(x, self.splat(int(np.clip(np.ceil(low / 2.0**e), *INT8)), shape_of(x))))
        if high is not None:
            x = self.ir.insert(arith.MinSIOp(x, self.splat(int(np.clip(np.floor(high / 2.0**e), *INT8)), shape_of(x))))
        return x, e

    def aligned(self, node, names: Sequence[str]) -> tuple[list[SSAValue], int]:
        """The network inputs `names` of `node` shifted to one exponent: the output's, or the largest
        input exponent (so that only right shifts occur)."""
        operands = [self.input(node, list(node.input).index(n)) for n in names]
        e_out = max([exponent(self.peaks[node.output[0]]), *(e for _, e in operands)])
        return [self.shift(v, e_out - e) for v, e in operands], e_out

    @integer_importer("Sum", "Add", "Sub")
    def import_sum(self, node, attrs):
        """The sum of the inputs (Sub: the first less the second)."""
        signs = [-1 if node.op_type == "Sub" and i == 1 else 1 for i in range(len(node.input))]
        network = [(n, s) for n, s in zip(node.input, signs, strict=True) if n not in self.constants]
        values, e_out = self.aligned(node, [n for n, _ in network])
        total = values[0]
        if network[0][1] < 0:
            total = self.ir.insert(arith.SubiOp(self.splat(0, shape_of(total)), total))
        for value, (_, sign) in zip(values[1:], network[1:], strict=True):
            total = self.ir.insert((arith.AddiOp if sign > 0 else arith.SubiOp)(total, value))
        constants = [(n, s) for n, s in zip(node.input, signs, strict=True) if n in self.constants]
        constant = sum((s * self.constants[n].astype(np.float64) for n, s in constants), 0.0)
        if np.any(constant):
            shape = shape_of(total)
            offset = np.broadcast_to(np.rint(np.asarray(constant) / 2.0**e_out), shape).astype(np.int64)
            total = self.ir.insert(arith.AddiOp(total, self.ir.constant(offset, i32)))
        return self.clamp(total), e_out

    @integer_importer("Mul")
    def import_mul(self, node, attrs):
        """A product with a constant (broadcast over the image): codes times codes, requantized."""
        network = [i for i, n in enumerate(node.input) if n not in self.constants]
        if len(network) != 1:
            raise node_error(node, "the integer (PIM) import multiplies by constants only")
        x, e_x = self.input(node, network[0])
        factor = self.constants[node.input[1 - network[0]]].astype(np.float64)
        return self.affine(node, x, e_x, factor, None)

    @integer_importer("BatchNormalization")
    def import_batchnormalization(self, node, attrs):
        x, e_x = self.input(node)
        gamma, beta, mean, var = (self.weights(node, i, "the statistics") for i in range(1, 5))
        scale = gamma / np.sqrt(var + attrs["epsilon"])
        shape = (1, -1) + (1,) * (len(shape_of(x)) - 2)
        return self.affine(node, x, e_x, scale.reshape(shape), (beta - mean * scale).reshape(shape))

    def affine(self, node, x: SSAValue, e_x: int, factor: np.ndarray, shift: np.ndarray | None):
        """`x · factor + shift` with constant (broadcast) `factor` and `shift`."""
        shape = shape_of(x)
        codes, e_f = self.quantize_weights(np.broadcast_to(factor, shape))
        acc = self.ir.insert(arith.MuliOp(x, self.ir.constant(codes, i32)))
        bias = None if shift is None else np.broadcast_to(shift, shape)
        return self.requantize(acc, e_x + e_f, node.output[0], bias)

    def fused_steps(self) -> tuple[set[str], set[str]]:
        """The tensors a Sign or Round computes from their sources itself (a BatchNormalization or
        Clip read by it only), and the products kept as unclamped accumulators (read only by
        those or by a Sign or Round)."""
        graph = self.model.graph
        readers: dict[str, list[onnx.NodeProto]] = {}
        for node in graph.node:
            for name in node.input:
                readers.setdefault(name, []).append(node)
        kept = {o.name for o in graph.output}
        absorbed: set[str] = set()
        for node in graph.node:
            if node.op_type not in STEPS:
                continue
            for name in self.step_chain(node):
                if name not in kept and len(readers.get(name, ())) == 1:
                    absorbed.add(name)
        wide = set()
        for node in graph.node:
            name = node.output[0] if node.output else ""
            if node.op_type in PRODUCTS and name not in kept and readers.get(name):
                if all(r.op_type in STEPS or r.output[0] in absorbed for r in readers[name]):
                    wide.add(name)
        return absorbed, wide

    def step_chain(self, node) -> list[str]:
        """The tensors between a Sign or Round and the codes it thresholds: the Round's Clip, then a
        BatchNormalization (if any)."""
        chain = []
        name, producer = node.input[0], self.producer
        if node.op_type == "Round":
            clip = producer.get(name)
            if clip is None or clip.op_type != "Clip":
                raise node_error(node, "the integer (PIM) import rounds only Clip(x, -1, 1) (a ternary activation)")
            chain.append(name)
            name = clip.input[0]
        if name in producer and producer[name].op_type == "BatchNormalization":
            chain.append(name)
        return chain

    @integer_importer("Sign", "Round")
    def import_steps(self, node, attrs):
        """`[z > high] - [z < low]` (`STEPS`) in {-1, 0, 1}: thresholds on the integer codes `q` of
        `z = scale · q · 2^e + shift` (a BatchNormalization's input, else `z` itself)."""
        producer = self.producer
        chain = self.step_chain(node)
        if node.op_type == "Round":
            clip = producer[chain[0]]
            given = [clip.input[i] if i < len(clip.input) else "" for i in (1, 2)]
            bounds = [float(self.constants[n]) if n in self.constants else None for n in given]
            if bounds != [-1.0, 1.0]:
                raise node_error(node, "the integer (PIM) import rounds only Clip(x, -1, 1) (a ternary activation)")
        z = node.input[0] if node.op_type == "Sign" else producer[node.input[0]].input[0]
        scale, shift = np.ones(1), np.zeros(1)
        if chain and producer[chain[-1]].op_type == "BatchNormalization":
            norm = producer[chain[-1]]
            gamma, beta, mean, var = (self.weights(norm, i, "the statistics") for i in range(1, 5))
            scale = gamma / np.sqrt(var + NodeAttributes(norm)["epsilon"])
            shift = beta - mean * scale
            z = norm.input[0]
        if z not in self.values:
            raise node_error(node, f"input '{z}' of its batch norm must come from the network")
        q, e = self.values[z], self.exponents[z]
        shape = shape_of(q)
        channels = (1, -1) + (1,) * (len(shape) - 2)
        scale, shift = scale.reshape(channels) * 2.0**e, shift.reshape(channels)
        low, high = STEPS[node.op_type]
        above = self.above(q, scale, shift, high)
        below = self.above(q, -scale, -shift, -low)
        self.signs.add(node.output[0])
        return self.ir.insert(arith.SubiOp(above, below)), 0

    def above(self, q: SSAValue, scale: np.ndarray, shift: np.ndarray, bound: float) -> SSAValue:
        """`[scale · q + shift > bound]` (1 or 0) for integer `q`: `clamp(sign(scale) · q - c, 0, 1)`
        with `c` the last code at or under the threshold (its negation over it, for a negative scale)."""
        shape = shape_of(q)
        direction = np.sign(scale)
        with np.errstate(divide="ignore", invalid="ignore"):
            threshold = np.clip(np.nan_to_num((bound - shift) / scale), -(2.0**24), 2.0**24)
        offset = np.where(direction > 0, np.floor(threshold), -np.ceil(threshold))
        offset = np.where(direction == 0, -(shift > bound).astype(np.float64), offset)
        directions = np.broadcast_to(direction, shape).astype(np.int64)
        if not np.all(directions == 1):
            q = self.ir.insert(arith.MuliOp(q, self.ir.constant(np.ascontiguousarray(directions), i32)))
        offsets = np.ascontiguousarray(np.broadcast_to(offset, shape).astype(np.int64))
        value = self.ir.insert(arith.SubiOp(q, self.ir.constant(offsets, i32)))
        upper = self.ir.insert(arith.MinSIOp(value, self.splat(1, shape)))
        return self.ir.insert(arith.MaxSIOp(upper, self.splat(0, shape)))

    @integer_importer("Concat")
    def import_concat(self, node, attrs):
        x = self.values.get(node.input[0])
        rank = len(shape_of(x)) if x is not None else 4
        if attrs.axis("axis", rank) != 1:
            raise node_error(node, "the integer (PIM) import concatenates along the channels (axis 1) only")
        values, e_out = self.aligned(node, list(node.input))
        return self.ir.concat(values, 1), e_out

    @integer_importer("AveragePool")
    def import_averagepool(self, node, attrs):
        """A sum over each window (a depthwise convolution with weights 1), times `2^s / count`,
        rounded and shifted to the output's exponent."""
        x, e_x = self.input(node)
        kernel, strides, pads = pool_geometry(node, attrs, x)
        c = shape_of(x)[1]
        window = pool_window(node, attrs, shape_of(x))
        x = self.ir.pad(x, [0, 0, pads[0], pads[2]], [0, 0, pads[1], pads[3]], 0)
        ones = np.zeros((c, c, *kernel), np.int64)
        ones[np.arange(c), np.arange(c)] = 1
        total = self.ir.conv(x, self.ir.constant(ones, i32), strides, [1, 1])
        counts = window.counts(bool(attrs["count_include_pad"])).reshape(1, 1, *window.out)
        multiplier = np.rint(2.0**MULTIPLIER_BITS / counts).astype(np.int64)
        full = np.broadcast_to(multiplier, shape_of(total))
        acc = self.ir.insert(arith.MuliOp(total, self.ir.constant(np.ascontiguousarray(full), i32)))
        return self.requantize(acc, e_x - MULTIPLIER_BITS, node.output[0], None)

    @integer_importer("LRN")
    def import_lrn(self, node, attrs):
        """Approximated by one factor per layer, the calibrated ratio of output to input peaks, as a
        fixed-point multiplier (the ISA has no division or power for the per-element norm)."""
        x, e_x = self.input(node)
        ratio = self.peaks[node.output[0]] / max(self.peaks[node.input[0]], 1e-30)
        factor = np.full(shape_of(x), int(np.rint(ratio * 2.0**MULTIPLIER_BITS)), np.int64)
        acc = self.ir.insert(arith.MuliOp(x, self.ir.constant(factor, i32)))
        return self.requantize(acc, e_x - MULTIPLIER_BITS, node.output[0], None)

    @integer_importer("Reshape")
    def import_reshape(self, node, attrs):
        if node.input[0] in self.shuffles:
            return self.channel_shuffle(node)
        x, e = self.input(node)
        source, target = shape_of(x), output_shape(self, node)
        if len(target) == 2 and target[0] == source[0]:
            if len(source) > 2:
                self.flattened[node.output[0]] = node.input[0]
            return self.flatten(x, 1), e
        if len(source) == 4 and len(target) == 5 and target[1] * target[2] == source[1] and target[3:] == source[2:]:
            self.shuffles[node.output[0]] = (node.input[0], np.arange(source[1]).reshape(target[1:3]))
            return None
        return self.ir.reshape(x, target), e

    @integer_importer("Transpose")
    def import_transpose(self, node, attrs):
        name = node.input[0]
        if name not in self.shuffles or tuple(attrs["perm"]) != (0, 2, 1, 3, 4):
            raise node_error(node, "the integer (PIM) import transposes only within a channel shuffle")
        source, channels = self.shuffles[name]
        self.shuffles[node.output[0]] = (source, channels.T)
        return None

    @integer_importer("MaxPool")
    def import_maxpool(self, node, attrs):
        x, e = self.input(node)
        kernel, strides, pads = pool_geometry(node, attrs, x)
        x = self.ir.pad(x, [0, 0, pads[0], pads[2]], [0, 0, pads[1], pads[3]], LOWEST)
        n, c, h, w = shape_of(x)
        out = (n, c, (h - kernel[0]) // strides[0] + 1, (w - kernel[1]) // strides[1] + 1)
        lowest = self.ir.insert(arith.ConstantOp(IntegerAttr(LOWEST, i32)))
        init = self.ir.insert(FillOp((lowest,), (self.ir.empty(out),), (TensorType(i32, out),)))
        window = self.ir.empty(kernel)
        pool = PoolingNchwMaxOp(
            [x, window],
            [init],
            [TensorType(i32, out)],
            strides=dense_attr(np.array(strides, np.int64), i64),
            dilations=dense_attr(np.array([1, 1], np.int64), i64),
        )
        return self.ir.insert(pool), e

    @integer_importer("GlobalAveragePool")
    def import_globalaveragepool(self, node, attrs):
        x, e = self.input(node)
        h, w = shape_of(x)[2:]
        total = self.ir.reduce(tosa.ReduceSumOp, self.ir.reduce(tosa.ReduceSumOp, x, 2), 3)
        return self.ir.insert(arith.FloorDivSIOp(total, self.splat(h * w, shape_of(total)))), e

    @integer_importer("Flatten")
    def import_flatten(self, node, attrs):
        x, e = self.input(node)
        axis = attrs.axis("axis", len(shape_of(x)), end=True)
        if axis == 1 and len(shape_of(x)) > 2:
            self.flattened[node.output[0]] = node.input[0]
        return self.flatten(x, axis), e

    def flatten(self, x: SSAValue, axis: int) -> SSAValue:
        shape = shape_of(x)
        groups = [list(range(axis)), list(range(axis, len(shape)))]
        result = TensorType(i32, (int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))))
        collapse = tensor.CollapseShapeOp.create(
            operands=[x], result_types=[result], properties={"reassociation": reassociation(groups)}
        )
        return self.ir.insert(collapse)

    def channel_shuffle(self, node):
        """The merge of a split (and transposed) channel axis: a 1×1 convolution with a permutation."""
        source, channels = self.shuffles[node.input[0]]
        x, e = self.values[source], self.exponents[source]
        order = channels.reshape(-1)
        if output_shape(self, node) != shape_of(x):
            raise node_error(node, "a channel shuffle must give back the image's shape")
        permutation = np.zeros((len(order), len(order), 1, 1), np.int64)
        permutation[np.arange(len(order)), order] = 1
        return self.ir.conv(x, self.ir.constant(permutation, i32), [1, 1], [1, 1]), e

    @integer_importer("Identity", "Dropout")
    def import_identity(self, node, attrs):
        return self.input(node)


def import_integer(
    model: onnx.ModelProto | str,
    calibration: Sequence[Sequence[np.ndarray]],
    precision: Mapping[str, tuple[int, int]] | None = None,
) -> IntegerProgram:
    """Calibrate the float model on `calibration` (a list of input lists) and import it as an
    integer program with power-of-two scales; `precision`: the layers with their own (weight bits,
    input bits), by name (`product_layers`)."""
    onnx_model = load_model(model)
    # folds batch norms into the convolutions; the ternary Round(Clip) stays, thresholded on codes below
    importer = OnnxImporter(onnx_model, ternary_thresholds=False)
    float_module = importer.run()
    recorder = PeakRecorder(importer.values)
    names = [i.name for i in onnx_model.graph.input if i.name not in importer.constants]
    program = Program(float_module, "ideal", listeners=[recorder]) if len(calibration) else None
    for inputs in calibration:
        program(list(inputs))  # pyright: ignore[reportOptionalCall]
        for name, x in zip(names, inputs, strict=True):
            recorder.see(name, np.asarray(x))
    return IntegerImporter(onnx_model, recorder.peaks, importer.constants, recorder.lows, precision).run()


def product_layers(model: onnx.ModelProto) -> list[str]:
    """The names of the layers with crossbar products (Conv, Gemm, MatMul), as `precision` names them."""
    return [node_layer_name(n) for n in model.graph.node if n.op_type in PRODUCTS]
