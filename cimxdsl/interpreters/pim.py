"""Interpreter functions for `pim`: cores run concurrently, as on the chip.

A `pim.core` does not run to completion when it is reached: every core of a block is a coroutine
that runs until it waits on a `spat.channel_receive` with nothing sent yet. When the last core of
the block has been reached, the waiting cores are resumed round-robin until all have halted; if
none can move, the program is deadlocked and the error names the waiting cores.

`pim.load`/`pim.store` copy flat element ranges between a core's values and global-memory arrays;
`pim.apply_filters` overwrites its output buffer. Cores whose bodies hold ISA instructions (after
`pim-codegen`) run on the instruction-level machine of `cimxdsl.backend.validator`, with global
memory built from the buffers `pim-codegen` placed (`pim.address`).
"""

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, MemRefType
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Block, Operation

from cimxdsl.dialects import pim
from cimxdsl.dialects import spatial as spat
from cimxdsl.interpreters.pim_machine import ArrayGroup, CoreProgram, ExecutionError, Machine
from cimxdsl.interpreters.spatial import enclosing_weight_values, filters_result
from cimxdsl.interpreters.values import interpretation_error, numpy_dtype


@dataclass(eq=False)
class CoreRun:
    """A core being interpreted: a generator that yields True after each op it ran and False while
    it waits for a channel."""

    op: pim.CoreOp
    steps: Iterator[bool]
    done: bool = False
    waiting: spat.ChannelReceiveOp | None = None


@dataclass(eq=False)
class CoreBlock:
    """The cores of one block, started but not finished."""

    runs: list[CoreRun] = field(default_factory=list)
    instruction_cores: list[pim.CoreOp] = field(default_factory=list)


def flat_view(op: Operation, array: np.ndarray, what: str) -> np.ndarray:
    array = np.asarray(array)
    if not array.flags.c_contiguous:
        raise interpretation_error(op, f"{what} must be a contiguous buffer")
    return array.reshape(-1)


def last_core_in_block(op: pim.CoreOp) -> bool:
    following = op.next_op
    while following is not None:
        if isinstance(following, pim.CoreOp):
            return False
        following = following.next_op
    return True


def run_instruction_cores(interpreter: Interpreter, cores: Sequence[pim.CoreOp]) -> None:
    """Run instruction-level cores on the instruction-set machine. Global memory is assembled from
    the function-level buffers `pim-codegen` placed (`pim.address`), each core's crossbars from its
    weight operands; after the run the buffers get the memory back."""
    block = cores[0].parent_block()
    assert block is not None
    buffers = [
        (interpreter.get_values(op.results)[0], attr.value.data)
        for op in block.ops
        if isinstance(attr := op.attributes.get(pim.ADDRESS), IntegerAttr)
    ]
    size = max((address + np.asarray(array).nbytes for array, address in buffers), default=0)
    memory = np.zeros(size, np.uint8)
    for array, address in buffers:
        raw = np.ascontiguousarray(np.asarray(array)).view(np.uint8).reshape(-1)
        memory[address : address + raw.size] = raw
    programs = []
    for core in cores:
        instructions = [op for op in core.body.block.ops if isinstance(op, pim.InstructionOp)]
        weights = [np.asarray(w).astype(np.int64) for w in interpreter.get_values(core.weights)]
        programs.append(CoreProgram(core.get_core_id(), instructions, [ArrayGroup(w) for w in weights]))
    machine = Machine(programs, memory)
    try:
        machine.run()
    except ExecutionError as e:
        raise interpretation_error(cores[0], str(e)) from None
    for array, address in buffers:
        target = np.asarray(array)
        if target.flags.writeable:  # constants are read-only values
            target.reshape(-1)[...] = machine.memory[address : address + target.nbytes].view(target.dtype)


class PimFunctions(InterpreterFunctions):
    def __init__(self):
        self.blocks: dict[Block, CoreBlock] = {}

    @impl(pim.CoreOp)
    def run_core(self, interpreter: Interpreter, op: pim.CoreOp, args: PythonValues):
        block = op.parent_block()
        assert block is not None
        cores = self.blocks.setdefault(block, CoreBlock())
        if op.is_instruction_level():
            cores.instruction_cores.append(op)
        else:
            run = CoreRun(op, self.execute(interpreter, op))
            cores.runs.append(run)
            self.advance(run)
        if last_core_in_block(op):
            del self.blocks[block]
            self.finish(interpreter, cores)
        return ()

    def execute(self, interpreter: Interpreter, core: pim.CoreOp) -> Iterator[bool]:
        env: dict = {}
        for op in core.body.block.ops:
            if isinstance(op, pim.HaltOp):
                return
            args = tuple(env[v] if v in env else interpreter.get_values((v,))[0] for v in op.operands)
            if isinstance(op, spat.ChannelReceiveOp):
                while not args[0].queue:
                    yield False
            env.update(zip(op.results, interpreter.run_op(op, args)))
            yield True

    @staticmethod
    def advance(run: CoreRun) -> bool:
        """Run the core until it waits or halts; whether it ran anything."""
        progressed = False
        for moved in run.steps:
            if not moved:
                return progressed
            progressed = True
        run.done = True
        return True

    def finish(self, interpreter: Interpreter, cores: CoreBlock) -> None:
        if cores.instruction_cores:
            if cores.runs:
                raise interpretation_error(
                    cores.instruction_cores[0], "a block mixes cores of instructions with cores of higher-level ops"
                )
            run_instruction_cores(interpreter, cores.instruction_cores)
            return
        waiting = [run for run in cores.runs if not run.done]
        while waiting:
            if not any([self.advance(run) for run in waiting]):
                names = ", ".join(str(run.op.get_core_id()) for run in waiting)
                raise interpretation_error(
                    waiting[0].op, f"deadlock: cores {names} wait on 'spat.channel_receive' with nothing sent"
                )
            waiting = [run for run in waiting if not run.done]

    @impl(pim.LoadOp)
    def run_load(self, interpreter: Interpreter, op: pim.LoadOp, args: PythonValues):
        source, destination = args
        start, size = op.global_src_offset.value.data, op.size.value.data
        data = np.ravel(source)[start : start + size]  # read only: a strided buffer reads the same
        if isinstance(op.dst.type, MemRefType):
            flat_view(op, destination, "the local buffer")[:] = data
            return (destination,)
        dtype = numpy_dtype(op.result.type.element_type)
        return (data.astype(dtype).reshape(op.result.type.get_shape()),)

    @impl(pim.StoreOp)
    def run_store(self, interpreter: Interpreter, op: pim.StoreOp, args: PythonValues):
        value, target = args
        start, size = op.global_dst_offset.value.data, op.size.value.data
        flat_view(op, target, "the global buffer")[start : start + size] = np.asarray(value).reshape(-1)
        return ()

    @impl(pim.ApplyFiltersOp)
    def run_apply_filters(self, interpreter: Interpreter, op: pim.ApplyFiltersOp, args: PythonValues):
        image, output, _ = args
        output[...] = filters_result(op, enclosing_weight_values(interpreter, op), np.asarray(image), output.dtype)
        return ()


register_impls(PimFunctions)
