"""The calibration inputs of int8 quantization: given as arrays, an `.npz` or lists of samples,
regrouped to the batch compiled for, or a reported fallback of random inputs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from xdsl.dialects.builtin import f32

from cimxdsl.data_io import InputError, InputSpec, check_inputs, examples, onnx_inputs, read_dataset
from cimxdsl.frontend.onnx_importer import ONNX_ELEMENT_TYPES, graph_inputs, input_shape
from cimxdsl.models import CompileError


def calibration_samples(
    calibration: Sequence | np.ndarray | str | Path | None, model: onnx.ModelProto, notes: list[str], count: int = 16
) -> list[list[np.ndarray]]:
    """Calibration inputs, each a list of the model's inputs: an array of examples of a
    single-input model along axis 0 (`data_io.examples`), an `.npz` (its `calibration`, else
    `inputs`, else the input's array: `data_io.read_dataset`), a list of samples (each a list of
    input arrays of any batch, `regroup`ed later, or one array for a single-input model), or a
    reported fallback of random inputs (`random_calibration`). An open batch is 1."""
    specs = [s.with_batch(1) if s.open_batch else s for s in onnx_inputs(model)]
    if calibration is None:
        return random_calibration(model, count, notes)
    try:
        if isinstance(calibration, str | Path | np.ndarray) and len(specs) != 1:
            raise CompileError("calibration data as one array needs a single-input model; give a list of input lists")
        if isinstance(calibration, str | Path):
            calibration = read_dataset(calibration, specs[0], labels=False)[0]
        if isinstance(calibration, np.ndarray):
            return batches(examples(specs[0], calibration, "calibration data for input", True), specs[0].shape)
        samples = [[sample] if isinstance(sample, np.ndarray) else sample for sample in calibration]
        open_specs = [InputSpec(s.name, (None, *s.shape[1:]), s.dtype) if s.shape else s for s in specs]
        return [check_inputs(open_specs, sample, "calibration input")[0] for sample in samples]
    except InputError as e:
        raise CompileError(str(e)) from None


def model_input_shapes(model: onnx.ModelProto) -> list[list[int]]:
    """The shapes of the model's run-time inputs (`input_shape`)."""
    return [list(input_shape(i)) for i in graph_inputs(model)]


def regroup(samples: list[list[np.ndarray]], shapes: Sequence[Sequence[int]]) -> list[list[np.ndarray]]:
    """Samples (lists of inputs) as inputs of `shapes`: each input's examples in order, grouped as
    `batches` does. Samples whose examples do not have the shapes' are left as they are (a run
    then says which shape it expected)."""
    if any(len(sample) != len(shapes) for sample in samples) or not all(shapes):
        return samples
    pairs = [(np.shape(x), tuple(shape)) for sample in samples for x, shape in zip(sample, shapes, strict=True)]
    if all(got == want for got, want in pairs) or any(got[1:] != want[1:] for got, want in pairs):
        return samples
    inputs = [np.concatenate([sample[i] for sample in samples]) for i in range(len(shapes))]
    grouped = [batches(examples, shape) for examples, shape in zip(inputs, shapes, strict=True)]
    return [[group[0] for group in sample] for sample in zip(*grouped, strict=True)]


def random_calibration(model: onnx.ModelProto, count: int, notes: list[str]) -> list[list[np.ndarray]]:
    """`count` random samples, reported in `notes`: standard-normal floats, and 0s and 1s for integer
    inputs (token ids, token types, attention masks: in range of any table they index)."""
    inputs = graph_inputs(model)
    integer = [ONNX_ELEMENT_TYPES.get(i.type.tensor_type.elem_type, f32) != f32 for i in inputs]
    kinds = "standard-normal (floats) and 0/1 (integers)" if any(integer) else "standard-normal"
    notes.append(f"no calibration data given: calibrated on {count} {kinds} random inputs")
    rng = np.random.default_rng(0)

    def sample(shape: tuple[int, ...], whole: bool) -> np.ndarray:
        return (rng.integers(0, 2, shape) if whole else rng.standard_normal(shape)).astype(np.float32)

    return [[sample(input_shape(i), whole) for i, whole in zip(inputs, integer, strict=True)] for _ in range(count)]


def batches(examples: np.ndarray, shape: Sequence[int]) -> list[list[np.ndarray]]:
    """Examples (one per leading index, of shape `shape[1:]`) grouped into inputs of `shape`;
    the last group is filled up by repeating examples."""
    batch = shape[0]
    groups = -(-len(examples) // batch)
    filled = np.resize(examples, (groups * batch, *shape[1:]))
    return [[filled[i * batch : (i + 1) * batch]] for i in range(groups)]
