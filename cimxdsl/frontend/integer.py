"""Integer-only import for the spatial/PIM target: a CNN as int8 values in i32 tensors with
power-of-two scales, so every rescaling is a shift the PIM cores' vector units can do.

Each tensor `t` is held as codes `q` with `t ≈ q · 2^e(t)`; `e(t)` comes from the tensor's range
on calibration inputs (`|t| ≤ 127 · 2^e`). Weights are quantized per tensor the same way. A
convolution or dense layer accumulates `q_x · q_W` at exponent `e(x) + e(W)`, adds its bias at that
exponent (plus half a step, so the shift rounds), shifts right to its output's exponent and clamps
to int8. Residual additions shift both operands to the output's exponent. ReLU, max pooling,
global average pooling (floor division) and flattening keep the exponent. A trailing Softmax is left
to the host, after the outputs are dequantized (`IntegerProgram.dequantize`).

Supported ops: Conv (groups 1, BN folded), Gemm/MatMul with constant weights, Relu, MaxPool,
GlobalAveragePool, Add, Flatten, Reshape, Identity, Dropout, and a final Softmax.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import onnx
from xdsl.dialects import arith, func, tensor, tosa
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType, i32, i64
from xdsl.dialects.linalg.ops import FillOp, PoolingNchwMaxOp
from xdsl.interpreter import Interpreter
from xdsl.ir import Block, Operation, Region, SSAValue

from cimxdsl.dialects.utils import dense_attr, reassociation
from cimxdsl.frontend.attributes import NodeAttributes, OnnxImportError, defaults, node_error
from cimxdsl.frontend.builder import IRBuilder, shape_of
from cimxdsl.frontend.onnx_importer import OnnxImporter, conv_pads, input_shape, load_model, sanitize
from cimxdsl.interpreters import run

INT8 = (-128, 127)
LOWEST = -(2**31)


def exponent(peak: float) -> int:
    """The smallest `e` with `peak ≤ 127 · 2^e`."""
    return int(np.ceil(np.log2(max(peak, 1e-30) / 127)))


class PeakRecorder(Interpreter.Listener):
    """The largest magnitude every named value reaches while the float program runs."""

    def __init__(self, names: dict[SSAValue, str]):
        self.names = names
        self.peaks: dict[str, float] = {}

    def did_interpret_op(self, op: Operation, results) -> None:
        for value, result in zip(op.results, results, strict=False):
            name = self.names.get(value)
            if name is not None:
                self.peaks[name] = max(self.peaks.get(name, 0.0), float(np.max(np.abs(result))))


@dataclass
class IntegerProgram:
    """An integer program and how to convert its inputs and outputs."""

    module: ModuleOp
    input_exponents: list[int]
    output_exponents: list[int]
    softmax_outputs: list[bool] = field(default_factory=list)

    def quantize(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [
            np.clip(np.rint(np.asarray(x, np.float64) / 2.0**e), *INT8).astype(np.int32)
            for x, e in zip(inputs, self.input_exponents, strict=True)
        ]

    def dequantize(self, outputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        values = []
        for q, e, softmax in zip(outputs, self.output_exponents, self.softmax_outputs, strict=True):
            y = np.asarray(q, np.float64) * 2.0**e
            if softmax:
                y = np.exp(y - y.max(axis=-1, keepdims=True))
                y /= y.sum(axis=-1, keepdims=True)
            values.append(y.astype(np.float32))
        return values


class IntegerImporter:
    """Emits the integer program node by node, tracking every tensor's exponent."""

    def __init__(self, model: onnx.ModelProto, peaks: dict[str, float], constants: dict[str, np.ndarray]):
        self.model = model
        self.peaks = peaks
        self.constants = constants
        self.values: dict[str, SSAValue] = {}
        self.exponents: dict[str, int] = {}

    def run(self) -> IntegerProgram:
        graph = self.model.graph
        inputs = [i for i in graph.input if i.name not in self.constants]
        shapes = [input_shape(i) for i in inputs]
        block = Block(arg_types=[TensorType(i32, s) for s in shapes])
        self.ir = IRBuilder(block, i32)
        for arg, info in zip(block.args, inputs, strict=True):
            arg.name_hint = sanitize(info.name)
            self.values[info.name] = arg
            self.exponents[info.name] = exponent(self.peaks.get(info.name, 1.0))
        softmax: dict[str, str] = {}
        for node in graph.node:
            if node.op_type == "Softmax":
                softmax[node.output[0]] = node.input[0]
                continue
            self.ir.layer_name = sanitize(node.name or node.output[0])
            handler = getattr(self, f"import_{node.op_type.lower()}", None)
            if handler is None:
                raise OnnxImportError(
                    f"the integer (PIM) import does not support '{node.op_type}' (node '{node.name}')"
                )
            value, e = handler(node, NodeAttributes(node))
            value.name_hint = sanitize(node.output[0])
            self.values[node.output[0]], self.exponents[node.output[0]] = value, e
        outputs = [softmax.get(o.name, o.name) for o in graph.output]
        results = [self.values[name] for name in outputs]
        self.ir.builder.insert(func.ReturnOp(*results))
        function = func.FuncOp("main", ([a.type for a in block.args], [r.type for r in results]), Region(block))
        return IntegerProgram(
            ModuleOp([function]),
            [self.exponents[i.name] for i in inputs],
            [self.exponents[name] for name in outputs],
            [o.name in softmax for o in graph.output],
        )

    # -- helpers -----------------------------------------------------------------------------------
    def input(self, node, index: int = 0) -> tuple[SSAValue, int]:
        name = node.input[index]
        if name not in self.values:
            raise node_error(node, f"input '{name}' must come from the network")
        return self.values[name], self.exponents[name]

    def weights(self, node, index: int, what: str) -> np.ndarray:
        name = node.input[index] if index < len(node.input) else ""
        if name not in self.constants:
            raise node_error(node, f"{what} must be a constant")
        return self.constants[name].astype(np.float64)

    def splat(self, value: int, shape) -> SSAValue:
        return self.ir.constant(np.full(tuple(shape), value, np.int64), i32)

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
        e_out = max(exponent(self.peaks[name]), e_acc)
        shift = e_out - e_acc
        offset = np.zeros(shape_of(acc)[1]) if bias is None else np.rint(bias / 2.0**e_acc)
        if shift > 0:
            offset = offset + 2 ** (shift - 1)
        if offset.any():
            shape = shape_of(acc)
            full = np.broadcast_to(offset.reshape((1, -1) + (1,) * (len(shape) - 2)), shape)
            acc = self.ir.insert(arith.AddiOp(acc, self.ir.constant(full.astype(np.int64), i32)))
        return self.clamp(self.shift(acc, shift)), e_out

    @staticmethod
    def quantize_weights(weights: np.ndarray) -> tuple[np.ndarray, int]:
        e = exponent(float(np.abs(weights).max()))
        return np.clip(np.rint(weights / 2.0**e), -127, 127).astype(np.int64), e

    # -- handlers: (node, attributes) -> (value, exponent) -----------------------------------------
    def import_conv(self, node, attrs):
        x, e_x = self.input(node)
        if attrs["group"] != 1:
            raise node_error(node, "the integer (PIM) import supports groups = 1 only")
        weights = self.weights(node, 1, "the weights")
        codes, e_w = self.quantize_weights(weights)
        kernel = weights.shape[2:]
        strides, dilations = attrs["strides"], attrs["dilations"]
        pads = conv_pads(node, attrs, shape_of(x)[2:], kernel, strides, dilations)
        x = self.ir.pad(x, [0, 0, pads[0], pads[1]], [0, 0, pads[2], pads[3]], 0)
        acc = self.ir.conv(x, self.ir.constant(codes, i32), strides, dilations)
        bias = self.weights(node, 2, "the bias") if len(node.input) > 2 and node.input[2] else None
        return self.requantize(acc, e_x + e_w, node.output[0], bias)

    def import_gemm(self, node, attrs):
        x, e_x = self.input(node)
        if attrs["transA"]:
            raise node_error(node, "transA is not supported by the integer import")
        weights = self.weights(node, 1, "the weights") * attrs["alpha"]
        weights = weights.T if attrs["transB"] else weights
        codes, e_w = self.quantize_weights(weights)
        acc = self.ir.matmul(x, self.ir.constant(codes, i32))
        bias = None
        if len(node.input) > 2 and node.input[2]:
            bias = np.broadcast_to(self.weights(node, 2, "the bias") * attrs["beta"], shape_of(acc))[0]
        return self.requantize(acc, e_x + e_w, node.output[0], bias)

    def import_matmul(self, node, attrs):
        return self.import_gemm(node, defaults("Gemm"))

    def import_relu(self, node, attrs):
        x, e = self.input(node)
        return self.ir.insert(arith.MaxSIOp(x, self.splat(0, shape_of(x)))), e

    def import_add(self, node, attrs):
        (a, e_a), (b, e_b) = self.input(node, 0), self.input(node, 1)
        e_out = max(exponent(self.peaks[node.output[0]]), e_a, e_b)  # only right shifts
        total = self.ir.insert(arith.AddiOp(self.shift(a, e_out - e_a), self.shift(b, e_out - e_b)))
        return self.clamp(total), e_out

    def import_maxpool(self, node, attrs):
        x, e = self.input(node)
        kernel, strides = attrs["kernel_shape"], attrs["strides"]
        if attrs["ceil_mode"] or any(d != 1 for d in attrs["dilations"]):
            raise node_error(node, "ceil_mode and dilations are not supported here")
        pads = conv_pads(node, attrs, shape_of(x)[2:], kernel, strides, [1, 1])
        x = self.ir.pad(x, [0, 0, pads[0], pads[1]], [0, 0, pads[2], pads[3]], LOWEST)
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

    def import_globalaveragepool(self, node, attrs):
        x, e = self.input(node)
        h, w = shape_of(x)[2:]
        total = self.ir.reduce(tosa.ReduceSumOp, self.ir.reduce(tosa.ReduceSumOp, x, 2), 3)
        return self.ir.insert(arith.FloorDivSIOp(total, self.splat(h * w, shape_of(total)))), e

    def import_flatten(self, node, attrs):
        x, e = self.input(node)
        shape = shape_of(x)
        axis = attrs.axis("axis", len(shape), end=True)
        groups = [list(range(axis)), list(range(axis, len(shape)))]
        result = TensorType(i32, (int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))))
        collapse = tensor.CollapseShapeOp.create(
            operands=[x], result_types=[result], properties={"reassociation": reassociation(groups)}
        )
        return self.ir.insert(collapse), e

    def import_identity(self, node, attrs):
        return self.input(node)

    import_dropout = import_identity


def import_integer(model: onnx.ModelProto | str, calibration: Sequence[Sequence[np.ndarray]]) -> IntegerProgram:
    """Calibrate the float model on `calibration` (a list of input lists) and import it as an
    integer program with power-of-two scales."""
    onnx_model = load_model(model)
    importer = OnnxImporter(onnx_model)  # folds batch norms into the convolutions
    float_module = importer.run()
    recorder = PeakRecorder({value: name for name, value in importer.values.items()})
    names = [i.name for i in onnx_model.graph.input if i.name not in importer.constants]
    for inputs in calibration:
        run(float_module, list(inputs), "ideal", listeners=[recorder])
        for name, x in zip(names, inputs, strict=True):
            recorder.peaks[name] = max(recorder.peaks.get(name, 0.0), float(np.max(np.abs(x))))
    return IntegerImporter(onnx_model, recorder.peaks, importer.constants).run()
