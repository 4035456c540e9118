"""The artifact validator: runs an artifact directory's instruction streams on the instruction-set
machine (`cimxdsl.interpreters.pim_machine`, one NumPy model of the pimsim-nn ISA) with the global
memory the layout describes, and reads the outputs back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cimxdsl.backend.artifacts import Artifacts, MemoryLayout
from cimxdsl.interpreters.pim_machine import ExecutionError, Machine

__all__ = ["ExecutionError", "ValidationResult", "initial_memory", "read_outputs", "validate", "validate_images"]


@dataclass
class ValidationResult:
    outputs: list[np.ndarray]
    executed: int
    steps: int
    per_core: dict[int, int]
    executed_per_image: list[int] | None = None
    """Instructions executed for each image of a streamed batch (`validate_images`)."""

    @property
    def images(self) -> int:
        return len(self.executed_per_image) if self.executed_per_image else 1


def initial_memory(memory: MemoryLayout, inputs: Sequence[np.ndarray]) -> np.ndarray:
    """The global memory with the inputs and constants in their buffers."""
    if len(inputs) != len(memory.inputs):
        raise ExecutionError(f"the program takes {len(memory.inputs)} inputs, got {len(inputs)}")
    arrays = {}
    for tensor, array in zip(memory.inputs, inputs, strict=True):
        array = np.asarray(array)
        if tuple(array.shape) != tuple(tensor.shape):
            raise ExecutionError(f"input {tensor.index} must have shape {list(tensor.shape)}, got {list(array.shape)}")
        if not np.issubdtype(array.dtype, np.integer):
            if not np.all(np.equal(np.mod(array, 1), 0)):
                raise ExecutionError(f"input {tensor.index} must hold integers, got {array.dtype} values")
        info = np.iinfo(memory.dtype)
        if array.size and (array.min() < info.min or array.max() > info.max):
            raise ExecutionError(f"input {tensor.index} has values outside {memory.dtype.name}")
        arrays[tensor.index] = array.astype(np.int64).reshape(-1)
    data = np.zeros(memory.size, np.uint8)
    words = memory.element_bytes
    for buffer in memory.buffers:
        if buffer.kind == "input":
            assert buffer.input_elements is not None
            values = arrays[buffer.input][buffer.input_elements]
        elif buffer.kind == "constant":
            assert buffer.values is not None
            values = buffer.values
        else:
            continue
        raw = np.ascontiguousarray(values.astype(memory.dtype)).view(np.uint8)
        data[buffer.offset : buffer.offset + buffer.elements() * words] = raw
    return data


def read_outputs(memory: MemoryLayout, data: np.ndarray) -> list[np.ndarray]:
    words = data[: len(data) - len(data) % memory.element_bytes].view(memory.dtype)
    outputs = []
    for tensor in sorted(memory.outputs, key=lambda t: t.index):
        assert tensor.global_elements is not None
        outputs.append(words[tensor.global_elements].astype(memory.dtype).reshape(tensor.shape))
    return outputs


def validate(artifacts: Artifacts, inputs: Sequence[np.ndarray]) -> ValidationResult:
    """Run the program on `inputs`; the outputs as the memory layout assembles them."""
    machine = Machine(artifacts.cores, initial_memory(artifacts.memory, inputs))
    machine.run()
    per_core = {c.core_id: c.executed for c in machine.cores}
    return ValidationResult(
        read_outputs(artifacts.memory, machine.memory), sum(per_core.values()), machine.steps, per_core
    )


def validate_images(artifacts: Artifacts, inputs: Sequence[np.ndarray]) -> ValidationResult:
    """Run a program of one image (inputs of batch 1) on a batch of N images, one after another,
    as a pipeline streams them: the inputs hold N images along their leading axis (any N when the
    program's inputs have a leading 1, else exactly its shapes). The outputs are concatenated;
    the instruction counts and steps summed."""
    layouts = artifacts.memory.inputs
    streams = all(len(t.shape) and t.shape[0] == 1 for t in layouts) and len(inputs) == len(layouts)
    arrays = [np.asarray(x) for x in inputs]
    count = len(arrays[0]) if streams and arrays and arrays[0].ndim else 1
    if count <= 1 or any(x.ndim == 0 or len(x) != count for x in arrays):
        return validate(artifacts, arrays)
    runs = [validate(artifacts, [x[i : i + 1] for x in arrays]) for i in range(count)]
    per_core = {core: sum(r.per_core[core] for r in runs) for core in runs[0].per_core}
    return ValidationResult(
        [np.concatenate(outputs) for outputs in zip(*(r.outputs for r in runs), strict=True)],
        sum(r.executed for r in runs),
        sum(r.steps for r in runs),
        per_core,
        [r.executed for r in runs],
    )
