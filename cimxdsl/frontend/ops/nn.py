"""Layers: products (MatMul, Gemm, Conv), activations, pooling, normalisation and Softmax."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects import arith, math, tosa
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, i64
from xdsl.ir import SSAValue

from cimxdsl.dialects.utils import dense_array
from cimxdsl.frontend.attributes import node_error, node_label
from cimxdsl.frontend.builder import shape_of
from cimxdsl.frontend.ops.math import mean, reduce_axes
from cimxdsl.frontend.ops.shape import take
from cimxdsl.frontend.pooling import Window, pool_window
from cimxdsl.frontend.registry import importer

if TYPE_CHECKING:
    from cimxdsl.frontend.onnx_importer import OnnxImporter


@importer("MatMul")
def import_matmul(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    lhs, rhs = im.input(node, 0), im.input(node, 1)
    return [matmul(im, lhs, rhs, node)]


def matmul(im: OnnxImporter, lhs: SSAValue, rhs: SSAValue, node) -> SSAValue:
    """NumPy `matmul` semantics. A constant right operand is a linear layer: an (..., K) × (K, N)
    product folds the leading dimensions into the rows of one `linalg.matmul` (the tokens are the
    rows), a batched constant gives one per batch entry. Two run-time operands (attention's Q·Kᵀ
    and P·V) become one `linalg.batch_matmul`, computed on the host."""
    left, right = shape_of(lhs), shape_of(rhs)
    vector_left, vector_right = len(left) == 1, len(right) == 1
    if vector_left:
        lhs, left = im.ir.reshape(lhs, (1, left[0])), (1, left[0])
    if vector_right:
        rhs, right = im.ir.reshape(rhs, (right[0], 1)), (right[0], 1)
    weights = constant_array(rhs)
    batch = tuple(np.broadcast_shapes(left[:-2], right[:-2]))
    shape = (*batch, left[-2], right[-1])
    count = int(np.prod(batch))
    if weights is not None and len(right) == 2:
        rows = int(np.prod(left[:-1]))
        product = im.ir.matmul(im.ir.reshape(lhs, (rows, left[-1])), rhs)
        shape = (*left[:-1], right[1])
    else:
        lhs = im.ir.reshape(im.ir.broadcast(lhs, (*batch, *left[-2:])), (count, *left[-2:]))
        if weights is None:
            rhs = im.ir.reshape(im.ir.broadcast(rhs, (*batch, *right[-2:])), (count, *right[-2:]))
            product = im.ir.batch_matmul(lhs, rhs)
        else:
            matrices = np.broadcast_to(weights, (*batch, *right[-2:])).reshape(count, *right[-2:])
            products = []
            for b in range(count):
                a = im.ir.reshape(im.ir.slice(lhs, [b, 0, 0], [1, *left[-2:]]), left[-2:])
                w = im.ir.constant(matrices[b], rhs.type.element_type)
                products.append(im.ir.reshape(im.ir.matmul(a, w), (1, left[-2], right[-1])))
            product = im.ir.concat(products, 0)
    if vector_left:
        shape = shape[:-2] + shape[-1:]
    if vector_right:
        shape = shape[:-1]
    return im.ir.reshape(product, shape)


def constant_array(value: SSAValue) -> np.ndarray | None:
    """The values of an `arith.constant` tensor (None for a run-time value)."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, DenseIntOrFPElementsAttr):
        return dense_array(owner.value)
    return None


@importer("Gemm")
def import_gemm(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    lhs = im.input(node, 0)
    if attrs["transA"]:
        lhs = im.ir.transpose(lhs, (1, 0))
    weights = im.optional_constant(node, 1)
    if weights is not None:
        weights = weights.T if attrs["transB"] else weights
        rhs = im.ir.constant((weights * attrs["alpha"]).astype(np.float32))
    else:
        rhs = im.input(node, 1)
        rhs = im.ir.transpose(rhs, (1, 0)) if attrs["transB"] else rhs
        if attrs["alpha"] != 1.0:
            rhs = im.ir.scalar_op(arith.MulfOp, rhs, attrs["alpha"])
    result = im.ir.matmul(lhs, rhs)
    if len(node.input) > 2 and node.input[2]:
        bias = im.input(node, 2)
        if not broadcasts_to(shape_of(bias), shape_of(result)):
            raise node_error(node, f"the bias {list(shape_of(bias))} does not broadcast to {list(shape_of(result))}")
        if attrs["beta"] != 1.0:
            bias = im.ir.scalar_op(arith.MulfOp, bias, attrs["beta"])
        result = im.ir.binary(arith.AddfOp, result, bias)
    return [result]


def broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether `shape` broadcasts to `target` in one direction (ONNX's unidirectional broadcasting)."""
    return len(shape) <= len(target) and all(d in (1, t) for d, t in zip(reversed(shape), reversed(target)))


def conv_pads(node, attrs, spatial: tuple[int, int], kernel, strides, dilations) -> list[int]:
    """ONNX pads [top, left, bottom, right], from `pads` or `auto_pad`."""
    auto = attrs["auto_pad"]
    if auto in ("NOTSET", "VALID"):
        return list(attrs["pads"]) if auto == "NOTSET" else [0, 0, 0, 0]
    pads = [0, 0, 0, 0]
    for axis in range(2):
        out = -(-spatial[axis] // strides[axis])
        total = max(0, (out - 1) * strides[axis] + dilations[axis] * (kernel[axis] - 1) + 1 - spatial[axis])
        small, large = total // 2, total - total // 2
        pads[axis], pads[axis + 2] = (small, large) if auto == "SAME_UPPER" else (large, small)
    return pads


@importer("Conv")
def import_conv(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    result = convolution(im, node, attrs, im.input(node, 0), im.input(node, 1))
    if len(node.input) > 2 and node.input[2]:
        bias = im.ir.reshape(im.input(node, 2), (1, shape_of(result)[1], 1, 1))
        result = im.ir.binary(arith.AddfOp, result, bias)
    return [result]


def convolution(im: OnnxImporter, node, attrs, image: SSAValue, weights: SSAValue) -> SSAValue:
    """An NCHW convolution with the node's padding, strides, dilations and groups."""
    if len(shape_of(image)) != 4:
        raise node_error(node, "only 2-D convolutions (NCHW) are supported")
    if len(shape_of(weights)) != 4:
        raise node_error(node, f"the weights must be 4-d (F, C/group, KH, KW), got {list(shape_of(weights))}")
    f, c_group, kh, kw = shape_of(weights)
    channels = shape_of(image)[1]
    if channels != c_group * attrs["group"] or f % attrs["group"]:
        raise node_error(
            node, f"{channels} input channels and {f} filters of {c_group} channels do not fit group {attrs['group']}"
        )
    strides, dilations = attrs["strides"], attrs["dilations"]
    pads = conv_pads(node, attrs, shape_of(image)[2:], (kh, kw), strides, dilations)
    image = im.ir.pad(image, [0, 0, pads[0], pads[1]], [0, 0, pads[2], pads[3]])
    groups = attrs["group"]
    if groups == 1:
        return im.ir.conv(image, weights, strides, dilations)
    result = im.ir.grouped_conv(image, weights, groups, strides, dilations)
    im.drop_if_unused(weights)  # the constant was regrouped
    return result


@importer("Relu")
def import_relu(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    return [im.ir.clamp(im.input(node, 0), 0.0, float(np.finfo(np.float32).max))]


@importer("LeakyRelu")
def import_leaky_relu(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = im.input(node, 0)
    scaled = im.ir.scalar_op(arith.MulfOp, x, attrs["alpha"])
    kind = arith.MaximumfOp if attrs["alpha"] <= 1 else arith.MinimumfOp
    return [im.ir.insert(kind(x, scaled))]


@importer("Clip")
def import_clip(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = im.input(node, 0)
    bounds = [node.input[i] if i < len(node.input) else "" for i in (1, 2)]
    if any(name and name not in im.constants for name in bounds):
        for name, kind in zip(bounds, (arith.MaximumfOp, arith.MinimumfOp), strict=True):
            if name:
                x = im.ir.binary(kind, x, im.value(name, node_label(node)))
        return [x]
    limit = float(np.finfo(np.float32).max)
    low, high = im.optional_constant(node, 1), im.optional_constant(node, 2)
    low = float(low) if low is not None else attrs["min"] if attrs["min"] is not None else -limit
    high = float(high) if high is not None else attrs["max"] if attrs["max"] is not None else limit
    return [im.ir.clamp(x, low, high)]


@importer("Sigmoid")
def import_sigmoid(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    return [im.ir.sigmoid(im.input(node, 0))]


def pool_geometry(node, attrs, image: SSAValue) -> tuple[list[int], list[int], list[int]]:
    """Kernel, strides and TOSA pads of a 2-D pooling node without dilations."""
    if len(shape_of(image)) != 4:
        raise node_error(node, "only 2-D pooling (NCHW) is supported")
    window = pool_window(node, attrs, shape_of(image))
    if any(d != 1 for d in window.dilations):
        raise node_error(node, "dilations are not supported")
    return list(window.kernel), list(window.strides), tosa_pads(window)


def tosa_pads(window: Window) -> list[int]:
    """TOSA pads [top, bottom, left, right] of 2-D windows; `ceil_mode`'s extension becomes extra
    bottom/right padding (which TOSA pooling does not count)."""
    (top, left), (bottom, right), (taller, wider) = window.begin, window.end, window.extension
    return [top, bottom + taller, left, right + wider]


def is_planar(window: Window) -> bool:
    """Whether TOSA's 2-D pooling computes these windows (2 spatial axes, no dilations)."""
    return len(window.size) == 2 and all(d == 1 for d in window.dilations)


def window_elements(im: OnnxImporter, image: SSAValue, window: Window, fill: float) -> SSAValue:
    """`[N, C, windows, kernel elements]`: the elements of every window (a gather from the image
    flattened), padding read as `fill`."""
    n, c = shape_of(image)[:2]
    size = int(np.prod(window.size))
    flat = im.ir.reshape(image, (n, c, size))
    padded = im.ir.concat([flat, im.ir.splat(fill, (n, c, 1), image.type.element_type)], 2)
    positions = window.flat_positions()
    return take(im, padded, im.ir.constant(np.where(positions < 0, size, positions), i64), 2)


def unflatten(im: OnnxImporter, pooled: SSAValue, window: Window) -> SSAValue:
    """`[N, C, windows, 1]` as `[N, C, *out]`."""
    return im.ir.reshape(pooled, (*shape_of(pooled)[:2], *window.out))


@importer("MaxPool")
def import_max_pool(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """The maxima of the windows and, as the optional second output, where they are."""
    image = im.input(node, 0)
    window = pool_window(node, attrs, shape_of(image))
    indices = len(node.output) > 1 and bool(node.output[1])
    if is_planar(window) and not indices:
        return [im.ir.pool(tosa.MaxPool2DOp, image, list(window.kernel), list(window.strides), tosa_pads(window))]
    elements = window_elements(im, image, window, float(np.finfo(np.float32).min))
    maxima = im.ir.reduce(tosa.ReduceMaxOp, elements, 3)
    results = [unflatten(im, maxima, window)]
    if indices:
        results.append(unflatten(im, max_indices(im, elements, maxima, window, attrs["storage_order"]), window))
    return results


def max_indices(im: OnnxImporter, elements: SSAValue, maxima: SSAValue, window: Window, column_major: int) -> SSAValue:
    """`[N, C, windows, 1]`: for each window, ONNX's index of its first maximum (in the window's
    row-major order) in the input flattened row-major (with `storage_order` 1, the spatial
    dimensions column-major)."""
    n, c, count, kernel = shape_of(elements)
    order = im.ir.constant(np.arange(kernel), i64)
    unmatched = im.ir.splat(kernel, (kernel,), i64)
    first = im.ir.reduce(tosa.ReduceMinOp, im.ir.select(im.ir.compare(elements, maxima, "eq"), order, unmatched), 3)
    picks = im.ir.binary(arith.AddiOp, first, im.ir.constant(np.arange(count)[:, None] * kernel, i64))
    spatial = im.ir.gather(im.ir.constant(window.flat_positions(bool(column_major)).reshape(-1), i64), picks)
    planes = np.arange(n * c).reshape(n, c, 1, 1) * int(np.prod(window.size))
    return im.ir.binary(arith.AddiOp, spatial, im.ir.constant(planes, i64))


@importer("AveragePool")
def import_average_pool(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    image = im.input(node, 0)
    window = pool_window(node, attrs, shape_of(image))
    if not is_planar(window):
        sums = im.ir.reduce(tosa.ReduceSumOp, window_elements(im, image, window, 0.0), 3)
        counts = window.counts(bool(attrs["count_include_pad"])).reshape(1, 1, -1, 1)
        return [unflatten(im, im.ir.binary(arith.DivfOp, sums, im.ir.constant(counts)), window)]
    pads = tosa_pads(window)
    if attrs["count_include_pad"]:
        (top, left), (bottom, right) = window.begin, window.end
        image = im.ir.pad(image, [0, 0, top, left], [0, 0, bottom, right])
        pads = [0, window.extension[0], 0, window.extension[1]]  # what ceil_mode adds stays uncounted
    return [im.ir.pool(tosa.AvgPool2DOp, image, list(window.kernel), list(window.strides), pads)]


@importer("LpPool")
def import_lp_pool(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """`(Σ |x|^p)^(1/p)` over each window (padding adds 0)."""
    image = im.input(node, 0)
    window = pool_window(node, attrs, shape_of(image))
    powers = im.ir.scalar_op(math.PowFOp, im.ir.unary(math.AbsFOp, image), float(attrs["p"]))
    sums = im.ir.reduce(tosa.ReduceSumOp, window_elements(im, powers, window, 0.0), 3)
    return [unflatten(im, im.ir.scalar_op(math.PowFOp, sums, 1.0 / attrs["p"]), window)]


def spatial_axes(node, image: SSAValue) -> list[int]:
    rank = len(shape_of(image))
    if rank < 3 or 0 in shape_of(image)[2:]:
        raise node_error(node, f"the input must be [N, C, spatial…] and not empty, got {list(shape_of(image))}")
    return list(range(2, rank))


@importer("GlobalAveragePool")
def import_global_average_pool(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    image = im.input(node, 0)
    return [mean(im, image, spatial_axes(node, image))]


@importer("GlobalMaxPool")
def import_global_max_pool(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    image = im.input(node, 0)
    return [reduce_axes(im, tosa.ReduceMaxOp, image, spatial_axes(node, image))]


@importer("BatchNormalization")
def import_batch_norm(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """`(x - mean) · gamma / sqrt(var + eps) + beta` per channel (inference mode)."""
    if attrs["training_mode"]:
        raise node_error(node, "training mode is not supported")
    x = im.input(node, 0)
    rank = len(shape_of(x))
    channels = shape_of(x)[1]
    shape = (1, channels) + (1,) * (rank - 2)
    gamma, beta, mean, var = (im.ir.reshape(im.input(node, i), shape) for i in range(1, 5))
    deviation = im.ir.scalar_op(arith.AddfOp, var, attrs["epsilon"])
    scale = im.ir.binary(arith.DivfOp, gamma, im.ir.unary(math.SqrtOp, deviation))
    centered = im.ir.binary(arith.SubfOp, x, mean)
    return [im.ir.binary(arith.AddfOp, im.ir.binary(arith.MulfOp, centered, scale), beta)]


@importer("Softmax")
def import_softmax(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = im.input(node, 0)
    axis = attrs.axis("axis", len(shape_of(x)))
    shifted = im.ir.binary(arith.SubfOp, x, im.ir.reduce(tosa.ReduceMaxOp, x, axis))
    exponentials = im.ir.unary(math.ExpOp, shifted)
    return [im.ir.binary(arith.DivfOp, exponentials, im.ir.reduce(tosa.ReduceSumOp, exponentials, axis))]


@importer("LRN")
def import_lrn(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """`x / (bias + alpha/size · Σ x²)^beta`, the sum over `size` neighbouring channels."""
    x = im.input(node, 0)
    n, c, h, w = shape_of(x)
    size = attrs["size"]
    squares = im.ir.reshape(im.ir.binary(arith.MulfOp, x, x), (n, 1, c, h * w))
    padded = im.ir.pad(squares, [0, 0, (size - 1) // 2, 0], [0, 0, size // 2, 0])
    window_mean = im.ir.pool(tosa.AvgPool2DOp, padded, [size, 1], [1, 1], [0, 0, 0, 0])
    scaled = im.ir.scalar_op(arith.MulfOp, im.ir.reshape(window_mean, (n, c, h, w)), attrs["alpha"])
    base = im.ir.scalar_op(arith.AddfOp, scaled, attrs["bias"])
    return [im.ir.binary(arith.DivfOp, x, im.ir.scalar_op(math.PowFOp, base, attrs["beta"]))]
