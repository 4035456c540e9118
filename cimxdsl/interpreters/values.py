"""Runtime values of the interpreter: tensors and memrefs are NumPy arrays, scalars Python numbers."""

import math
from collections.abc import Callable

import numpy as np
from xdsl.dialects import bufferization, memref
from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    MemRefType,
    TensorType,
    VectorType,
)
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import InterpretationError

from cimxdsl.device.threads import map_rows, pool_threads
from cimxdsl.dialects import upstream
from cimxdsl.dialects.utils import dense_array, location_prefix, numpy_dtype

VIEWS = (bufferization.ToBufferOp, upstream.ToMemrefOp, memref.CastOp, upstream.CastOp)
"""Ops whose result is their operand's array."""


def element_type(t: Attribute) -> Attribute:
    return t.element_type if isinstance(t, TensorType | MemRefType | VectorType) else t


def is_shaped(t: Attribute) -> bool:
    return isinstance(t, TensorType | MemRefType | VectorType)


def as_type(value, t: Attribute):
    """`value` converted to the runtime representation of type `t` (array or Python scalar).

    An array given for a scalar type stays an array of that dtype: the body of a `linalg.map` or
    `tensor.generate` computes all its elements at once."""
    dtype = numpy_dtype(element_type(t))
    if is_shaped(t) or np.ndim(value) > 0:
        return np.asarray(value).astype(dtype, copy=False)
    scalar = np.asarray(value).astype(dtype).item()
    return scalar


def read_only(value):
    """`value`, as a read-only view when it is an array (a value shared by runs)."""
    if isinstance(value, np.ndarray) and value.flags.writeable:
        value = value.view()
        value.flags.writeable = False
    return value


def constant_value(op: ConstantOp):
    """The runtime value of `arith.constant`."""
    if isinstance(op.value, DenseIntOrFPElementsAttr):
        return dense_array(op.value)
    if isinstance(op.value, IntegerAttr | FloatAttr):
        return as_type(op.value.value.data, op.result.type)
    raise interpretation_error(op, f"constant {op.value} cannot be interpreted")


def op_context(op: Operation) -> str:
    """`file:line:col: 'dialect.op': ` naming `op`, with its place when its location is a file position."""
    return f"{location_prefix(op)}'{op.name}': "


def interpretation_error(op: Operation, message: str) -> InterpretationError:
    """The one-line error of `op` failing to run: its place, its name and `message`."""
    return InterpretationError(op_context(op) + message)


PARALLEL_ELEMENTS = 1 << 16
"""The fewest elements of an element-wise op's result that run in parts on several threads."""


def elementwise(function: Callable):
    """The implementation of an op whose one result is `function` of its operands, converted to
    the result's type; IEEE results (∞ − ∞ = NaN, x / 0 = ±∞) come without NumPy's warnings. A
    large result is computed in slices on the threads of `using_threads` (`in_parts`)."""

    def run(functions: InterpreterFunctions, interpreter: Interpreter, op: Operation, args: PythonValues):
        t = op.results[0].type
        if pool_threads() > 1:  # (a shaped value, or a body's arrays, large enough to split)
            shape = np.broadcast_shapes(*(np.shape(a) for a in args))
            if math.prod(shape) >= PARALLEL_ELEMENTS:
                return (in_parts(function, args, shape, numpy_dtype(element_type(t))),)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            return (as_type(function(*args), t),)

    return run


def in_parts(function: Callable, args, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """`function(*args)` (element-wise `function`, NumPy broadcasting to `shape`) as `dtype`, computed
    in slices along one axis of the result on the pool's threads: the same elements as in one call."""
    arrays = [np.asarray(a) for a in args]
    arrays = [a.reshape((1,) * (len(shape) - a.ndim) + a.shape) for a in arrays]
    size = math.prod(shape)
    axis = next((k for k, n in enumerate(shape) if n >= pool_threads()), int(np.argmax(shape)))
    out = np.empty(shape, dtype)
    lead = (slice(None),) * axis

    def part(r: slice) -> None:
        index = (*lead, r)
        sliced = [a[index] if a.shape[axis] > 1 else a for a in arrays]
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # (per thread)
            np.copyto(out[index], function(*sliced), casting="unsafe")

    map_rows(part, shape[axis], -(-PARALLEL_ELEMENTS // (size // shape[axis])))
    return out


def result_of(op: Operation, value, out=None) -> tuple:
    """`value` as the runtime value of `op`'s single result; an op without results (a linalg op on
    memrefs) writes it into `out`, its destination buffer, instead."""
    if not op.results:
        out[...] = value
        return ()
    return (as_type(value, op.results[0].type),)


def zeros(t: Attribute) -> np.ndarray:
    """A zero-filled array of the shaped type `t`."""
    return np.zeros(t.get_shape(), numpy_dtype(t.element_type))
