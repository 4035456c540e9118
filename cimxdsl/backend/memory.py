"""Where a program's inputs, constants and outputs live in global memory (`memory.json`).

The host code around the cores (the glue `cinm-to-spatial` adds: NCHW to `[H, W, C]` tiles before,
`spat.concat` and back to NCHW after) decides which element of which model input a global buffer
holds and which global element each output element comes from. Rather than pattern-match that
glue, it is *executed* with the interpreter on arrays of element numbers: the function's inputs hold
their own element indices, the global buffers hold their global element addresses, and the results
tell where every element goes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import bufferization, func
from xdsl.dialects.builtin import MemRefType, ModuleOp, TensorType
from xdsl.ir import BlockArgument, Operation, SSAValue

from cimxdsl.backend.artifacts import Buffer, MemoryLayout, Tensor
from cimxdsl.device import Device
from cimxdsl.interpreters import build_interpreter

SHIFT = 1 << 29
"""Added to the element numbers in a second run: elements that do not move with it are constants."""


class LayoutError(ValueError):
    """The host code moves data in a way the artifact format cannot describe."""


def backward_slice(
    values: Sequence[SSAValue], block_ops: Sequence[Operation], stop: set[SSAValue] | None = None
) -> tuple[list[Operation], set[BlockArgument]]:
    """The ops of the block computing `values` (not looking past `stop`), in block order, and the
    block arguments they read."""
    needed: set[Operation] = set()
    arguments: set[BlockArgument] = set()
    stack = list(values)
    stop = stop or set()
    while stack:
        v = stack.pop()
        if v in stop:
            continue
        owner = v.owner
        if isinstance(v, BlockArgument):
            arguments.add(v)
        elif isinstance(owner, Operation) and owner not in needed:
            needed.add(owner)
            stack.extend(owner.operands)
    return [op for op in block_ops if op in needed], arguments


class HostEvaluator:
    """Runs function-level host ops on given values with the cimxdsl interpreter functions."""

    def __init__(self, module: ModuleOp):
        self.interpreter = build_interpreter(module, Device("ideal"))

    def evaluate(self, ops: Sequence[Operation], known: dict[SSAValue, np.ndarray]) -> dict[SSAValue, object]:
        values: dict[SSAValue, object] = dict(known)
        for op in ops:
            if all(r in values for r in op.results) and op.results:
                continue
            args = tuple(values[v] for v in op.operands)
            values.update(zip(op.results, self.interpreter.run_op(op, args)))
        return values


def numbered(shape: Sequence[int], start: int) -> np.ndarray:
    return (start + np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)).reshape(shape).astype(np.int32)


def describe_memory(
    function: func.FuncOp,
    buffers: Sequence[tuple[str, SSAValue, int]],
    element_bytes: int,
    size: int,
) -> MemoryLayout:
    """The layout of `buffers` (name, function-level memref, byte offset) of `function`'s cores."""
    module = function.parent_op()
    while module is not None and not isinstance(module, ModuleOp):
        module = module.parent_op()
    assert isinstance(module, ModuleOp)
    evaluator = HostEvaluator(module)
    block = function.body.block
    ops = list(block.ops)
    arguments = list(block.args)
    argument_shapes = [a.type.get_shape() if isinstance(a.type, TensorType) else () for a in arguments]
    starts = np.cumsum([0, *(int(np.prod(s, dtype=np.int64)) for s in argument_shapes)])
    layout = MemoryLayout(element_bytes, size)
    layout.inputs = [Tensor(i, tuple(s)) for i, s in enumerate(argument_shapes)]
    for name, value, offset in buffers:
        owner = value.owner
        shape = value.type.get_shape() if isinstance(value.type, MemRefType) else ()
        if isinstance(owner, bufferization.ToBufferOp):
            layout.buffers.append(input_buffer(evaluator, ops, owner, name, offset, arguments, starts, shape))
        else:
            layout.buffers.append(Buffer(name, "output", offset, tuple(shape)))
    layout.outputs = output_maps(evaluator, ops, buffers, element_bytes, function)
    return layout


def input_buffer(evaluator, ops, to_buffer, name, offset, arguments, starts, shape) -> Buffer:
    source = to_buffer.operands[0]
    slice_ops, used = backward_slice([source], ops)
    if not used:
        values = evaluator.evaluate(slice_ops, {})[source]
        return Buffer(name, "constant", offset, tuple(shape), values=np.asarray(values).astype(np.int64))
    runs = []
    for shift in (0, SHIFT):
        known = {a: numbered(a.type.get_shape(), int(starts[a.index]) + shift) for a in used}
        runs.append(np.asarray(evaluator.evaluate(slice_ops, known)[source]).astype(np.int64).reshape(-1))
    if not np.all(runs[1] - runs[0] == SHIFT):
        raise LayoutError(f"global buffer '{name}' mixes function inputs and constants")
    ids = runs[0]
    argument = int(np.searchsorted(starts, ids.min(), side="right") - 1) if ids.size else used[0].index
    if ids.size and (ids.max() >= starts[argument + 1]):
        raise LayoutError(f"global buffer '{name}' mixes several function inputs")
    return Buffer(name, "input", offset, tuple(shape), input=argument, input_elements=ids - int(starts[argument]))


def output_maps(evaluator, ops, buffers, element_bytes: int, function: func.FuncOp) -> list[Tensor]:
    returned = ops[-1]
    assert isinstance(returned, func.ReturnOp)
    tensors = {}
    for name, value, offset in buffers:
        for use in value.uses:
            if isinstance(use.operation, bufferization.ToTensorOp):
                tensors[use.operation.results[0]] = (name, value, offset)
    runs = []
    for shift in (0, SHIFT):
        known = {
            result: numbered(value.type.get_shape(), offset // element_bytes + shift)
            for result, (_, value, offset) in tensors.items()
        }
        after, _ = backward_slice(returned.operands, ops, set(known))
        values = evaluator.evaluate([op for op in after if op is not returned], known)
        runs.append([values.get(v) for v in returned.operands])
    outputs = []
    for i, (first, second) in enumerate(zip(*runs, strict=True)):
        operand = returned.operands[i]
        if first is None or isinstance(operand, BlockArgument) or not tensors:
            raise LayoutError(f"output {i} of @{function.sym_name.data} is not computed on the cores")
        first, second = np.asarray(first).astype(np.int64), np.asarray(second).astype(np.int64)
        if not np.all(second - first == SHIFT):
            raise LayoutError(f"output {i} of @{function.sym_name.data} is not entirely computed on the cores")
        outputs.append(Tensor(i, tuple(first.shape), first.reshape(-1)))
    return outputs
