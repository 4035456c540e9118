"""Running instruction-level `pim.core`s inside the interpreter, on the validator's machine.

Global memory is assembled from the function-level buffers `pim-codegen` placed (`pim.address`),
each core's crossbars from its weight operands; after the run the buffers get the memory back.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import IntegerAttr
from xdsl.interpreter import Interpreter
from xdsl.ir import Operation

from cimxdsl.backend.artifacts import ArrayGroup, CoreProgram
from cimxdsl.backend.validator import Machine
from cimxdsl.dialects import pim


def placed_buffers(block_ops: Sequence[Operation]) -> list[tuple[Operation, int]]:
    placed = []
    for op in block_ops:
        attr = op.attributes.get(pim.ADDRESS)
        if isinstance(attr, IntegerAttr):
            placed.append((op, attr.value.data))
    return placed


def run_instruction_cores(interpreter: Interpreter, cores: Sequence[pim.CoreOp]) -> None:
    block = cores[0].parent_block()
    assert block is not None
    buffers = [(interpreter.get_values(op.results)[0], address) for op, address in placed_buffers(list(block.ops))]
    size = max((address + np.asarray(array).nbytes for array, address in buffers), default=0)
    memory = np.zeros(size, np.uint8)
    for array, address in buffers:
        raw = np.ascontiguousarray(np.asarray(array)).view(np.uint8).reshape(-1)
        memory[address : address + raw.size] = raw
    programs = []
    for core in cores:
        instructions = [op.to_json() for op in core.body.block.ops if isinstance(op, pim.InstructionOp)]
        weights = [np.asarray(w).astype(np.int64) for w in interpreter.get_values(core.weights)]
        programs.append(CoreProgram(core.get_core_id(), instructions, [ArrayGroup(w) for w in weights]))
    machine = Machine(programs, memory)
    machine.run()
    for array, address in buffers:
        target = np.asarray(array)
        if target.flags.writeable:  # constants are read-only values
            target.reshape(-1)[...] = machine.memory[address : address + target.nbytes].view(target.dtype)
