"""Shapes and data movement: reshapes, transposes, concatenation, gathers, slices, padding, casts."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import onnx
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType, f32, i1, i32, i64
from xdsl.ir import Attribute, SSAValue

from cimxdsl.frontend.attributes import node_error
from cimxdsl.frontend.builder import shape_of
from cimxdsl.frontend.folding import CONSTANT_ONLY
from cimxdsl.frontend.registry import importer

if TYPE_CHECKING:
    from cimxdsl.frontend.onnx_importer import OnnxImporter


def output_shape(im: OnnxImporter, node) -> tuple[int, ...]:
    shape = im.shapes.get(node.output[0])
    if shape is None:
        raise node_error(node, "the output shape is unknown")
    return im.static_shape(node.output[0], shape)


def reshape_target(node, attrs, source: tuple[int, ...], target: np.ndarray) -> tuple[int, ...]:
    """ONNX Reshape's result shape: a 0 copies the source's dimension (unless `allowzero`), one -1
    takes what is left."""
    dims = [int(d) for d in target.reshape(-1)]
    if not attrs["allowzero"]:
        dims = [source[i] if d == 0 and i < len(source) else d for i, d in enumerate(dims)]
    known = int(np.prod([d for d in dims if d != -1]))
    if dims.count(-1) == 1 and known > 0:
        dims[dims.index(-1)] = int(np.prod(source)) // known
    if dims.count(-1) > 0 or any(d < 0 for d in dims) or int(np.prod(dims)) != int(np.prod(source)):
        raise node_error(node, f"cannot reshape {list(source)} into {[int(d) for d in target.reshape(-1)]}")
    return tuple(dims)


@importer("Reshape")
def import_reshape(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """The target from the shape operand when it folded to a constant (shapes computed from the
    static input shapes), else from shape inference."""
    x = im.input(node, 0)
    target = im.optional_constant(node, 1)
    shape = output_shape(im, node) if target is None else reshape_target(node, attrs, shape_of(x), target)
    return [im.ir.reshape(x, shape)]


SQUEEZES: dict[str, Callable] = {"Squeeze": np.squeeze, "Unsqueeze": np.expand_dims}


@importer(*SQUEEZES)
def import_squeeze(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """Squeeze or Unsqueeze by NumPy's function on constant axes (Squeeze without axes: every
    dimension of 1); run-time axes take the shape inference's result."""
    x = im.input(node, 0)
    given = node.input[1] if len(node.input) > 1 else ""
    if given and given not in im.constants:
        return [im.ir.reshape(x, output_shape(im, node))]
    axes = tuple(int(a) for a in np.ravel(im.constants[given])) if given else None
    try:  # on a zero-stride view of the input's shape: nothing is allocated
        shape = SQUEEZES[node.op_type](np.broadcast_to(np.empty((), np.int8), shape_of(x)), axes).shape
    except (ValueError, TypeError) as e:
        raise node_error(node, f"axes {axes} do not fit a {list(shape_of(x))} input ({e})") from None
    return [im.ir.reshape(x, shape)]


@importer("Flatten")
def import_flatten(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = im.input(node, 0)
    shape = shape_of(x)
    axis = attrs.axis("axis", len(shape), end=True)
    return [im.ir.reshape(x, (int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))))]


@importer("Transpose")
def import_transpose(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = im.input(node, 0)
    permutation = attrs.permutation("perm", len(shape_of(x)))
    return [im.ir.transpose(x, permutation)]


@importer("Concat")
def import_concat(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    values = [im.input(node, i) for i in range(len(node.input))]
    return [im.ir.concat(values, attrs.axis("axis", len(shape_of(values[0]))))]


@importer("Dropout")
def import_dropout(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """The input, and a mask that keeps every element: inference, or training with ratio 0 (a
    training dropout of a positive ratio is random)."""
    x = im.input(node, 0)
    training = node.input[2] if len(node.input) > 2 else ""
    if training and (training not in im.constants or bool(im.constants[training])):
        ratio = im.optional_constant(node, 1)
        if ratio is None or float(ratio) != 0.0:
            raise node_error(node, "training mode (random dropout) is supported only with a constant ratio of 0")
    return [x, im.ir.constant(np.ones(shape_of(x), bool), i1)]


@importer("Identity")
def import_identity(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    return [im.input(node, 0)]


@importer("Pad")
def import_pad(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """`constant` padding, or `edge`/`reflect`/`wrap`: a gather along each padded axis of the
    source index of every padded position."""
    given = [int(p) for p in im.constant(node, 1, "pads")]
    value = im.optional_constant(node, 2)
    x = im.input(node, 0)
    rank = len(shape_of(x))
    axes = im.optional_constant(node, 3)
    axes = list(range(rank)) if axes is None else [int(a) % rank for a in np.ravel(axes)]
    if len(given) != 2 * len(axes):
        raise node_error(node, f"pads must have 2 entries per padded axis ({2 * len(axes)}), got {len(given)}")
    low, high = [0] * rank, [0] * rank
    for i, axis in enumerate(axes):
        low[axis], high[axis] = given[i], given[i + len(axes)]
    if attrs["mode"] == "constant":
        return [im.ir.pad(x, low, high, float(value) if value is not None else 0.0)]
    if min(low + high) < 0:
        raise node_error(node, f"negative pads are supported in constant mode only, got {given}")
    for axis, (before, after) in enumerate(zip(low, high, strict=True)):
        if before or after:
            if shape_of(x)[axis] == 0:
                raise node_error(node, f"axis {axis} is empty: there is nothing to pad it with")
            source = np.pad(np.arange(shape_of(x)[axis]), (before, after), attrs["mode"])  # NumPy's modes are ONNX's
            x = take(im, x, im.ir.constant(source, i64), axis)
    return [x]


@importer("Gather")
def import_gather(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """`data` indexed along `axis` (embedding lookups)."""
    data = im.input(node, 0)
    shape = shape_of(data)
    axis = attrs.axis("axis", len(shape))
    return [take(im, data, index_operand(im, node, 1, np.array(shape[axis]), np.array(axis)), axis)]


def index_operand(im: OnnxImporter, node, index: int, sizes: np.ndarray, axes: np.ndarray) -> SSAValue:
    """Input `index` as i64 indices into axes `axes` of sizes `sizes` (both broadcast over the
    indices), negative ones counted from the end: constant indices are checked here, run-time ones
    when the gather runs (an index out of range is an error)."""
    constant = im.optional_constant(node, index)
    if constant is not None:
        indices = np.asarray(constant).astype(np.int64)
        sizes = np.broadcast_to(sizes, indices.shape)
        outside = (indices < -sizes) | (indices >= sizes)
        if outside.any():
            bad, axis, size = (int(a[outside].flat[0]) for a in (indices, np.broadcast_to(axes, indices.shape), sizes))
            raise node_error(node, f"index {bad} is out of range for axis {axis} of size {size}")
        return im.ir.constant(np.where(indices < 0, indices + sizes, indices), i64)
    value = im.input(node, index)
    if not is_integer(value) or value.type.element_type == i1:
        raise node_error(node, "the indices must be integers")
    value = convert(im, value, i64)
    sizes = im.ir.constant(np.broadcast_to(sizes, shape_of(value)), i64)
    wrapped = im.ir.binary(arith.AddiOp, value, sizes)
    # -size <= index < 0 exactly when 0 <= index + size < size, one unsigned comparison; an index out
    # of range stays as given, for the gather to report
    return im.ir.select(im.ir.compare(wrapped, sizes, "ult"), wrapped, value)


def operand_shape(im: OnnxImporter, node, index: int) -> tuple[int, ...]:
    """The shape of input `index`, a constant or a run-time value."""
    name = node.input[index]
    return np.shape(im.constants[name]) if name in im.constants else shape_of(im.input(node, index))


@importer("GatherElements")
def import_gather_elements(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """`data` at the indices along `axis` and, along the other axes, at each index's own position."""
    data = im.input(node, 0)
    shape = shape_of(data)
    rank = len(shape)
    axis = attrs.axis("axis", rank)
    positions = operand_shape(im, node, 1)
    if len(positions) != rank or any(p > d for a, (p, d) in enumerate(zip(positions, shape)) if a != axis):
        raise node_error(node, f"indices of shape {list(positions)} do not fit data of shape {list(shape)}")
    indices = im.ir.reshape(index_operand(im, node, 1, np.array(shape[axis]), np.array(axis)), (*positions, 1))
    grids = np.indices(positions)[..., None]
    columns = [indices if a == axis else im.ir.constant(grids[a], i64) for a in range(rank)]
    return [im.ir.gather_points(data, im.ir.concat(columns, rank))]


@importer("GatherND")
def import_gather_nd(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """Slices of `data` at the coordinates along the last dimension of the indices, within each of
    the leading `batch_dims` entries."""
    data = im.input(node, 0)
    shape = shape_of(data)
    batch = attrs["batch_dims"]
    positions = operand_shape(im, node, 1)
    count = positions[-1] if positions else 0
    if not positions or batch >= len(positions) or batch + count > len(shape) or positions[:batch] != shape[:batch]:
        raise node_error(
            node, f"indices of shape {list(positions)} do not fit data of shape {list(shape)} (batch_dims {batch})"
        )
    axes = np.arange(batch, batch + count)
    coordinates = index_operand(im, node, 1, np.array(shape)[axes], axes)
    if batch:
        columns = [im.ir.constant(grid[..., None], i64) for grid in np.indices(positions[:-1])[:batch]]
        coordinates = im.ir.concat([*columns, coordinates], len(positions) - 1)
    return [im.ir.gather_points(data, coordinates)]


def take(im: OnnxImporter, data: SSAValue, indices: SSAValue, axis: int) -> SSAValue:
    """`np.take(data, indices, axis)` for indices in range: the axis is moved first for the gather."""
    rank = len(shape_of(data))
    order = [axis, *(d for d in range(rank) if d != axis)]
    gathered = im.ir.gather(im.ir.transpose(data, order), indices)
    count = len(shape_of(indices))
    # gathered is (*indices, *data without axis): put the index dimensions back at `axis`
    permutation = [*range(count, count + axis), *range(count), *range(count + axis, count + rank - 1)]
    return im.ir.transpose(gathered, permutation)


@importer("Expand")
def import_expand(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = im.input(node, 0)
    target = [int(d) for d in np.ravel(im.constant(node, 1, "the shape"))]
    try:
        shape = np.broadcast_shapes(shape_of(x), tuple(target))
    except ValueError:
        raise node_error(node, f"{list(shape_of(x))} does not broadcast to {target}") from None
    return [im.ir.broadcast(x, shape)]


CAST_TYPES = {
    onnx.TensorProto.FLOAT: f32,
    onnx.TensorProto.DOUBLE: f32,
    onnx.TensorProto.FLOAT16: f32,
    onnx.TensorProto.INT64: i64,
    onnx.TensorProto.INT32: i32,
    onnx.TensorProto.BOOL: i1,
}
"""What Cast converts to (floats are computed in f32)."""


@importer("Cast")
def import_cast(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = im.input(node, 0)
    if attrs["to"] not in CAST_TYPES:
        raise node_error(node, f"casting to {onnx.TensorProto.DataType.Name(attrs['to'])} is not supported")
    return [convert(im, x, CAST_TYPES[attrs["to"]])]


@importer("CastLike")
def import_cast_like(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    return [convert(im, im.input(node, 0), im.input(node, 1).type.element_type)]


def convert(im: OnnxImporter, x: SSAValue, target: Attribute) -> SSAValue:
    """`x` as `target` elements: floats truncate towards zero, booleans are 0/1, non-zero is true."""
    source = x.type.element_type
    if source == target:
        return x
    if target == i1:
        return im.ir.compare(x, im.ir.splat(0, shape_of(x), source), "ne")
    if target == f32:
        kind = arith.UIToFPOp if source == i1 else arith.SIToFPOp
    elif source == f32:
        kind = arith.FPToSIOp
    elif source.width.data > target.width.data:
        kind = arith.TruncIOp
    else:
        kind = arith.ExtUIOp if source == i1 else arith.ExtSIOp
    return im.ir.map(lambda element: kind(element, target), [x], target)


def is_integer(value: SSAValue) -> bool:
    return isinstance(value.type.element_type, IntegerType)


@importer("Slice")
def import_slice(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """Constant starts, ends, axes and steps; negative steps read the elements in reverse (a gather)."""
    x = im.input(node, 0)
    shape = shape_of(x)
    rank = len(shape)
    starts, ends = (np.ravel(im.constant(node, i, name)).astype(np.int64) for i, name in ((1, "starts"), (2, "ends")))
    axes = im.optional_constant(node, 3)
    axes = np.arange(len(starts)) if axes is None else np.ravel(axes).astype(np.int64)
    steps = im.optional_constant(node, 4)
    steps = np.ones(len(starts), np.int64) if steps is None else np.ravel(steps).astype(np.int64)
    if not len(starts) == len(ends) == len(axes) == len(steps) or any(not -rank <= a < rank for a in axes):
        raise node_error(node, "starts, ends, axes and steps must have one entry per sliced axis")
    if (steps == 0).any():
        raise node_error(node, "steps must not be 0")
    ranges = [range(d) for d in shape]
    for start, end, axis, step in zip(starts, ends, axes, steps, strict=True):
        ranges[axis % rank] = range(shape[axis % rank])[slice(int(start), int(end), int(step))]
    forward = [r if r.step > 0 else r[::-1] for r in ranges]
    offsets = [r.start if len(r) else 0 for r in forward]
    x = im.ir.slice(x, offsets, [len(r) for r in forward], [r.step if len(r) > 1 else 1 for r in forward])
    for axis, r in enumerate(ranges):
        if r.step < 0 and len(r) > 1:
            x = take(im, x, im.ir.constant(np.arange(len(r) - 1, -1, -1), i64), axis)
    return [x]


@importer("Split")
def import_split(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    x = im.input(node, 0)
    axis = attrs.axis("axis", len(shape_of(x)))
    size = shape_of(x)[axis]
    given = im.constant(node, 1, "split") if len(node.input) > 1 and node.input[1] else None
    if given is None and attrs["split"] is not None:
        given = np.array(attrs["split"])
    if given is not None:
        sizes = [int(s) for s in np.ravel(given)]
    else:
        parts = attrs["num_outputs"] or len(node.output)
        chunk = -(-size // parts)
        sizes = [min(chunk, size - i * chunk) for i in range(parts)]
    if sum(sizes) != size or any(s < 0 for s in sizes):
        raise node_error(node, f"the parts {sizes} do not add up to the axis size {size}")
    outputs, offset = [], 0
    for part in sizes:
        offsets, extents = [0] * len(shape_of(x)), list(shape_of(x))
        offsets[axis], extents[axis] = offset, part
        outputs.append(im.ir.slice(x, offsets, extents))
        offset += part
    return outputs


@importer(*CONSTANT_ONLY)
def constant_only(im: OnnxImporter, node, attrs) -> list[SSAValue]:
    """Ops whose result shape depends on input values: supported only when those are constant."""
    raise node_error(node, "its inputs must be constants (the result's shape must be known when compiling)")
