"""Programs in the input form of `cinm-to-spatial` (what the ONNX frontend gives after
`linalg-to-cinm` in integer mode), and a way to interpret them at any level."""

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from cimxdsl.device import Device
from cimxdsl.interpreters import build_interpreter, entry_function
from cimxdsl.interpreters.values import as_type
from tests.unit.helpers import dense_hex


def interpret(module: ModuleOp, inputs: Sequence[np.ndarray], entry: str = "main") -> list[np.ndarray]:
    """The results of `@entry(*inputs)` at whatever level `module` is."""
    interpreter = build_interpreter(module, Device("ideal"))
    function = entry_function(module, entry)
    types = function.function_type.inputs.data
    arguments = [as_type(x, t) for x, t in zip(inputs, types, strict=True)]
    return [np.asarray(r) for r in interpreter.call_op(function, tuple(arguments))]


# ----------------------------------------------------------------------------------------------
# Program text
# ----------------------------------------------------------------------------------------------


DECIMAL_LIMIT = 64
"""The most values a constant's `dense<...>` writes in decimal: more go as their bytes in hex
(`dense_hex`), since the parser reads decimal text element by element (64 k values: ~3 s)."""


def dense(array: np.ndarray) -> str:
    """`dense<...>` text of an integer array (i32)."""
    values = np.asarray(array)
    if values.size > DECIMAL_LIMIT:
        return dense_hex(values, "i32")
    return "dense<" + np.array2string(values, separator=", ", threshold=1 << 30).replace("\n", "") + ">"


def tensor_type(shape: Sequence[int]) -> str:
    return "tensor<" + "x".join(str(d) for d in shape) + "xi32>"


class ProgramBuilder:
    """Builds a `func.func @main` in the cinm-level contract form, one layer at a time."""

    def __init__(self, input_shape: Sequence[int], seed: int = 0):
        self.lines: list[str] = []
        self.count = 0
        self.rng = np.random.default_rng(seed)
        self.input_shape = tuple(input_shape)
        self.shapes: dict[str, tuple[int, ...]] = {"%x": self.input_shape}

    def fresh(self, prefix: str = "v") -> str:
        self.count += 1
        return f"%{prefix}{self.count}"

    def emit(self, name: str, shape: Sequence[int], text: str) -> str:
        self.lines.append(f"  {name} = {text}")
        self.shapes[name] = tuple(shape)
        return name

    def constant(self, array: np.ndarray) -> str:
        return self.emit(self.fresh("c"), array.shape, f"arith.constant {dense(array)} : {tensor_type(array.shape)}")

    def splat(self, value: int, shape: Sequence[int]) -> str:
        return self.emit(self.fresh("s"), shape, f"arith.constant dense<{value}> : {tensor_type(shape)}")

    def pad(self, x: str, pad: int, value: int) -> str:
        n, c, h, w = self.shapes[x]
        scalar = self.fresh("p")
        self.lines.append(f"  {scalar} = arith.constant {value} : i32")
        shape = (n, c, h + 2 * pad, w + 2 * pad)
        return self.emit(
            self.fresh("pad"),
            shape,
            f"tensor.pad {x} low[0, 0, {pad}, {pad}] high[0, 0, {pad}, {pad}] {{\n"
            f"  ^bb0(%i{self.count}: index, %j{self.count}: index, %k{self.count}: index, %l{self.count}: index):\n"
            f"    tensor.yield {scalar} : i32\n"
            f"  }} : {tensor_type(self.shapes[x])} to {tensor_type(shape)}",
        )

    def conv(self, x: str, filters: int, kernel: int, stride: int = 1, pad: int = 0, weights=None) -> str:
        """A convolution as `linalg-to-cinm` lowers it (im2col + gemm, constant weight matrix)."""
        _, c, h, w = self.shapes[x]
        if weights is None:
            weights = self.rng.integers(-8, 8, (filters, c, kernel, kernel))
        matrix = weights.reshape(filters, -1).T
        source = self.pad(x, pad, 0) if pad else x
        hp, wp = h + 2 * pad, w + 2 * pad
        oh, ow = (hp - kernel) // stride + 1, (wp - kernel) // stride + 1
        wm = self.constant(matrix)
        cols, g, e, init, t = (self.fresh(p) for p in ("cols", "g", "e", "init", "t"))
        name = self.fresh("conv")
        out = (1, filters, oh, ow)
        body = [
            f"{cols} = cinm.op.im2col {source} {{kernel = array<i64: {kernel}, {kernel}>, "
            f"strides = array<i64: {stride}, {stride}>}} : {tensor_type(self.shapes[source])} -> "
            f"{tensor_type((oh * ow, c * kernel * kernel))}",
            f"{g} = cinm.op.gemm {cols}, {wm} : ({tensor_type((oh * ow, c * kernel * kernel))}, "
            f"{tensor_type(matrix.shape)}) -> {tensor_type((oh * ow, filters))}",
            f"{e} = tensor.expand_shape {g} [[0, 1, 2], [3]] output_shape [1, {oh}, {ow}, {filters}] : "
            f"{tensor_type((oh * ow, filters))} into {tensor_type((1, oh, ow, filters))}",
            f"{init} = tensor.empty() : {tensor_type(out)}",
            f"{t} = linalg.transpose ins({e} : {tensor_type((1, oh, ow, filters))}) outs({init} : "
            f"{tensor_type(out)}) permutation = [0, 3, 1, 2]",
            f"cinm.yield {t} : {tensor_type(out)}",
        ]
        text = f"cinm.compute -> {tensor_type(out)} {{\n" + "".join(f"    {line}\n" for line in body) + "  }"
        return self.emit(name, out, text)

    def gemm(self, x: str, outputs: int, bias: bool = True) -> str:
        m, k = self.shapes[x]
        wm = self.constant(self.rng.integers(-8, 8, (k, outputs)))
        plus = ""
        if bias:
            b = self.constant(self.rng.integers(-50, 50, (m, outputs)))
            plus = f" plus {b}"
        g = self.fresh("g")
        out = (m, outputs)
        body = (
            f"    {g} = cinm.op.gemm {x}, {wm}{plus} : ({tensor_type((m, k))}, {tensor_type((k, outputs))}) -> "
            f"{tensor_type(out)}\n    cinm.yield {g} : {tensor_type(out)}\n"
        )
        return self.emit(self.fresh("fc"), out, f"cinm.compute -> {tensor_type(out)} {{\n{body}  }}")

    def binary(self, op: str, a: str, b: str) -> str:
        shape = self.shapes[a]
        return self.emit(self.fresh(op.split(".")[-1]), shape, f"{op} {a}, {b} : {tensor_type(shape)}")

    def relu(self, x: str) -> str:
        return self.binary("arith.maxsi", x, self.splat(0, self.shapes[x]))

    def requantize(self, x: str, shift: int) -> str:
        """`clamp(x >> shift, -128, 127)`: back to int8 values."""
        shape = self.shapes[x]
        y = self.binary("arith.shrsi", x, self.splat(shift, shape))
        y = self.binary("arith.minsi", y, self.splat(127, shape))
        return self.binary("arith.maxsi", y, self.splat(-128, shape))

    def bias(self, x: str) -> str:
        n, c, h, w = self.shapes[x]
        per_channel = self.rng.integers(-20, 20, (1, c, 1, 1))
        return self.binary("arith.addi", x, self.constant(np.broadcast_to(per_channel, (n, c, h, w)).copy()))

    def max_pool(self, x: str, kernel: int, stride: int, pad: int) -> str:
        n, c, h, w = self.shapes[x]
        lowest = -(2**31)
        source = self.pad(x, pad, lowest) if pad else x
        hp, wp = h + 2 * pad, w + 2 * pad
        out = (n, c, (hp - kernel) // stride + 1, (wp - kernel) // stride + 1)
        scalar, window, empty = self.fresh("m"), self.fresh("win"), self.fresh("e")
        self.lines.append(f"  {scalar} = arith.constant {lowest} : i32")
        self.lines.append(f"  {window} = tensor.empty() : {tensor_type((kernel, kernel))}")
        self.lines.append(f"  {empty} = tensor.empty() : {tensor_type(out)}")
        init = self.emit(
            self.fresh("fill"),
            out,
            f"linalg.fill ins({scalar} : i32) outs({empty} : {tensor_type(out)}) -> {tensor_type(out)}",
        )
        return self.emit(
            self.fresh("pool"),
            out,
            f"linalg.pooling_nchw_max {{dilations = dense<1> : tensor<2xi64>, strides = dense<{stride}> : "
            f"tensor<2xi64>}} ins({source}, {window} : {tensor_type(self.shapes[source])}, "
            f"{tensor_type((kernel, kernel))}) outs({init} : {tensor_type(out)}) -> {tensor_type(out)}",
        )

    def global_avg_pool(self, x: str, floor: bool = False) -> str:
        n, c, h, w = self.shapes[x]
        rows = self.emit(
            self.fresh("sum"),
            (n, c, 1, w),
            f"tosa.reduce_sum {x} {{axis = 2 : i32}} : ({tensor_type((n, c, h, w))}) -> {tensor_type((n, c, 1, w))}",
        )
        total = self.emit(
            self.fresh("sum"),
            (n, c, 1, 1),
            f"tosa.reduce_sum {rows} {{axis = 3 : i32}} : ({tensor_type((n, c, 1, w))}) -> {tensor_type((n, c, 1, 1))}",
        )
        return self.binary("arith.floordivsi" if floor else "arith.divsi", total, self.splat(h * w, (n, c, 1, 1)))

    def flatten(self, x: str) -> str:
        n, c, h, w = self.shapes[x]
        return self.emit(
            self.fresh("flat"),
            (n, c * h * w),
            f"tensor.collapse_shape {x} [[0], [1, 2, 3]] : {tensor_type((n, c, h, w))} into "
            f"{tensor_type((n, c * h * w))}",
        )

    def text(self, *results: str) -> str:
        types = ", ".join(tensor_type(self.shapes[r]) for r in results)
        returns = ", ".join(results)
        return (
            f"func.func @main(%x: {tensor_type(self.input_shape)}) -> ({types}) {{\n"
            + "\n".join(self.lines)
            + f"\n  func.return {returns} : {types}\n}}\n"
        )


def conv_program(channels: int = 4, filters: int = 8, size: int = 5, seed: int = 0, weights=None) -> str:
    """One 3×3 convolution (FCHW `weights`, random by default) with zero padding 1, then ReLU."""
    b = ProgramBuilder((1, channels, size, size), seed)
    return b.text(b.relu(b.conv("%x", filters, 3, pad=1, weights=weights)))


def gemm_program(rows: int = 1, inputs: int = 10, outputs: int = 7, seed: int = 0) -> str:
    """Two fully connected layers with biases, ReLU and requantization between them."""
    b = ProgramBuilder((rows, inputs), seed)
    hidden = b.requantize(b.relu(b.gemm("%x", 9)), 2)
    return b.text(b.gemm(hidden, outputs))


def resnet_program(channels: int = 3, size: int = 8, width: int = 4, classes: int = 5, seed: int = 0) -> str:
    """A ResNet-18-shaped network with small channel counts: a stem (conv, ReLU, 3×3/2 max pool),
    a basic block, a downsampling block with a strided conv and a 1×1 projection, global average
    pooling, flatten and a fully connected layer; requantization after every conv."""
    b = ProgramBuilder((1, channels, size, size), seed)

    def conv_bn_relu(x: str, filters: int, kernel: int, stride: int = 1, relu: bool = True) -> str:
        y = b.requantize(b.bias(b.conv(x, filters, kernel, stride, pad=kernel // 2)), 4)
        return b.relu(y) if relu else y

    x = conv_bn_relu("%x", width, 3)
    x = b.max_pool(x, 3, 2, 1)
    y = conv_bn_relu(x, width, 3)
    y = conv_bn_relu(y, width, 3, relu=False)
    x = b.relu(b.binary("arith.addi", y, x))
    y = conv_bn_relu(x, 2 * width, 3, stride=2)
    y = conv_bn_relu(y, 2 * width, 3, relu=False)
    shortcut = conv_bn_relu(x, 2 * width, 1, stride=2, relu=False)
    x = b.relu(b.binary("arith.addi", y, shortcut))
    x = b.flatten(b.global_avg_pool(x))
    return b.text(b.gemm(x, classes))
