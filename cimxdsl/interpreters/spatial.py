"""Interpreter functions for `spat`: exact NumPy results on `[H, W, C]` activations.

`spat.compute` runs its body with the weights and inputs as block arguments; `apply_filters` reads
its crossbar matrices from the enclosing `spat.compute` (block arguments) or `pim.core` (operands).
Integer results are computed in int64 and then stored in the result's element type, so they are the
host computation's results exactly. On memrefs (after `pim-bufferize`) every op returns a fresh
array, as the dialect says. Channels are FIFO queues: the k-th send is the k-th receive.
"""

from collections import deque
from dataclasses import dataclass, field

import numpy as np
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.ir import Operation

from cimxdsl.dialects import spatial as spat
from cimxdsl.dialects.crossbar_ops import ApplyFiltersBase, FilterGeometry, Im2col, enclosing_weights
from cimxdsl.interpreters.values import as_type, interpretation_error, numpy_dtype


@dataclass(eq=False)
class Channel:
    """The runtime value of a `!spat.ch`: values sent and not yet received, oldest first."""

    queue: deque = field(default_factory=deque)


def is_integer(array: np.ndarray) -> bool:
    return np.issubdtype(np.asarray(array).dtype, np.integer)


def apply_filters(
    image: np.ndarray, weights: list[np.ndarray | None], geometry: FilterGeometry, out_dtype: np.dtype
) -> np.ndarray:
    """`result[oy, ox] = Σ_k image[input pixel of (oy, ox, k)] · weights[k]` over the positions with
    a matrix (None = skipped) and an input pixel inside the image; a rank-2 image is a gemm."""
    wide = np.int64 if is_integer(image) else np.float64
    if image.ndim == 2:
        (matrix,) = weights
        if matrix is None:
            return np.zeros((image.shape[0], 0), out_dtype)
        return (image.astype(wide) @ matrix.astype(wide)).astype(out_dtype)
    height, width, _ = image.shape
    out_h, out_w = geometry.output_size(height, width)
    (sh, sw), (dh, dw) = geometry.strides, geometry.dilations
    padded = pad_or_crop(image.astype(wide), geometry.pads, 0)
    out_channels = next(w.shape[1] for w in weights if w is not None)
    result = np.zeros((out_h, out_w, out_channels), wide)
    for k, ky, kx in geometry.kernel_positions():
        matrix = weights[k]
        if matrix is None:
            continue
        rows = padded[ky * dh : ky * dh + sh * (out_h - 1) + 1 : sh, kx * dw : kx * dw + sw * (out_w - 1) + 1 : sw]
        result += rows @ matrix.astype(wide)
    return result.astype(out_dtype)


def apply_im2col_filters(
    image: np.ndarray, matrices: list[np.ndarray], geometry: FilterGeometry, packing: Im2col, out_dtype: np.dtype
) -> np.ndarray:
    """`result[oy, ox] = u[offset : offset + rows] · [W_0; W_1; ...]`, `u` the channels of the input
    pixels at the packing's kernel positions (zeros for padding), unrolled position-major; with p
    pixels per window, each product holds p adjacent output pixels."""
    wide = np.int64 if is_integer(image) else np.float64
    windows = window_view(image.astype(wide), geometry, 0)[:, :, list(packing.positions)]
    unrolled = windows.reshape(*windows.shape[:2], -1)
    stacked = np.concatenate(matrices).astype(wide)
    products = unrolled[..., packing.offset : packing.offset + stacked.shape[0]] @ stacked
    out_h, windows_w, channels = products.shape  # p pixels per window: their channels side by side
    return products.reshape(out_h, windows_w * packing.pixels, channels // packing.pixels).astype(out_dtype)


def filters_result(op: ApplyFiltersBase, weight_values: tuple, image: np.ndarray, out_dtype: np.dtype) -> np.ndarray:
    """The result of `spat.apply_filters`/`pim.apply_filters` in either packing."""
    packing = op.packing()
    if packing is None:
        weights = selected_weights(weight_values, op.weight_index_list())
        return apply_filters(image, weights, op.geometry(), out_dtype)
    matrices = [np.asarray(weight_values[i]) for i in op.weight_index_list()]
    return apply_im2col_filters(image, matrices, op.geometry(), packing, out_dtype)


def pad_or_crop(image: np.ndarray, pads: tuple[int, int, int, int], fill) -> np.ndarray:
    """`image` `[H, W, C]` padded with `fill` by the positive `pads` (top, left, bottom, right) and
    cropped by the negative ones."""
    top, left, bottom, right = pads
    cropped = image[max(-top, 0) : image.shape[0] - max(-bottom, 0), max(-left, 0) : image.shape[1] - max(-right, 0)]
    grow = ((max(top, 0), max(bottom, 0)), (max(left, 0), max(right, 0)), (0, 0))
    return np.pad(cropped, grow, constant_values=fill) if any(max(p, 0) for p in pads) else cropped


def extracted(op: spat.ExtractOp, value) -> np.ndarray:
    """A copy of the run of `op`'s axis (its rows or columns) that `op` extracts from `value`."""
    offset, count = op.offset.value.data, op.result.type.get_shape()[op.AXIS]
    return np.take(np.asarray(value), np.arange(offset, offset + count), axis=op.AXIS)


def window_view(image: np.ndarray, geometry: FilterGeometry, fill) -> np.ndarray:
    """`[H_out, W_out, KH·KW, C]`: every window of the image padded with `fill`."""
    height, width, _ = image.shape
    out_h, out_w = geometry.output_size(height, width)
    (sh, sw), (dh, dw) = geometry.strides, geometry.dilations
    padded = pad_or_crop(image, geometry.pads, fill)
    windows = [
        padded[ky * dh : ky * dh + sh * (out_h - 1) + 1 : sh, kx * dw : kx * dw + sw * (out_w - 1) + 1 : sw]
        for _, ky, kx in geometry.kernel_positions()
    ]
    return np.stack(windows, axis=2)


def max_pool(image: np.ndarray, geometry: FilterGeometry) -> np.ndarray:
    """Window maximum per channel, ignoring padded pixels (a window of padding only gives the
    smallest value of the type)."""
    lowest = np.iinfo(image.dtype).min if is_integer(image) else -np.inf
    return window_view(image, geometry, lowest).max(axis=2).astype(image.dtype)


def avg_pool(image: np.ndarray, geometry: FilterGeometry, count_include_pad: bool) -> np.ndarray:
    """Window average per channel: floor division for integers."""
    wide = np.int64 if is_integer(image) else np.float64
    sums = window_view(image.astype(wide), geometry, 0).sum(axis=2)
    if count_include_pad:
        counts = np.full(sums.shape[:2], geometry.kernel[0] * geometry.kernel[1])
    else:
        ones = np.ones((*image.shape[:2], 1), wide)
        counts = window_view(ones, geometry, 0).sum(axis=2)[..., 0]
    return divide(sums, counts[..., None]).astype(image.dtype)


def divide(total: np.ndarray, count) -> np.ndarray:
    return np.floor_divide(total, count) if is_integer(total) else total / count


def global_avg_pool(image: np.ndarray) -> np.ndarray:
    wide = np.int64 if is_integer(image) else np.float64
    total = image.astype(wide).sum(axis=(0, 1), keepdims=True)
    return divide(total, image.shape[0] * image.shape[1]).astype(image.dtype)


def enclosing_weight_values(interpreter: Interpreter, op: Operation) -> tuple:
    """The runtime values of the crossbar matrices `op` (an apply_filters) selects from."""
    found = enclosing_weights(op)
    if found is None:
        raise interpretation_error(op, "outside a 'spat.compute' or 'pim.core' holding its weights")
    holder, weights = found
    if isinstance(holder, spat.ComputeOp):
        weights = holder.weight_args
    return interpreter.get_values(weights)


def selected_weights(values: tuple, indices: tuple[int, ...]) -> list[np.ndarray | None]:
    return [None if i < 0 else np.asarray(values[i]) for i in indices]


def binary(op: spat.VectorBinaryOp, args: PythonValues, function) -> tuple:
    """`function` of the two operands, computed wide (int64 or float64), in the result's type."""
    lhs, rhs = np.asarray(args[0]), np.asarray(args[1])
    wide = np.int64 if is_integer(lhs) else np.float64
    return (as_type(function(lhs.astype(wide), rhs.astype(wide)), op.result.type),)


def unary(op: spat.VectorUnaryOp, args: PythonValues, function) -> tuple:
    """`function` of the operand in float64, in the result's type."""
    return (as_type(function(np.asarray(args[0], np.float64)), op.result.type),)


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


class SpatialFunctions(InterpreterFunctions):
    @impl(spat.ComputeOp)
    def run_compute(self, interpreter: Interpreter, op: spat.ComputeOp, args: PythonValues):
        return interpreter.run_ssacfg_region(op.body, args, "spat.compute")

    @impl_terminator(spat.YieldOp)
    def run_yield(self, interpreter: Interpreter, op: spat.YieldOp, args: PythonValues):
        return ReturnedValues(args), ()

    @impl(spat.ApplyFiltersOp)
    def run_apply_filters(self, interpreter: Interpreter, op: spat.ApplyFiltersOp, args: PythonValues):
        dtype = numpy_dtype(op.result.type.element_type)
        return (filters_result(op, enclosing_weight_values(interpreter, op), np.asarray(args[0]), dtype),)

    @impl(spat.VAddOp)
    def run_vadd(self, interpreter: Interpreter, op: spat.VAddOp, args: PythonValues):
        return binary(op, args, np.add)

    @impl(spat.VSubOp)
    def run_vsub(self, interpreter: Interpreter, op: spat.VSubOp, args: PythonValues):
        return binary(op, args, np.subtract)

    @impl(spat.VMulOp)
    def run_vmul(self, interpreter: Interpreter, op: spat.VMulOp, args: PythonValues):
        return binary(op, args, np.multiply)

    @impl(spat.VMaxOp)
    def run_vmax(self, interpreter: Interpreter, op: spat.VMaxOp, args: PythonValues):
        return binary(op, args, np.maximum)

    @impl(spat.VTanhOp)
    def run_vtanh(self, interpreter: Interpreter, op: spat.VTanhOp, args: PythonValues):
        return unary(op, args, np.tanh)

    @impl(spat.VSigmOp)
    def run_vsigm(self, interpreter: Interpreter, op: spat.VSigmOp, args: PythonValues):
        return unary(op, args, sigmoid)

    @impl(spat.VReluOp)
    def run_relu(self, interpreter: Interpreter, op: spat.VReluOp, args: PythonValues):
        return (as_type(np.maximum(np.asarray(args[0]), 0), op.result.type),)

    @impl(spat.MaxPoolOp)
    def run_max_pool(self, interpreter: Interpreter, op: spat.MaxPoolOp, args: PythonValues):
        return (max_pool(np.asarray(args[0]), op.geometry()),)

    @impl(spat.AvgPoolOp)
    def run_avg_pool(self, interpreter: Interpreter, op: spat.AvgPoolOp, args: PythonValues):
        return (avg_pool(np.asarray(args[0]), op.geometry(), op.count_include_pad is not None),)

    @impl(spat.GlobalAvgPoolOp)
    def run_global_avg_pool(self, interpreter: Interpreter, op: spat.GlobalAvgPoolOp, args: PythonValues):
        return (global_avg_pool(np.asarray(args[0])),)

    @impl(spat.ConcatOp)
    def run_concat(self, interpreter: Interpreter, op: spat.ConcatOp, args: PythonValues):
        return (np.concatenate([np.asarray(a) for a in args], axis=op.axis.value.data),)

    @impl(spat.ExtractRowsOp)
    def run_extract_rows(self, interpreter: Interpreter, op: spat.ExtractRowsOp, args: PythonValues):
        return (extracted(op, args[0]),)

    @impl(spat.ExtractColumnsOp)
    def run_extract_columns(self, interpreter: Interpreter, op: spat.ExtractColumnsOp, args: PythonValues):
        return (extracted(op, args[0]),)

    @impl(spat.ChannelNewOp)
    def run_channel_new(self, interpreter: Interpreter, op: spat.ChannelNewOp, args: PythonValues):
        return (Channel(),)

    @impl(spat.ChannelSendOp)
    def run_channel_send(self, interpreter: Interpreter, op: spat.ChannelSendOp, args: PythonValues):
        channel, value = args
        channel.queue.append(np.array(value, copy=True))
        return ()

    @impl(spat.ChannelReceiveOp)
    def run_channel_receive(self, interpreter: Interpreter, op: spat.ChannelReceiveOp, args: PythonValues):
        (channel,) = args
        if not channel.queue:
            raise interpretation_error(op, "receive on a channel with nothing sent")
        return (channel.queue.popleft(),)


register_impls(SpatialFunctions)
