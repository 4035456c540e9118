"""Runtime values of the interpreter: tensors and memrefs are NumPy arrays, scalars Python numbers.

Where a device runs its products on another array backend (`cimxdsl.device.backend`), the values
a layer's product makes stay there, and the element-wise operations that are exactly rounded in
IEEE arithmetic (`ON_BACKEND`: the same bits in every library) run there on them; other
operations get their operands on the host (`prepared`)."""

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

from cimxdsl.device.backend import NUMPY, numpy_dtype_of, on_backend
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
    `tensor.generate` computes all its elements at once. An array of another backend stays there."""
    dtype = numpy_dtype(element_type(t))
    backend = on_backend(value)
    if backend is not None:
        return backend.xp.astype(value, backend.dtype(dtype), copy=False)
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


def identity(x):
    """A conversion's function: the conversion is to the result's type (`as_type`)."""
    return x


def common_backend(values):
    """The backend of the first of `values` on another library than NumPy, else NumPy's."""
    return next((b for b in map(on_backend, values) if b is not None), NUMPY)


ON_BACKEND: dict[Callable, str] = {
    np.add: "add",
    np.subtract: "subtract",
    np.multiply: "multiply",
    np.true_divide: "divide",
    np.maximum: "maximum",
    np.minimum: "minimum",
    np.negative: "negative",
    np.abs: "abs",
    np.sqrt: "sqrt",
    np.rint: "round",
    np.floor: "floor",
    np.ceil: "ceil",
    np.bitwise_and: "bitwise_and",
    np.bitwise_or: "bitwise_or",
    np.bitwise_xor: "bitwise_xor",
    np.left_shift: "bitwise_left_shift",
    np.right_shift: "bitwise_right_shift",
    np.where: "where",
    np.clip: "clip",
}
"""The NumPy functions whose results are exactly rounded (the same bits in every library that
follows IEEE 754), by their name in the array API standard: they run on the operands' backend."""


def applied(function: Callable, args):
    """`function(*args)`: on the backend of the first operand of another library than NumPy, its
    `ON_BACKEND` function with the other operands moved there; else `function` itself. A function
    without a name there (a transcendental one) runs on the operands brought to the host."""
    backend = common_backend(args)
    if backend is NUMPY or function is identity:
        return function(*args)
    name = ON_BACKEND.get(function)
    if name is None:
        return function(*(backend.to_numpy(a) if on_backend(a) is not None else a for a in args))
    like = numpy_dtype_of(next(a for a in args if on_backend(a) is not None))
    operands = [backend.scalar(a, like) if isinstance(a, int | float | bool) else backend.moved(a) for a in args]
    return getattr(backend.xp, name)(*operands)


PARALLEL_ELEMENTS = 1 << 16
"""The fewest elements of an element-wise op's result that run in parts on several threads."""


def elementwise(function: Callable):
    """The implementation of an op whose one result is `function` of its operands, converted to
    the result's type; IEEE results (∞ − ∞ = NaN, x / 0 = ±∞) come without NumPy's warnings. A
    large result is computed in slices on the threads of `using_threads` (`in_parts`)."""

    def run(functions: InterpreterFunctions, interpreter: Interpreter, op: Operation, args: PythonValues):
        t = op.results[0].type
        if any(on_backend(a) is not None for a in args):
            return (as_type(applied(function, args), t),)
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
