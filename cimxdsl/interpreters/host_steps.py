"""Host steps of a prepared function as NumPy calls built once, and runs of them as one step.

Between the products of two layers a network's body is a run of host ops on tensors: bias adds,
ReLUs, batch normalisations, requantizations (element-wise `linalg.generic`s, their bodies run
without the interpreter's dispatch per op), the transposes and reshapes of layout changes and
channel shuffles, pads, poolings, slices and concatenations. Run on the interpreter, each op costs tens of µs of dispatch (its
implementation looked up, its attributes read, its result converted to its type), more than the
NumPy work of most of them. Here each such op is given, when the program is prepared, a function
of its operands with its attributes and result type read once (`host_step`), and each run of
consecutive such steps is one step (`HostRun`) that runs them on values of its own: the values
made and dead inside the run never reach the function's slots, NumPy's floating-point warnings
are set once for the run (IEEE results, as `values.elementwise`), an op whose operands are all
constants is computed once, and an element-wise op one of whose operands is an array the run
made for this op alone writes its result into that array. The listeners see each op with its
operands and results as the interpreter shows them; an error names the op that failed.

The steps run on values of another array backend too (`values`), there: the layouts, slices,
pads, poolings and the element-wise ops of `values.ON_BACKEND`; a run with any other op is
`host_only` (its operands are brought to the host).
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from xdsl.dialects import arith as arith_dialect
from xdsl.dialects import tensor, tosa
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType
from xdsl.dialects.linalg.attrs import IteratorType
from xdsl.dialects.linalg.ops import BroadcastOp, GenericOp, TransposeOp
from xdsl.dialects.linalg.ops import YieldOp as LinalgYieldOp
from xdsl.interpreter import Interpreter
from xdsl.ir import Operation

from cimxdsl.device.threads import pool_threads
from cimxdsl.dialects.utils import numpy_dtype
from cimxdsl.interpreters import arith, math
from cimxdsl.interpreters.linalg import LinearMap, copied_input, loop_sizes
from cimxdsl.interpreters.tensor import checked_slices, pad
from cimxdsl.interpreters.tosa import pooled
from cimxdsl.interpreters.values import (
    ON_BACKEND,
    PARALLEL_ELEMENTS,
    applied,
    as_type,
    common_backend,
    constant_value,
    identity,
    in_parts,
    on_backend,
    read_only,
)

ELEMENTWISE = {**arith.ELEMENTWISE, **math.ELEMENTWISE}
RESHAPES = (tensor.ExpandShapeOp, tensor.CollapseShapeOp, tensor.ReshapeOp)


def on_backend_op(op: Operation) -> bool:
    """Whether `op` is an element-wise op that runs on another array backend (`values.ON_BACKEND`)."""
    function = ELEMENTWISE.get(type(op))
    return function is not None and (function is identity or function in ON_BACKEND)


@dataclass(frozen=True)
class HostStep:
    """An op's implementation as a function of its operands' values, with what a run needs to
    know of it."""

    run: Callable[[tuple], tuple]
    reads: tuple[int, ...]
    """The operands whose values it reads (a tensor result's `outs` is not read)."""
    into: Callable[[tuple, np.ndarray], None] | None = None
    """For an element-wise op whose operands all have its result's type: writes the result into
    an array of that type (one of its operands, dead after it)."""
    fresh: bool = False
    """Whether its result is always a new array (not a view of an operand or a constant)."""
    host_only: bool = False
    """Whether it runs on NumPy arrays only (module docstring)."""
    view: bool = False
    """Whether its result is its operand's array seen in another shape or order (or a copy of it)."""


def static_tensor(t) -> tuple[int, ...] | None:
    """The shape of a tensor type of static shape, else None."""
    if not isinstance(t, TensorType) or DYNAMIC_INDEX in t.get_shape():
        return None
    return tuple(t.get_shape())


def host_step(op: Operation, constant: Callable[[object], object]) -> HostStep | None:
    """`op`'s `HostStep`, or None for an op it does not cover (not a host op on tensors of static
    shapes, or one whose attributes are not all static). `constant`: the value of a value of the
    body that is a constant, else None."""
    if len(op.results) != 1 or any(not isinstance(v.type, TensorType) for v in (*op.operands, *op.results)):
        return None
    shape = static_tensor(op.results[0].type)
    if shape is None:
        return None
    dtype = numpy_dtype(op.results[0].type.element_type)
    operands = tuple(range(len(op.operands)))
    if type(op) in ELEMENTWISE and not op.regions:
        return elementwise_step(op, ELEMENTWISE[type(op)], dtype)
    if isinstance(op, tosa.ClampOp):
        low, high = op.min_val.value.data, op.max_val.value.data
        into = (lambda args, out: np.clip(args[0], low, high, out=out)) if same_types(op) else None
        return HostStep(
            lambda args: (typed(applied(np.clip, (args[0], low, high)), dtype),), operands, into, fresh=True
        )
    if isinstance(op, tosa.MaxPool2DOp | tosa.AvgPool2DOp):
        return HostStep(lambda args: (typed(pooled(op, args[0]), dtype),), (0,), fresh=True)
    if isinstance(op, tensor.EmptyOp):
        value = np.broadcast_to(np.zeros((), dtype), shape)  # (read-only, as `tensor.empty` gives)
        return HostStep(lambda args: (value,), ())
    if isinstance(op, RESHAPES):
        return HostStep(lambda args: (namespace(args).reshape(args[0], shape),), (0,), view=True)
    if isinstance(op, tensor.CastOp):
        return HostStep(lambda args: (args[0],), (0,))
    if isinstance(op, TransposeOp):
        permutation = tuple(op.permutation.get_values())
        return HostStep(
            lambda args: (typed(namespace(args).permute_dims(args[0], permutation), dtype),), (0,), view=True
        )
    if isinstance(op, BroadcastOp):
        dimensions = tuple(op.dimensions.get_values())
        kept = tuple(n if d not in dimensions else 1 for d, n in enumerate(shape))
        return HostStep(
            lambda args: (namespace(args).broadcast_to(namespace(args).reshape(args[0], kept), shape),), (0,)
        )
    if isinstance(op, tensor.ConcatOp):
        axis = op.dim.value.data

        def concat(args):
            backend = common_backend(args)
            return (backend.xp.concat([backend.moved(a) for a in args], axis=axis),)

        return HostStep(concat, operands, fresh=True)
    if isinstance(op, tensor.ExtractSliceOp | tensor.InsertSliceOp):
        return slice_step(op, shape)
    if isinstance(op, tensor.PadOp):
        return pad_step(op, constant)
    if isinstance(op, GenericOp):
        return generic_step(op, shape, dtype)
    return None


def same_types(op: Operation) -> bool:
    return all(v.type == op.results[0].type for v in op.operands)


def typed(value, dtype: np.dtype) -> np.ndarray:
    """`value` as an array of `dtype` (`values.as_type` on a shaped type)."""
    backend = on_backend(value)
    if backend is not None:
        return backend.xp.astype(value, backend.dtype(dtype), copy=False)
    if not isinstance(value, np.ndarray) or value.dtype != dtype:
        value = np.asarray(value).astype(dtype, copy=False)
    return value


def namespace(args: tuple):
    """The array namespace of the first operand of another backend than NumPy, else NumPy's."""
    return common_backend(args).xp


def elementwise_step(op: Operation, function: Callable, dtype: np.dtype) -> HostStep:
    def run(args):
        return (typed(applied(function, args), dtype),)

    ufunc = isinstance(function, np.ufunc)
    into = (lambda args, out: function(*args, out=out)) if ufunc and function.nout == 1 and same_types(op) else None
    return HostStep(run, tuple(range(len(op.operands))), into, fresh=ufunc, host_only=not on_backend_op(op))


def generic_step(op: GenericOp, shape: tuple[int, ...], dtype: np.dtype) -> HostStep | None:
    """An element-wise `linalg.generic` (no reduction loops, maps that pick loops, a body of
    constants and element-wise ops): its body as a function of its inputs over the loops, run once
    over whole arrays — in slices on the threads of `using_threads` when large, as the ops of the
    body run on the interpreter — without the interpreter's dispatch per op of the body."""
    maps = [LinearMap.of(m.data) for m in op.indexing_maps]
    if len(op.outputs) != 1 or any(m is None or not m.picks_loops or len(set(m.loops)) < len(m.loops) for m in maps):
        return None
    if any(t.data == IteratorType.REDUCTION for t in op.iterator_types) or copied_input(op.body) is not None:
        return None
    block = op.body.block
    index = {arg: i for i, arg in enumerate(block.args)}
    program: list[tuple[Callable, tuple[int, ...], object]] = []  # (function, operands, result type)
    for inner in block.ops:
        if isinstance(inner, LinalgYieldOp):
            break
        if isinstance(inner, arith_dialect.ConstantOp):
            value = constant_value(inner)
            program.append((lambda value=value: value, (), None))
        elif (
            type(inner) in ELEMENTWISE
            and not inner.regions
            and len(inner.results) == 1
            and all(v in index for v in inner.operands)  # (no value captured from outside the body)
        ):
            program.append((ELEMENTWISE[type(inner)], tuple(index[v] for v in inner.operands), inner.results[0].type))
        else:
            return None
        index[inner.results[0]] = len(block.args) + len(program) - 1
    if block.last_op.operands[0] not in index:
        return None
    yielded = index[block.last_op.operands[0]]
    out_used = bool(block.args[-1].uses)
    loops = maps[-1].loops
    on_host = not all(on_backend_op(inner) for inner in block.ops if type(inner) in ELEMENTWISE)

    def body(*inputs):
        values = list(inputs) if out_used else [*inputs, None]
        for function, operands, t in program:
            values.append(function() if t is None else as_type(applied(function, [values[i] for i in operands]), t))
        return values[yielded]

    def run(args):
        backend = common_backend(args)
        sizes = loop_sizes(op, maps, args)
        read = args if out_used else args[:-1]
        if backend.is_numpy:
            inputs = [m.view(op, v, sizes) for v, m in zip(read, maps, strict=False)]
            if pool_threads() > 1 and pymath.prod(sizes) >= PARALLEL_ELEMENTS:
                value = in_parts(body, inputs, sizes, dtype)
            else:
                value = np.broadcast_to(np.asarray(body(*inputs)), sizes)
            return (typed(np.transpose(value, loops), dtype),)
        xp = backend.xp
        inputs = [loop_view(xp, backend.moved(v), m, sizes) for v, m in zip(read, maps, strict=False)]
        value = body(*inputs)
        if on_backend(value) is None:  # (a constant)
            value = backend.moved(np.asarray(value))
        value = xp.broadcast_to(value, sizes)
        return (typed(value if list(loops) == sorted(loops) else xp.permute_dims(value, loops), dtype),)

    return HostStep(run, tuple(range(len(op.operands) if out_used else len(op.inputs))), host_only=on_host)


def loop_view(xp, value, linear_map: LinearMap, sizes: tuple[int, ...]):
    """`value` of another backend than NumPy over the loops of `sizes` (size 1 along the loops the
    map does not use), for a map that picks loops (each operand axis one loop, from its constant on)."""
    index = tuple(
        slice(int(c), int(c) + sizes[loop]) for c, loop in zip(linear_map.constants, linear_map.loops, strict=True)
    )
    value = value[index] if index else value
    order = sorted(range(len(linear_map.loops)), key=lambda axis: linear_map.loops[axis])
    if order != sorted(order):
        value = xp.permute_dims(value, tuple(order))
    used = sorted(linear_map.loops)
    return xp.reshape(value, tuple(sizes[d] if d in used else 1 for d in range(len(sizes))))


def slice_step(op: tensor.ExtractSliceOp | tensor.InsertSliceOp, shape: tuple[int, ...]) -> HostStep | None:
    attributes = (op.static_offsets, op.static_sizes, op.static_strides)
    offsets, sizes, strides = (tuple(a.get_values()) for a in attributes)
    extract = isinstance(op, tensor.ExtractSliceOp)
    whole = static_tensor(op.source.type if extract else op.dest.type)
    if whole is None or len(op.operands) != (1 if extract else 2) or len(offsets) != len(whole):
        return None
    try:
        index = checked_slices(op, offsets, sizes, strides, whole)
    except Exception:
        return None  # (the op fails when it is reached, naming itself)
    if extract:
        return HostStep(lambda args: (namespace(args).reshape(args[0][index], shape),), (0,))

    def insert(args):
        backend = common_backend(args)
        xp, (source, dest) = backend.xp, (backend.moved(a) for a in args)
        result = np.array(dest, copy=True) if backend.is_numpy else xp.asarray(dest, copy=True)
        result[index] = xp.reshape(source, result[index].shape)
        return (result,)

    return HostStep(insert, (0, 1), fresh=True)


def pad_step(op: tensor.PadOp, constant: Callable[[object], object]) -> HostStep | None:
    """A pad whose region yields a constant (defined in it, or outside it)."""
    found = pad_parameters(op, constant)
    if found is None:
        return None
    widths, value = found
    return HostStep(lambda args: (pad(args[0], widths, value),), (0,), fresh=True)


def pad_parameters(
    op: tensor.PadOp, constant: Callable[[object], object]
) -> tuple[list[tuple[int, int]], object] | None:
    """The (low, high) widths per axis and the value of a pad of static widths whose region yields a
    constant (defined in it, or outside it: `constant` gives its value); None for any other pad."""
    block = op.region.block
    yielded = block.last_op.operands[0] if block.last_op is not None and len(block.last_op.operands) == 1 else None
    owner = getattr(yielded, "owner", None)
    if isinstance(owner, arith_dialect.ConstantOp) and owner.parent is block:
        value = constant_value(owner)
    elif yielded is not None and owner is not block and not (isinstance(owner, Operation) and owner.parent is block):
        value = constant(yielded)
    else:
        return None
    if value is None or np.ndim(value) != 0 or len(op.operands) != 1:
        return None
    widths = list(zip(op.static_low.get_values(), op.static_high.get_values(), strict=True))
    if DYNAMIC_INDEX in (w for pair in widths for w in pair):
        return None
    return widths, value


@dataclass(frozen=True, slots=True)
class Part:
    """One op of a `HostRun`: its step, the run's values it reads and makes, those that die after
    it, and the operand it writes its result into (-1: none)."""

    op: Operation
    step: HostStep
    operands: tuple[int, ...]
    results: tuple[int, ...]
    dead: tuple[int, ...]
    into: int


class HostRun:
    """The implementation of a run of host steps as one step (module docstring). Its operands
    are the run's first values, its results those it makes that outlive it."""

    def __init__(self, parts: list[Part], initial: list, outputs: tuple[int, ...], listeners: Sequence):
        self.parts, self.initial, self.outputs, self.listeners = parts, initial, outputs, tuple(listeners)
        self.on_backend = not any(part.step.host_only for part in parts)
        """Whether it takes values held on another array backend (`prepared.Step.on_backend`)."""

    def __call__(self, interpreter: Interpreter, op: Operation, args: tuple) -> tuple:
        values = list(self.initial)
        values[: len(args)] = args
        listeners = self.listeners
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            for part in self.parts:
                operands = tuple([values[i] for i in part.operands])
                for listener in listeners:
                    listener.will_interpret_op(part.op, operands)
                try:
                    results = part.step.run(operands) if part.into < 0 else self._into(part, operands)
                except Exception as e:
                    part.op.emit_error("Error while interpreting op", e)
                for listener in listeners:
                    listener.did_interpret_op(part.op, results)
                for i, value in zip(part.results, results, strict=True):
                    values[i] = value
                for i in part.dead:
                    values[i] = None
        return tuple([values[i] for i in self.outputs])

    @staticmethod
    def _into(part: Part, operands: tuple) -> tuple:
        out = operands[part.into]
        if type(out) is not np.ndarray or any(type(a) is not np.ndarray or a.dtype != out.dtype for a in operands):
            return part.step.run(operands)
        part.step.into(operands, out)
        return (out,)


def host_runs(steps: list, constants: dict[int, object], listeners: Sequence) -> list:
    """`steps` with each run of consecutive host steps (`host_step`) as one `HostRun` step.
    `constants`: the values of the constant slots; `listeners`: those that see the ops run."""
    found: list = []
    run: list[tuple] = []  # (step, host step)
    readers: dict[int, int] = {}
    for step in steps:
        for slot in {*step.operands, *(s for _, s in step.captured)}:
            readers[slot] = readers.get(slot, 0) + 1
    given = {  # (new arrays only one step reads: a run may write into them)
        slot
        for step in steps
        if getattr(step.implementation, "fresh", False)
        for slot in step.results
        if readers.get(slot) == 1
    }
    for step in steps:
        host = None
        if step.implementation is None:
            captured = dict(step.captured)
            host = host_step(step.op, lambda v: constants.get(captured.get(v, -1)))
        if host is not None:
            run.append((step, host))
            continue
        if run:
            found.append(joined(run, constants, listeners, given))
            run = []
        found.append(step)
    if run:
        found.append(joined(run, constants, listeners, given))
    return found


def joined(run: list[tuple], constants: dict[int, object], listeners: Sequence, given: set[int] = frozenset()):
    """The `HostRun` step of `run` ((step, host step) each). `given`: the slots whose values are new
    arrays of the step that made them (a layer's product), which an op that reads one last may
    write its result into, as into the arrays the run makes."""
    made = [slot for step, _ in run for slot in step.results]
    inputs = list(dict.fromkeys(s for step, _ in run for s in step.operands if s not in constants and s not in made))
    local = {slot: i for i, slot in enumerate(inputs)}  # a slot's index among the run's values
    initial: list = [None] * len(inputs)
    for step, _ in run:
        for slot in (*step.operands, *step.results):
            if slot not in local:
                local[slot] = len(initial)
                initial.append(constants.get(slot))
    released = {slot for step, _ in run for slot in step.released}
    fresh = {local[s] for s in inputs if s in given}  # the run's values that are new arrays no one else holds
    reads: dict[int, int] = {}  # how many operands of the run's ops each of its values is
    for step, _ in run:
        for i in (local[s] for s in step.operands):
            reads[i] = reads.get(i, 0) + 1
    parts: list[Part] = []
    for step, host in run:
        if all(step.operands[i] in constants for i in host.reads):  # (computed once)
            with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                values = host.run(tuple(constants.get(s) for s in step.operands))
            for slot, value in zip(step.results, values, strict=True):
                constants[slot] = initial[local[slot]] = read_only(value)
            continue
        operands = tuple(local[s] for s in step.operands)
        dead = tuple(local[s] for s in step.released if s in local and s not in inputs)
        into = -1
        if host.into is not None:
            for k in range(len(operands)):
                if (
                    operands[k] in fresh
                    and (operands[k] in dead or operands[k] < len(inputs))
                    and reads[operands[k]] == 1
                ):
                    into = k
                    break
        parts.append(Part(step.op, host, operands, tuple(local[s] for s in step.results), dead, into))
        if host.fresh:
            fresh.update(local[s] for s in step.results)
        elif host.view and operands[0] in fresh and reads[operands[0]] == 1:  # (the array's one handle)
            fresh.update(local[s] for s in step.results if s in released)
    outputs = tuple(slot for slot in made if slot not in released)
    return replace(
        run[0][0],
        op=run[-1][0].op,
        operands=tuple(inputs),
        results=outputs,
        released=tuple(s for s in dict.fromkeys(s for step, _ in run for s in step.released) if s in inputs),
        captured=(),
        implementation=HostRun(parts, initial, tuple(local[s] for s in outputs), listeners),
        observed=True,
    )
