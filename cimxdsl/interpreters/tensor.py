"""NumPy implementations of `tensor`. Tensors are not written: slices, reshapes and `tensor.empty`
are views where NumPy allows."""

import weakref
from collections.abc import Sequence

import numpy as np
from xdsl.dialects import tensor
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType
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

from cimxdsl.device.backend import numpy_dtype_of
from cimxdsl.interpreters.values import common_backend, interpretation_error, numpy_dtype

_STATIC_SLICES: weakref.WeakKeyDictionary[Operation, tuple] = weakref.WeakKeyDictionary()
"""Per slice op: its static offset/size/stride attributes and their values (read once, not per run)."""


def slice_parameters(op: tensor.ExtractSliceOp | tensor.InsertSliceOp, args: PythonValues, first: int):
    """Static offsets/sizes/strides with the dynamic ones taken from the operands after `first`."""
    attributes = (op.static_offsets, op.static_sizes, op.static_strides)
    found = _STATIC_SLICES.get(op)
    if found is None or any(a is not b for a, b in zip(found[0], attributes, strict=True)):
        values = tuple(tuple(a.get_values()) for a in attributes)
        found = _STATIC_SLICES[op] = (attributes, values, any(DYNAMIC_INDEX in v for v in values))
    if not found[2]:
        return found[1]
    dynamic = iter(args[first:])
    return [[next(dynamic) if v == DYNAMIC_INDEX else v for v in static] for static in found[1]]


def checked_slices(op: Operation, offsets, sizes, strides, shape: Sequence[int]) -> tuple[slice, ...]:
    """`slices`, after checking that the slice lies inside `shape` (NumPy would wrap a negative
    offset and clip an overlong slice silently)."""
    for o, s, st, size in zip(offsets, sizes, strides, shape, strict=False):
        if s > 0 and not (0 <= o and o + (s - 1) * st < size):
            raise interpretation_error(
                op,
                f"slice at offsets {list(offsets)} of sizes {list(sizes)} (strides {list(strides)}) "
                f"is out of range for shape {list(shape)}",
            )
    return slices(offsets, sizes, strides, len(shape))


def slices(offsets, sizes, strides, rank: int) -> tuple[slice, ...]:
    assert len(offsets) == rank, "rank-reducing slices are not supported"
    return tuple(slice(o, o + s * st, st) for o, s, st in zip(offsets, sizes, strides, strict=True))


def pad(x: np.ndarray, widths: list[tuple[int, int]], value, order: Sequence[int] | None = None) -> np.ndarray:
    """`x` padded by `widths` (low, high per axis) with `value`, laid out in memory with its axes in
    `order` (outermost first), by default `x`'s own (an NHWC array seen as NCHW stays NHWC in
    memory, as the `im2col` after it reads it)."""
    backend = common_backend((x,))
    if not backend.is_numpy:  # (the layout in memory is the library's)
        padded = backend.full(
            tuple(n + low + high for n, (low, high) in zip(x.shape, widths, strict=True)), value, numpy_dtype_of(x)
        )
        padded[tuple(slice(low, low + n) for n, (low, _) in zip(x.shape, widths, strict=True))] = x
        return padded
    x = np.asarray(x)
    if order is None:
        order = sorted(range(x.ndim), key=lambda a: -x.strides[a])
    shape = [n + low + high for n, (low, high) in zip(x.shape, widths, strict=True)]
    result = np.empty([shape[a] for a in order], x.dtype).transpose(np.argsort(order))
    result.fill(value)
    result[tuple(slice(low, low + n) for n, (low, _) in zip(x.shape, widths, strict=True))] = x
    return result


@register_impls
class TensorFunctions(InterpreterFunctions):
    @impl(tensor.EmptyOp)
    def run_empty(self, interpreter: Interpreter, op: tensor.EmptyOp, args: PythonValues):
        t = op.tensor.type  # zeros, as a read-only view that costs nothing: tensors are not written
        return (np.broadcast_to(np.zeros((), numpy_dtype(t.element_type)), t.get_shape()),)

    @impl(tensor.ExtractSliceOp)
    def run_extract_slice(self, interpreter: Interpreter, op: tensor.ExtractSliceOp, args: PythonValues):
        source = args[0]
        index = checked_slices(op, *slice_parameters(op, args, 1), np.shape(source))
        return (source[index].reshape(op.result.type.get_shape()),)  # a view: tensors are not written

    @impl(tensor.InsertSliceOp)
    def run_insert_slice(self, interpreter: Interpreter, op: tensor.InsertSliceOp, args: PythonValues):
        source, dest = args[0], args[1].copy()
        index = checked_slices(op, *slice_parameters(op, args, 2), dest.shape)
        dest[index] = np.reshape(source, dest[index].shape)
        return (dest,)

    @impl(tensor.ExtractOp)
    def run_extract(self, interpreter: Interpreter, op: tensor.ExtractOp, args: PythonValues):
        index = tuple(args[1:])
        if not all(0 <= i < size for i, size in zip(index, np.shape(args[0]), strict=True)):
            raise interpretation_error(op, f"index {list(index)} is out of range for {op.tensor.type}")
        return (args[0][index].item(),)

    @impl(tensor.CollapseShapeOp)
    def run_collapse(self, interpreter: Interpreter, op: tensor.CollapseShapeOp, args: PythonValues):
        return (np.reshape(args[0], op.result.type.get_shape()),)

    @impl(tensor.ExpandShapeOp)
    def run_expand(self, interpreter: Interpreter, op: tensor.ExpandShapeOp, args: PythonValues):
        return (np.reshape(args[0], op.result.type.get_shape()),)

    @impl(tensor.ReshapeOp)
    def run_reshape(self, interpreter: Interpreter, op: tensor.ReshapeOp, args: PythonValues):
        return (np.reshape(args[0], op.result.type.get_shape()),)

    @impl(tensor.PadOp)
    def run_pad(self, interpreter: Interpreter, op: tensor.PadOp, args: PythonValues):
        padding = interpreter.run_ssacfg_region(op.region, (0,) * len(op.static_low), "tensor.pad")[0]
        widths = list(zip(op.static_low.get_values(), op.static_high.get_values(), strict=True))
        return (pad(np.asarray(args[0]), widths, padding),)

    @impl_terminator(tensor.YieldOp)
    def run_tensor_yield(self, interpreter: Interpreter, op: tensor.YieldOp, args: PythonValues):
        return ReturnedValues(args), ()

    @impl(tensor.ConcatOp)
    def run_concat(self, interpreter: Interpreter, op: tensor.ConcatOp, args: PythonValues):
        return (np.concatenate(args, axis=op.dim.value.data),)

    @impl(tensor.CastOp)
    def run_tensor_cast(self, interpreter: Interpreter, op: tensor.CastOp, args: PythonValues):
        return (args[0],)

    @impl(tensor.SplatOp)
    def run_splat(self, interpreter: Interpreter, op: tensor.SplatOp, args: PythonValues):
        result_type = op.result.type
        assert isinstance(result_type, TensorType)
        return (np.full(result_type.get_shape(), args[0], numpy_dtype(result_type.element_type)),)

    @impl(tensor.InsertOp)
    def run_insert(self, interpreter: Interpreter, op: tensor.InsertOp, args: PythonValues):
        scalar, dest, *indices = args
        result = np.array(dest, copy=True)
        result[tuple(int(i) for i in indices)] = scalar
        return (result,)
