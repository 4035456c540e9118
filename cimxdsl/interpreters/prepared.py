"""Prepared execution: a function interpreted with its values resolved once.

The interpreter functions stay the definition of every op. Preparing a function resolves, once,
each SSA value of its body to a slot of a list, and evaluates its constants (`arith.constant` and
the side-effect-free ops computed from them alone); a call then runs the ops in order on the slots
through `Interpreter.run_op`, without the interpreter's scopes. Values are released after their
last use as in `lifetimes`. Ops with regions run their regions on the interpreter, with the values
they capture from the body put in its scope. The products of whole layers may replace the tile
products of the body (`layer_products`).

A function whose body has several blocks, or uses ops that read the interpreter's environment
beyond their operands (the concurrent cores of `pim` and `spat`), runs on the interpreter.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, TensorType
from xdsl.interpreter import Interpreter
from xdsl.ir import Operation, SSAValue
from xdsl.traits import ConstantLike, SymbolTable, is_side_effect_free

from cimxdsl.dialects import pim, spatial
from cimxdsl.interpreters.layer_products import fuse_layer_products
from cimxdsl.interpreters.lifetimes import ValueReleaser, dying_values
from cimxdsl.interpreters.runtime import CrossbarRuntime
from cimxdsl.interpreters.values import VIEWS, read_only

ENVIRONMENT_DIALECTS = (pim.Pim.name, spatial.Spatial.name)
"""Dialects whose interpreter functions read values of the environment that are not operands."""


@dataclass(frozen=True, eq=False)
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
        """The steps with the tiles of each product run as one (`layer_products`), if any are."""
        self.constants: list = []
        self.arguments: tuple[int, ...] = ()
        self._callees: dict[str, Callable | None] = {}
        if preparable(function):
            with cyclic_collector_paused():
                self._prepare()

    def __call__(self, arguments: Sequence, layer_products: bool = False) -> tuple:
        """The results of the function on `arguments`; with `layer_products` (not for read noise,
        nor while calibrating) the products of whole layers at once."""
        if self.steps is None:
            return self.interpreter.call_op(self.function, tuple(arguments))
        slots = list(self.constants)
        for slot, value in zip(self.arguments, arguments, strict=True):
            slots[slot] = value
        returned = self.function.body.block.last_op  # (`func.return`: the function's results are its operands)
        for step in self.fused if layer_products and self.fused else self.steps:
            args = tuple([slots[i] for i in step.operands])
            values = self._run(step, args, slots)
            if step.op is returned:
                return args
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
        for listener in self.listeners:
            listener.will_interpret_op(step.op, args)
        try:
            values = step.implementation(self.interpreter, step.op, args)
        except Exception as e:
            step.op.emit_error("Error while interpreting op", e)
        for listener in self.listeners:
            listener.did_interpret_op(step.op, values)
        return values

    def _prepare(self) -> None:
        block = self.function.body.block
        index: dict[int, int] = {}

        def slot(value: SSAValue) -> int:
            return index.setdefault(id(value), len(index))

        self.arguments = tuple(slot(a) for a in block.args)
        dying = dying_values(block)
        for listener in self.interpreter.listeners:
            if isinstance(listener, ValueReleaser):
                listener.leave(block)
        steps, constants = [], {}
        for op in block.ops:
            if constant_foldable(op, constants):
                values = self._fold(op, constants)
                if values is not None:  # (else the op fails when it is reached, naming itself)
                    for value, result in zip(op.results, values, strict=True):
                        constants[id(value)] = read_only(result)
                        slot(value)
                    continue
            steps.append(
                Step(
                    op,
                    tuple(slot(v) for v in op.operands),
                    tuple(slot(v) for v in op.results),
                    tuple(slot(v) for v in dying[id(op)] if id(v) not in constants),
                    tuple((v, slot(v)) for v in captured_values(op)),
                    self._call(op) if isinstance(op, func.CallOp) else None,
                )
            )
        self.constants = [None] * len(index)
        for key, value in constants.items():
            self.constants[index[key]] = value
        self.steps = steps
        if self.runtime is not None:
            self.fused = fuse_layer_products(steps, {index[key]: v for key, v in constants.items()}, self.runtime)

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

    def _fold(self, op: Operation, constants: dict) -> tuple | None:
        """The values of a constant op, or None if computing them fails (or it has no implementation)."""
        interpreter, listeners = self.interpreter, self.interpreter.listeners
        interpreter.listeners = ()  # (evaluated while preparing, not run)
        try:
            return interpreter.run_op(op, tuple(constants[id(v)] for v in op.operands))
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


def preparable(function: func.FuncOp) -> bool:
    """Whether the body is one block of ops that read only their operands (module docstring)."""
    blocks = function.body.blocks
    if len(blocks) != 1:
        return False
    kinds = {type(op) for op in function.walk()}
    return not any(kind.dialect_name() in ENVIRONMENT_DIALECTS for kind in kinds)


def constant_foldable(op: Operation, constants: dict) -> bool:
    """A constant, a view of a constant (its read-only array), or a side-effect-free op without
    regions of shaped constants alone (an op of scalars only, as `tensor.empty` of constant sizes,
    makes a fresh buffer every run)."""
    if op.regions or not op.results:
        return False
    kind = type(op)
    constant = _CONSTANT_LIKE.get(kind)
    if constant is None:
        constant = _CONSTANT_LIKE[kind] = op.has_trait(ConstantLike)
    operands = op.operands
    if constant or (isinstance(op, VIEWS) and id(operands[0]) in constants):
        return True
    return (
        bool(operands)
        and all(id(v) in constants for v in operands)
        and any(isinstance(v.type, TensorType | MemRefType) for v in operands)
        and is_side_effect_free(op)
    )


_CONSTANT_LIKE: dict[type, bool] = {}
"""Whether ops of a type are constants (`ConstantLike`, a trait of the type)."""
