"""Dropping the interpreter's reference to a value after its last use, so that the arrays of a
long program (every tile's partial product, every im2col matrix) are freed as it runs instead of
all living until the function returns.

A value defined in a block is released after the last op of the block that uses it, directly or
inside the op's regions (which run while the op runs). Kept to the end: values used by a `pim.core`
(cores run as coroutines after the op, see `interpreters/pim.py`), buffers placed at a
`pim.address` (instruction-level cores reach them by address) and everything in a region of
several blocks (values may flow to other blocks). Arrays shared by several values (views, a tensor
and its buffer) live as long as any of them.
"""

from collections.abc import Iterable

from xdsl.interpreter import Interpreter, PythonValues
from xdsl.ir import Block, Operation, SSAValue

from cimxdsl.dialects import pim


def dying_values(block: Block, ops: list[Operation] | None = None) -> dict[int, tuple[SSAValue, ...]]:
    """For every op of `block` (by `id`), the values defined in the block whose last use it is;
    `ops`: the block's ops, if known. (Keyed by `id`: hashing IR objects runs Python code, this
    runs once per op and per value.)"""
    ops = block_ops(block) if ops is None else ops
    if block.next_block is not None or block.prev_block is not None:
        return dict.fromkeys(map(id, ops), ())
    last: dict[int, int] = {}
    kept: set[int] = set()
    for i, op in enumerate(ops):
        if not op.regions:
            for value in op.operands:
                last[id(value)] = i
        elif isinstance(op, pim.CoreOp):
            kept.update(id(v) for user in op.walk() for v in user.operands)
        else:
            for user in op.walk():
                for value in user.operands:
                    last[id(value)] = i
    dying: list[list[SSAValue]] = [[] for _ in ops]
    for value in (*block.args, *(r for op in ops if pim.ADDRESS not in op.attributes for r in op.results)):
        i = last.get(id(value))
        if i is not None and id(value) not in kept:
            dying[i].append(value)
    return {id(op): tuple(values) for op, values in zip(ops, dying, strict=True)}


def block_ops(block: Block) -> list[Operation]:
    """The ops of `block` in order (`list(block.ops)` walks the block twice: once for its length)."""
    ops, op = [], block.first_op
    while op is not None:
        ops.append(op)
        op = op.next_op
    return ops


class ValueReleaser(Interpreter.Listener):
    """Releases each value of a block after its last use (see the module docstring)."""

    def __init__(self, interpreter: Interpreter):
        self.interpreter = interpreter
        self.dying: dict[int, tuple[SSAValue, ...]] = {}

    def leave(self, ops: Iterable[Operation]) -> None:
        """Leave the values of the ops of a block to whoever runs it (a prepared function releases
        its own)."""
        self.dying.update(dict.fromkeys(map(id, ops), ()))

    def did_interpret_op(self, op: Operation, results: PythonValues) -> None:
        dead = self.dying.get(id(op))
        if dead is None:
            block = op.parent
            if not isinstance(block, Block):
                return
            self.dying.update(dying_values(block))
            dead = self.dying[id(op)]
        if dead:
            self.interpreter.set_values((value, None) for value in dead)
