"""Prepared execution: a function interpreted with its values resolved once.

The interpreter functions stay the definition of every op. Preparing a function resolves, once,
each SSA value of its body to a slot of a list, and evaluates its constants (`arith.constant` and
the side-effect-free ops computed from them alone); a call then runs the ops in order on the slots
through `Interpreter.run_op`, without the interpreter's scopes. Values are released after their
last use as in `lifetimes`. Ops with regions run their regions on the interpreter, with the values
they capture from the body put in its scope. The products of whole layers may replace the tile
products of the body (`layer_products`).

On a device whose products run on another array backend (`cimxdsl.device.backend`), the
function's arguments move there and values stay there through the steps that take such values
(`Step.on_backend`: layer products, patches, views, element-wise ops and runs of host steps made
of such ops); any other step gets its operands moved to the host (once: its slots then hold them),
and the function's results are NumPy arrays.

A function whose body has several blocks, or uses ops that read the interpreter's environment
beyond their operands (the concurrent cores of `pim` and `spat`), runs on the interpreter.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace

import numpy as np
from xdsl.dialects import bufferization, func
from xdsl.dialects.builtin import MemRefType, TensorType
from xdsl.interpreter import Interpreter
from xdsl.ir import Operation, SSAValue
from xdsl.traits import ConstantLike, SymbolTable, is_side_effect_free

from cimxdsl.device.backend import NUMPY, on_backend, to_host
from cimxdsl.dialects import pim, spatial
from cimxdsl.interpreters.host_steps import host_runs
from cimxdsl.interpreters.layer_products import fuse_layer_products
from cimxdsl.interpreters.lifetimes import ValueReleaser, block_ops
from cimxdsl.interpreters.runtime import CrossbarRuntime
from cimxdsl.interpreters.values import VIEWS, read_only

ENVIRONMENT_DIALECTS = (pim.Pim.name, spatial.Spatial.name)
"""Dialects whose interpreter functions read values of the environment that are not operands."""


@dataclass(frozen=True, eq=False, slots=True)
class Step:
    """One op of the body: the slots it reads, writes and releases."""

    op: Operation
    operands: tuple[int, ...]
    results: tuple[int, ...]
    released: tuple[int, ...]
    captured: tuple[tuple[SSAValue, int], ...]
    """Values of the body used inside the op's regions, with their slots."""
    implementation: Callable[[Interpreter, Operation, tuple], tuple] | None = None
    """What runs instead of the op's registered implementation (a call with its callee looked up
    once, a layer's product, `layer_products`); None: the op runs on the interpreter (`Interpreter.run_op`)."""
    observed: bool = False
    """Whether the implementation shows the listeners the ops it runs, and names the op that fails,
    itself (a run of host steps, `host_steps`)."""
    on_backend: bool = False
    """Whether it takes operands held on another array backend than NumPy (module docstring)."""


class PreparedFunction:
    """`function` of `interpreter`'s module, prepared once and callable on many inputs. The
    interpreter's listeners observe the ops it runs; `listeners` (its own but `ValueReleaser`) the
    steps that replace ops (layer products, with `runtime`, the state of the crossbar ops)."""

    def __init__(
        self,
        interpreter: Interpreter,
        function: func.FuncOp,
        listeners: Sequence[Interpreter.Listener] = (),
        runtime: CrossbarRuntime | None = None,
    ):
        self.interpreter = interpreter
        self.function = function
        self.listeners = tuple(listeners)
        self.runtime = runtime
        self.steps: list[Step] | None = None
        self.fused: list[Step] | None = None
        """The steps with the tiles of each product run as one (`layer_products`), if any are, and
        each run of host steps as one (`host_steps`)."""
        self.constants: list = []
        self.arguments: tuple[int, ...] = ()
        self._callees: dict[str, Callable | None] = {}
        ops = preparable(function)
        if ops is not None:
            with cyclic_collector_paused():
                self._prepare(ops)

    def __call__(self, arguments: Sequence, layer_products: bool = False) -> tuple:
        """The results of the function on `arguments`; with `layer_products` (not for read noise,
        nor while calibrating) the products of whole layers at once."""
        if self.steps is None:
            return self.interpreter.call_op(self.function, tuple(arguments))
        slots = list(self.constants)
        backend = self.runtime.device.backend if self.runtime is not None else NUMPY
        device = layer_products and not backend.is_numpy  # (the arguments moved there)
        for slot, value in zip(self.arguments, arguments, strict=True):
            slots[slot] = backend.moved(value) if device and isinstance(value, np.ndarray) else value
        returned = self.function.body.block.last_op  # (`func.return`: the function's results are its operands)
        for step in self.fused if layer_products and self.fused else self.steps:
            args = tuple([slots[i] for i in step.operands])
            if device and not step.on_backend:
                args = on_host(args, step.operands, slots)
            values = self._run(step, args, slots)
            if step.op is returned:
                return tuple(to_host(a) for a in args) if device else args
            for slot, value in zip(step.results, values, strict=True):
                slots[slot] = value
            for slot in step.released:
                slots[slot] = None
        return ()

    def _run(self, step: Step, args: tuple, slots: list) -> tuple:
        interpreter = self.interpreter
        if not step.captured:
            return interpreter.run_op(step.op, args) if step.implementation is None else self._dispatch(step, args)
        interpreter.push_scope("prepared")
        try:
            interpreter.set_values((value, slots[slot]) for value, slot in step.captured)
            return self._dispatch(step, args)
        finally:
            interpreter.pop_scope()

    def _dispatch(self, step: Step, args: tuple) -> tuple:
        """The op run by the interpreter or, for a step with its own implementation, that one,
        observed and reported as the interpreter runs an op."""
        if step.implementation is None:
            return self.interpreter.run_op(step.op, args)
        if step.observed:
            return step.implementation(self.interpreter, step.op, args)
        for listener in self.listeners:
            listener.will_interpret_op(step.op, args)
        try:
            values = step.implementation(self.interpreter, step.op, args)
        except Exception as e:
            step.op.emit_error("Error while interpreting op", e)
        for listener in self.listeners:
            listener.did_interpret_op(step.op, values)
        return values

    def _prepare(self, ops: list[Operation]) -> None:
        block = self.function.body.block
        index: dict[int, int] = {}  # a value's slot, by `id` (hashing IR objects runs Python code)
        for value in block.args:
            index[id(value)] = len(index)
        self.arguments = tuple(range(len(index)))
        for listener in self.interpreter.listeners:
            if isinstance(listener, ValueReleaser):
                listener.leave(ops)
        found: list[tuple] = []  # (op, operands, results, captured, implementation) of each step
        last: dict[int, int] = {}  # the last step that reads a slot (`lifetimes`)
        kept: set[int] = set()  # slots never released (`pim.ADDRESS`)
        constants: dict[int, object] = {}  # by slot
        calls: dict[int, Callable | None] = {}  # by callee attribute (`id`): its name read once
        for op in ops:
            operands = tuple(map(index.__getitem__, map(id, op.operands)))
            results = op.results
            constant, view, call = _KINDS.get(type(op)) or op_kind(op)
            if results and not op.regions:
                if view and operands[0] in constants:  # (its operand's array, `VIEWS`)
                    index[id(results[0])] = len(index)
                    constants[len(index) - 1] = constants[operands[0]]
                    continue
                if constant or (operands and operands[0] in constants and constant_foldable(op, operands, constants)):
                    values = self._fold(op, tuple([constants[s] for s in operands]))
                    if values is not None:  # (else the op fails when it is reached, naming itself)
                        for value, result in zip(results, values, strict=True):
                            constants[len(index)] = read_only(result)
                            index[id(value)] = len(index)
                        continue
            first = len(index)
            for value in results:
                index[id(value)] = len(index)
            if results and pim.ADDRESS in op.attributes:
                kept.update(range(first, len(index)))
            step = len(found)
            for slot in operands:
                last[slot] = step
            captured = ()
            if op.regions:
                captured = tuple([(v, index[id(v)]) for v in captured_values(op)])
                for _, slot in captured:
                    last[slot] = step
            implementation = None
            if call:
                callee = id(op.callee)
                implementation = calls[callee] if callee in calls else calls.setdefault(callee, self._call(op))
            found.append((op, operands, tuple(range(first, len(index))), captured, implementation))
        released: list[list[int]] = [[] for _ in found]
        for slot in sorted(last.keys() - constants.keys() - kept):
            released[last[slot]].append(slot)
        steps = [
            Step(op, operands, results, tuple(dead), captured, implementation)
            for (op, operands, results, captured, implementation), dead in zip(found, released, strict=True)
        ]
        self.constants = [None] * len(index)
        for key, value in constants.items():
            self.constants[key] = value
        self.steps = steps
        fused = fuse_layer_products(steps, constants, self.runtime) if self.runtime is not None else None
        self.fused = [
            replace(step, on_backend=takes_backend_values(step))
            for step in host_runs(steps if fused is None else fused, constants, self.listeners)
        ]

    def _call(self, op: func.CallOp) -> Callable[[Interpreter, Operation, tuple], tuple] | None:
        """A call with its callee looked up once: a declaration's external function (as
        `func.func` is called without a body), or the callee entered (`Interpreter.call_op`)."""
        name = op.callee.string_value()
        if name in self._callees:
            return self._callees[name]
        callee = SymbolTable.lookup_symbol(self.interpreter.module, op.callee)
        if not isinstance(callee, func.FuncOp):
            found = None  # (fails when reached, as the interpreter fails)
        elif not callee.body.blocks:
            symbol = callee.sym_name.data
            found = lambda interpreter, op, args: interpreter.call_external(symbol, callee, args)  # noqa: E731
        else:
            found = lambda interpreter, op, args: interpreter.call_op(callee, args)  # noqa: E731
        self._callees[name] = found
        return found

    def _fold(self, op: Operation, operands: tuple) -> tuple | None:
        """The values of a constant op on its constant `operands`, or None if computing them fails
        (or it has no implementation)."""
        interpreter, listeners = self.interpreter, self.interpreter.listeners
        interpreter.listeners = ()  # (evaluated while preparing, not run)
        try:
            return interpreter.run_op(op, operands)
        except Exception:
            return None
        finally:
            interpreter.listeners = listeners


@contextmanager
def cyclic_collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused inside: building many long-lived objects (a large
    program's steps, millions of instruction ops) would otherwise trigger full collections that
    traverse them, and the IR, again and again. Reference counting still frees what it can."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def on_host(args: tuple, operands: tuple[int, ...], slots: list) -> tuple:
    """`args` with the values held on another array backend moved to the host, and their slots
    `operands` holding them there from now on."""
    if all(on_backend(a) is None for a in args):
        return args
    moved = tuple(to_host(a) for a in args)
    for slot, value in zip(operands, moved, strict=True):
        slots[slot] = value
    return moved


def takes_backend_values(step: Step) -> bool:
    """Whether `step` runs on operands held on another array backend (`Step.on_backend`)."""
    if step.implementation is not None:
        return getattr(step.implementation, "on_backend", False)
    return isinstance(step.op, (*VIEWS, bufferization.AllocTensorOp, func.ReturnOp))


def captured_values(op: Operation) -> list[SSAValue]:
    """The values of `op`'s block that ops inside `op`'s regions use."""
    block, seen = op.parent, {}
    for inner in op.walk():
        if inner is op:
            continue
        for value in inner.operands:
            owner = value.owner
            if owner is block or (isinstance(owner, Operation) and owner.parent is block):
                seen.setdefault(id(value), value)
    return list(seen.values())


def preparable(function: func.FuncOp) -> list[Operation] | None:
    """The ops of the body if it is one block of ops that read only their operands (module
    docstring), else None."""
    blocks = function.body.blocks
    if len(blocks) != 1:
        return None
    ops = block_ops(blocks[0])
    kinds = {type(op) for op in ops}
    kinds.update(type(inner) for op in ops if op.regions for inner in op.walk())
    return None if any(kind.dialect_name() in ENVIRONMENT_DIALECTS for kind in kinds) else ops


def constant_foldable(op: Operation, operands: tuple[int, ...], constants: dict[int, object]) -> bool:
    """Whether `op` (without regions) is side-effect-free and reads shaped constants alone (an op
    of scalars only, as `tensor.empty` of constant sizes, makes a fresh buffer every run).
    `operands`: its operands' slots; `constants`: the constant slots' values."""
    return (
        bool(operands)
        and all(s in constants for s in operands)
        and any(isinstance(v.type, TensorType | MemRefType) for v in op.operands)
        and is_side_effect_free(op)
    )


def op_kind(op: Operation) -> tuple[bool, bool, bool]:
    """Whether ops of `op`'s type are constants (`ConstantLike`), views (`VIEWS`) and calls."""
    _KINDS[type(op)] = (op.has_trait(ConstantLike), isinstance(op, VIEWS), isinstance(op, func.CallOp))
    return _KINDS[type(op)]


_KINDS: dict[type, tuple[bool, bool, bool]] = {}
"""`op_kind` of the op types met (traits and classes are the type's)."""
