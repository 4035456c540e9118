"""Model inputs from arrays and files, checked in one place for every face (`cim-compile`,
`cim-run`, `cim-validate`, `cim-explore`, the Python API, calibration data); the float reference
on them is `cimxdsl.reference`.

An array is taken only with the shape of the model's input: every dimension as declared, except a
leading dimension the model leaves open (ONNX's symbolic batch, `N`), which takes the batch of the
arrays given. Nothing is reshaped. A float input takes any numeric array (converted to its type);
an integer input (token ids) takes integer arrays only. A wrong shape or type is one line naming
the input, what it takes and what it got (`InputError`).

Files: a `.npy` holds one array; an `.npz` named for input `x` (`--input x=FILE.npz`) must hold
exactly one array, `x`; an `.npz` given without a name holds the model's inputs by name, and no
other array. A data set (`read_dataset`) is an `.npz` of `inputs` and `labels` (and optionally
`calibration`); its examples lie along the leading axis (calibration data may also be whole inputs
one after another)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from xdsl.dialects.builtin import ModuleOp

from cimxdsl.dialects.utils import numpy_dtype
from cimxdsl.interpreters import entry_function


class InputError(ValueError):
    """An input array or file the model cannot take; the message is one line."""


@dataclass(frozen=True)
class InputSpec:
    """What a model input takes: its name, shape (None: the open batch dimension) and type."""

    name: str
    shape: tuple[int | None, ...]
    dtype: np.dtype

    @property
    def open_batch(self) -> bool:
        return bool(self.shape) and self.shape[0] is None

    def describe(self, batch: int | None = None) -> str:
        """The shape as text, `N` for an open batch (or `batch` when it is known)."""
        dims = ["N" if d is None and batch is None else str(batch if d is None else d) for d in self.shape]
        return f"[{', '.join(dims)}]"

    def with_batch(self, batch: int) -> InputSpec:
        """This input with `batch` as its leading dimension."""
        return InputSpec(self.name, (batch, *self.shape[1:]), self.dtype)


def onnx_inputs(model: onnx.ModelProto) -> list[InputSpec]:
    """The graph inputs that are not initializers. A symbolic leading dimension is the open batch;
    any other symbolic dimension is 1, as the importer builds it."""
    initializers = {init.name for init in model.graph.initializer}
    specs = []
    for info in model.graph.input:
        if info.name in initializers:
            continue
        tensor = info.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
        shape = tuple(d if d is not None or i == 0 else 1 for i, d in enumerate(dims))
        try:
            dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type))
        except (KeyError, TypeError, ValueError):
            dtype = np.dtype(object)  # the importer reports the type
        specs.append(InputSpec(info.name, shape, dtype))
    return specs


def function_inputs(module: ModuleOp, entry: str = "main") -> list[InputSpec]:
    """The arguments of `@entry` as inputs: their names (or positions) and tensor types."""
    function = entry_function(module, entry)
    specs = []
    for i, (arg, t) in enumerate(zip(function.body.block.args, function.function_type.inputs.data, strict=True)):
        shape = tuple(getattr(t, "get_shape", lambda: ())())
        specs.append(InputSpec(arg.name_hint or str(i), shape, numpy_dtype(getattr(t, "element_type", t))))
    return specs


def check_array(spec: InputSpec, value: Any, batch: int | None = None, what: str = "input") -> np.ndarray:
    """`value` as an array of `spec`'s type, if it has `spec`'s shape (an open batch taking
    `batch`, or any size ≥ 1 when `batch` is None) and a type it can take."""
    array = np.asarray(value)
    expected = spec.describe(batch)
    if array.dtype.kind not in "biuf":
        raise InputError(f"{what} '{spec.name}' must hold numbers ({spec.dtype}), got an array of {array.dtype}")
    if spec.dtype.kind in "biu" and array.dtype.kind not in "biu":
        raise InputError(f"{what} '{spec.name}' must hold integers ({spec.dtype}), got {array.dtype}")
    fits = array.ndim == len(spec.shape) and all(
        (d is None and n > 0 and (batch is None or n == batch)) or n == d
        for d, n in zip(spec.shape, array.shape, strict=False)
    )
    if not fits:
        got = f"{list(array.shape)}{hint(spec, array, batch)}"
        raise InputError(f"{what} '{spec.name}' must have shape {expected}, got {got}")
    if spec.dtype.kind in "iu" and array.size and array.dtype != spec.dtype:
        limits = np.iinfo(spec.dtype)
        if array.min() < limits.min or array.max() > limits.max:
            raise InputError(f"{what} '{spec.name}' holds values outside {spec.dtype} ({limits.min}..{limits.max})")
    return array.astype(spec.dtype, copy=False)


def hint(spec: InputSpec, array: np.ndarray, batch: int | None = None) -> str:
    """What a wrong shape looks like: the right dimensions in another order, or another batch."""
    if array.ndim != len(spec.shape) or not array.ndim:
        return ""
    shape = tuple(d or batch or array.shape[0] for d in spec.shape)
    if array.shape != shape and sorted(array.shape) == sorted(shape):
        return " (the same dimensions in another order: transpose it)"
    if array.shape[1:] == spec.shape[1:]:
        taken = spec.shape[0] or batch
        return f" (a batch of {array.shape[0]}: the model takes {taken})" if taken else " (an empty batch)"
    return ""


def check_inputs(
    specs: Sequence[InputSpec], values: Sequence[Any], what: str = "input"
) -> tuple[list[np.ndarray], int | None]:
    """The arrays of the model's inputs, checked (`check_array`), and the batch the open batch
    dimensions take (the first such input's; the others must agree; None without one)."""
    if len(values) != len(specs):
        names = ", ".join(s.name for s in specs)
        raise InputError(f"the model takes {len(specs)} input{'s' * (len(specs) != 1)} ({names}), got {len(values)}")
    batch = None
    arrays = []
    for spec, value in zip(specs, values, strict=True):
        array = check_array(spec, value, batch, what)
        if spec.open_batch and batch is None:
            batch = array.shape[0]
        arrays.append(array)
    return arrays, batch


def load_file(path: str | Path, what: str) -> np.ndarray | dict[str, np.ndarray]:
    """The array of a `.npy`, or the arrays of an `.npz` by name."""
    try:
        data = np.load(path, allow_pickle=False)
        if isinstance(data, np.lib.npyio.NpzFile):
            with data:
                return {name: data[name] for name in data.files}
        return data
    except (OSError, ValueError, EOFError) as e:
        raise InputError(f"cannot read {what} from '{path}': {' '.join(str(e).split())}") from None


def named_arrays(arrays: dict[str, np.ndarray], names: Sequence[str], path: str | Path) -> dict[str, np.ndarray]:
    """The arrays of an `.npz` that must hold exactly `names`."""
    missing = [n for n in names if n not in arrays]
    extra = [n for n in arrays if n not in names]
    wanted = ", ".join(f"'{n}'" for n in names)
    if missing:
        has = ", ".join(arrays) or "none"
        raise InputError(f"'{path}' has no array {', '.join(repr(n) for n in missing)} (it has: {has})")
    if extra:
        raise InputError(f"'{path}' holds arrays other than {wanted}: {', '.join(extra)} (it must hold only those)")
    return {n: arrays[n] for n in names}


def read_input_files(given: Sequence[str], specs: Sequence[InputSpec], bare: bool = True) -> dict[str, np.ndarray]:
    """The arrays of `--input` items: `NAME=FILE` (a `.npy`, or an `.npz` holding exactly the
    array NAME) or, with `bare`, `FILE` alone (a `.npy` for a single-input model, or an `.npz`
    holding exactly the model's inputs by name)."""
    names = [s.name for s in specs]
    values: dict[str, np.ndarray] = {}
    for item in given:
        name, sep, path = item.partition("=")
        if not sep and not bare:
            raise InputError(f"--input expects NAME=FILE.npy, got '{item}'")
        if sep and name not in names:
            raise InputError(f"the model has no input '{name}' (inputs: {', '.join(names)})")
        path = path if sep else item
        data = load_file(path, f"input '{name}'" if sep else "inputs")
        if isinstance(data, dict):
            values.update(named_arrays(data, [name] if sep else names, path))
        elif sep:
            values[name] = data
        elif len(names) == 1:
            values[names[0]] = data
        else:
            raise InputError(f"the model has {len(names)} inputs: name each one (--input NAME=FILE.npy)")
    return values


def given_batch(specs: Sequence[InputSpec], given: dict[str, Any]) -> int | None:
    """Check the arrays given for some of the inputs (`check_array`, by name); the batch they give
    the open batch dimension (None: none does)."""
    batch = None
    for spec in specs:
        if spec.name in given:
            array = check_array(spec, given[spec.name], batch)
            if spec.open_batch and batch is None:
                batch = array.shape[0]
    return batch


def gather_inputs(
    specs: Sequence[InputSpec],
    given: dict[str, Any],
    random: Callable[[InputSpec], np.ndarray] | None = None,
    batch: int | None = None,
    missing: Callable[[str], str] = lambda name: f"no value for input '{name}'",
) -> tuple[list[np.ndarray], int | None]:
    """The checked inputs in the model's order (`check_inputs`): given, else drawn by `random`
    for `spec` (an open batch set to the batch given, else `batch`, else 1), else an error
    (`missing(name)`)."""
    batch = given_batch(specs, given) or batch or 1
    values = []
    for spec in specs:
        if spec.name in given:
            values.append(given[spec.name])
        elif random is not None:
            values.append(random(spec.with_batch(batch) if spec.open_batch else spec))
        else:
            raise InputError(missing(spec.name))
    return check_inputs(specs, values)


def examples(spec: InputSpec, array: Any, what: str, whole_inputs: bool = False) -> np.ndarray:
    """Examples of input `spec` along the leading axis: `[N, *shape[1:]]`, or with `whole_inputs`
    also `[K, *shape]` (K whole inputs, their batches one after another), as `[N, *shape[1:]]` in
    `spec`'s type."""
    array = np.asarray(array)
    tail = InputSpec(spec.name, (None, *spec.shape[1:]), spec.dtype)
    whole = None
    if whole_inputs and spec.shape and spec.shape[0]:
        whole = InputSpec(spec.name, (None, *spec.shape), spec.dtype)
    try:
        if whole is not None and array.ndim == len(whole.shape):
            return check_array(whole, array, what=what).reshape(-1, *array.shape[2:])
        return check_array(tail, array, what=what)
    except InputError as e:
        if "must have shape" not in str(e):
            raise
    forms = tail.describe() + ("" if whole is None else f" or {whole.describe().replace('N', 'K', 1)}")
    got = f"{list(array.shape)}{hint(tail, array)}"
    raise InputError(f"{what} '{spec.name}' must have shape {forms} (N ≥ 1 examples along the first axis), got {got}")


def read_dataset(
    path: str | Path, spec: InputSpec | None = None, labels: bool = True
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """`inputs`, `labels` and `calibration` (None where absent) of a data set `.npz`, the inputs
    and calibration checked as examples of `spec` (`examples`). With `labels=False` a calibration
    file: its `calibration` array, else its `inputs`, else the array named as the input."""
    data = load_file(path, "the data set" if labels else "calibration data")
    if not isinstance(data, dict):
        data = {"inputs": data} if not labels else {}
    has = ", ".join(data) or "none"
    if labels:
        for name in ("inputs", "labels"):
            if name not in data:
                raise InputError(f"data set '{path}' has no array '{name}' (it has: {has})")
        inputs, found = data["inputs"], np.asarray(data["labels"]).reshape(-1)
        if len(inputs) != len(found) or len(inputs) == 0:
            raise InputError(f"data set '{path}' has {len(inputs)} inputs but {len(found)} labels")
        if found.dtype.kind not in "biu":
            raise InputError(f"data set '{path}': 'labels' must hold integers, got {found.dtype}")
        found = found.astype(np.int64)
    else:
        keys = ("calibration", "inputs", *([spec.name] if spec else []))
        key = next((k for k in keys if k in data), None)
        if key is None:
            wanted = ", ".join(f"'{k}'" for k in keys)
            raise InputError(f"calibration file '{path}' has no array {wanted} (it has: {has})")
        inputs, found = data[key], None
    calibration = data.get("calibration") if labels else None
    if spec is not None:  # calibration data may also hold whole inputs
        inputs = examples(spec, inputs, f"'{path}': the examples of input", whole_inputs=not labels)
        if calibration is not None:
            calibration = examples(spec, calibration, f"'{path}': the calibration examples of input", True)
    return inputs, found, calibration
