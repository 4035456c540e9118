"""Dropping the interpreter's reference to a value after its last use, so that the arrays of a
long program (every tile's partial product, every im2col matrix) are freed as it runs instead of
all living until the function returns.

A value is released after the last op of its block that uses it, when every use is an operand of
an op without regions directly in that block: such an op reads its operands while it runs. Values
used inside a region (a loop body, a core that may run later) and values other ops reach without an
operand (global buffers placed at a `pim.address`) are kept. Arrays shared by several values (views,
a tensor and its buffer) live as long as any of them.
"""

from xdsl.interpreter import Interpreter, PythonValues
from xdsl.ir import Block, Operation, SSAValue

from cimxdsl.dialects.pim import ADDRESS


def dying_values(block: Block) -> dict[Operation, tuple[SSAValue, ...]]:
    """For every op of `block`, the values defined in the block whose last use it is."""
    ops = list(block.ops)
    position = {op: i for i, op in enumerate(ops)}
    dying: list[list[SSAValue]] = [[] for _ in ops]
    defined = [*block.args, *(r for op in ops if ADDRESS not in op.attributes for r in op.results)]
    for value in defined:
        users = [use.operation for use in value.uses]
        if users and all(user.parent is block and not user.regions for user in users):
            dying[max(position[user] for user in users)].append(value)
    return {op: tuple(values) for op, values in zip(ops, dying, strict=True)}


class ValueReleaser(Interpreter.Listener):
    """Releases each value of a block after its last use (see the module docstring)."""

    def __init__(self):
        self.interpreter: Interpreter | None = None
        self.dying: dict[Operation, tuple[SSAValue, ...]] = {}

    def did_interpret_op(self, op: Operation, results: PythonValues) -> None:
        dead = self.dying.get(op)
        if dead is None:
            block = op.parent
            if not isinstance(block, Block):
                return
            self.dying.update(dying_values(block))
            dead = self.dying[op]
        if dead and self.interpreter is not None:
            self.interpreter.set_values((value, None) for value in dead)
