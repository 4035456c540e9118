"""The artifacts of an instruction-level program: what `pim-codegen` left in the IR, serialised.

The instruction streams are the `pim.core` bodies' instruction ops, the array groups the cores'
weight constants, the local memory each core used its `pim.local_bytes`; the global buffers are the
function-level values `pim-codegen` placed (`pim.address`, in address order), and the memory
layout comes from running the host code around the cores (`cimxdsl.backend.memory`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, MemRefType, ModuleOp, StringAttr
from xdsl.ir import SSAValue

from cimxdsl.backend.artifacts import ArrayGroup, ArtifactError, Artifacts, CoreProgram, write_artifacts
from cimxdsl.backend.memory import LayoutError, describe_memory
from cimxdsl.dialects import pim
from cimxdsl.dialects.utils import crossbars_of, dense_array, num_elements, precision_of


def program_function(module: ModuleOp) -> func.FuncOp:
    """The one function whose `pim.core`s hold instructions."""
    functions = [
        op
        for op in module.walk()
        if isinstance(op, func.FuncOp)
        and op.body.blocks
        and any(isinstance(c, pim.CoreOp) and c.is_instruction_level() for c in op.body.block.ops)
    ]
    if len(functions) != 1:
        raise ArtifactError(
            f"expected one function with instruction-level cores (run pim-codegen), found {len(functions)}"
        )
    return functions[0]


def crossbar_group(value: SSAValue) -> ArrayGroup:
    owner = value.owner
    if not isinstance(owner, arith.ConstantOp) or not isinstance(owner.value, DenseIntOrFPElementsAttr):
        raise ArtifactError("crossbar weights must be constants")
    origin = owner.attributes.get("origin")
    name = origin.data if isinstance(origin, StringAttr) else ""
    return ArrayGroup(dense_array(owner.value).astype(np.int64), name, precision_of(owner), crossbars_of(value))


def core_program(
    core: pim.CoreOp,
    stream: pim.InstructionStream | None = None,
    local_bytes: int | None = None,
    groups: dict[SSAValue, ArrayGroup] | None = None,
):
    """The program of an instruction-level core, or of a core whose code is `stream` (`groups`:
    the array groups of the weights met so far, shared: a layer's replicas hold the same weights)."""
    if stream is None:
        stream = pim.InstructionStream.from_ops([op for op in core.body.block.ops if isinstance(op, pim.InstructionOp)])
    if local_bytes is None:
        local = core.attributes.get(pim.LOCAL_BYTES)
        local_bytes = local.value.data if isinstance(local, IntegerAttr) else 0
    groups = {} if groups is None else groups
    for weight in core.weights:
        if weight not in groups:
            groups[weight] = crossbar_group(weight)
    return CoreProgram(core.get_core_id(), stream, [groups[w] for w in core.weights], local_bytes)


def placed_buffers(function: func.FuncOp, element_bytes: int) -> tuple[list[tuple[str, SSAValue, int]], int]:
    """The global buffers (name, value, byte address) in address order, and the memory size."""
    placed: list[tuple[int, SSAValue]] = []
    for op in function.body.block.ops:
        address = op.attributes.get(pim.ADDRESS)
        if isinstance(address, IntegerAttr):
            placed.append((address.value.data, op.results[0]))
    placed.sort(key=lambda p: p[0])
    named = [
        (f"{'out' if isinstance(value.owner, memref.AllocOp) else 'in'}{i}", value, address)
        for i, (address, value) in enumerate(placed)
    ]
    size = max((address + buffer_bytes(value, element_bytes) for _, value, address in named), default=0)
    return named, size


def buffer_bytes(value: SSAValue, element_bytes: int) -> int:
    assert isinstance(value.type, MemRefType)
    return num_elements(value.type.get_shape()) * element_bytes


def artifacts_of(module: ModuleOp) -> Artifacts:
    """The artifacts of the module's instruction-level program."""
    function = program_function(module)
    cores = sorted((op for op in function.body.block.ops if isinstance(op, pim.CoreOp)), key=lambda c: c.get_core_id())
    groups: dict[SSAValue, ArrayGroup] = {}
    return assemble(function, [core_program(core, groups=groups) for core in cores])


def artifacts_of_code(function: func.FuncOp, codes: Sequence[pim.CoreCode]) -> Artifacts:
    """The artifacts of `function` from its cores' packed code (`pim-codegen`'s), without
    instruction ops."""
    groups: dict[SSAValue, ArrayGroup] = {}
    return assemble(function, [core_program(c.core, c.stream, c.local_bytes, groups) for c in codes])


def assemble(function: func.FuncOp, programs: list[CoreProgram]) -> Artifacts:
    """The artifacts of `function`'s core programs: its global buffers and their memory layout."""
    setbw = next((p.instructions for p in programs if len(p.instructions)), None)
    element_bytes = 4
    if setbw is not None and setbw.opcodes[0] == pim.SetbwOp.OPCODE:
        element_bytes = int(setbw.fields[0, pim.SetbwOp.FIELDS.index("obiw")]) // 8
    named, size = placed_buffers(function, element_bytes)
    try:
        memory = describe_memory(function, named, element_bytes, size)
    except LayoutError as e:
        raise ArtifactError(str(e)) from None
    return Artifacts(programs, memory)


def write_program(module: ModuleOp, directory: str | Path) -> Artifacts:
    """Write the module's program as an artifact directory; its artifacts."""
    artifacts = artifacts_of(module)
    write_artifacts(directory, artifacts)
    return artifacts
