"""The Python face: `compile` a model for a crossbar device, run it, report, save and load.

import cimxdsl
m = cimxdsl.compile("model.onnx", device="isaac", calibration=samples)
y = m(x)                # or m({"x": x}), or m.run_onnx(["y"], {"x": x}) as onnxruntime's run
m.report()              # latency, energy by component, writes: total and per layer; .to_pandas()
m.mlir("schedule")      # the IR after any stage
m.save("model.cimx"); cimxdsl.load("model.cimx")
"""

from __future__ import annotations

import gc
import io
import json
import time
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from xdsl.dialects.builtin import ModuleOp, f32
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import PassFailedException

from cimxdsl.backend.performance import PerformanceError
from cimxdsl.data_io import (
    InputError,
    InputSpec,
    check_inputs,
    examples,
    function_inputs,
    onnx_inputs,
    read_dataset,
)
from cimxdsl.device import DEFAULT_DEVICE, Device, DeviceConfig, load_device_config
from cimxdsl.device.chip import ChipConfig, ChipConfigError, load_chip_config
from cimxdsl.device.placement import PLACEMENTS
from cimxdsl.device.threads import check_threads
from cimxdsl.flow.pim import DEFAULT_PACKING
from cimxdsl.frontend.integer import IntegerProgram, import_integer
from cimxdsl.frontend.onnx_importer import (
    ONNX_ELEMENT_TYPES,
    OnnxImportError,
    graph_inputs,
    import_onnx,
    input_shape,
    load_model,
)
from cimxdsl.frontend.quantize import quantize
from cimxdsl.interpreters import Program, RunResult, entry_function, result_names, run
from cimxdsl.parsing import make_context, parse_module_text
from cimxdsl.report import Report
from cimxdsl.transforms import get_all_passes
from cimxdsl.transforms.linalg_to_cinm import LinalgToCinmPass
from cimxdsl.transforms.schedule_list import ScheduleListPass
from cimxdsl.transforms.tile import TilePass

FORMAT_VERSION = 1
MODES = ("int8", "exact")
STAGES = ("import", "quantize", "cinm", "tile", "cim", "schedule", "memristor", "func")
DEFAULT_CROSSBARS = 64
"""Crossbars each layer may use when the caller does not say (the scheduler acquires them all)."""


KEPT_STAGES = ("import", "quantize", "schedule", "func")
"""Stages whose IR `compile` keeps (the report runs `schedule`, a call `func`); the others are
rebuilt from the stage before them when asked for, instead of cloning every stage's IR."""


class CompileError(ValueError):
    """A model, option or device the compiler cannot take; the message is one line."""


@dataclass(frozen=True)
class RebuiltStage:
    """A stage not kept: its IR is that of stage `base` after `passes` (deterministic)."""

    base: str
    passes: tuple[str | ModulePass, ...]


class OnnxFace:
    """Calls in onnxruntime's manner, shared by `CompiledModel` and `PimModel`: the inputs as one dict
    by name (`model({"x": x})`) and `run_onnx(output_names, feed)`, as `InferenceSession.run`."""

    input_names: list[str]
    output_names: list[str]

    def positional(self, inputs: tuple) -> tuple:
        """`inputs` in the model's order: given so, or as one dict of named inputs."""
        if len(inputs) != 1 or not isinstance(inputs[0], Mapping):
            return inputs
        feed, names = inputs[0], self.input_names
        if unknown := [n for n in feed if n not in names]:
            raise CompileError(f"the model has no input '{unknown[0]}' (inputs: {', '.join(names)})")
        if missing := [n for n in names if n not in feed]:
            raise CompileError(f"no value for input '{missing[0]}' (inputs: {', '.join(names)})")
        return tuple(feed[n] for n in names)

    def run_onnx(self, output_names: Sequence[str] | None, feed: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """The outputs named in `output_names` (None: all, in the model's order) for the inputs in
        `feed`, by name, as `onnxruntime.InferenceSession.run` gives them."""
        outputs = self(dict(feed))
        outputs = outputs if isinstance(outputs, list) else [outputs]
        if output_names is None:
            return outputs
        if unknown := [n for n in output_names if n not in self.output_names]:
            raise CompileError(f"the model has no output '{unknown[0]}' (outputs: {', '.join(self.output_names)})")
        return [outputs[self.output_names.index(n)] for n in output_names]


def model_name(model) -> str:
    """A short name for a model given to `compile`: a file's stem, a graph's or a module's name."""
    if isinstance(model, str | Path):
        return Path(model).stem
    if isinstance(model, onnx.ModelProto):
        return model.graph.name or "model"
    return type(model).__name__


@dataclass(repr=False)
class CompiledModel(OnnxFace):
    """A model lowered for a device: call it on NumPy inputs (in order, or one dict by name), read
    its report and its IR."""

    stages: dict[str, ModuleOp | str | RebuiltStage]
    """The IR after each stage (`STAGES`): a module, its text until it is needed, or how to rebuild it."""
    device: DeviceConfig
    options: dict
    notes: list[str] = field(default_factory=list)
    """What the compiler decided that the user should know (e.g. the calibration fallback)."""
    compile_seconds: dict[str, float] = field(default_factory=dict)
    calibration_inputs: list | None = field(default=None, repr=False)
    """The quantization's calibration inputs: a static ADC range is calibrated on them."""
    adc_spans: dict[tuple, dict] = field(default_factory=dict, repr=False)
    """Static ADC spans per `DeviceConfig.calibration_key`, recorded when first needed."""
    last_run: RunResult | None = None
    last_inputs: list[np.ndarray] | None = None
    resident: Device | None = field(default=None, repr=False)
    """The device calls run on: programmed weights stay between calls (metrics are per call)."""
    programs: dict[str, Program] = field(default_factory=dict, repr=False)
    """The stages prepared to run so far."""
    threads: int | None = None
    """The threads a run uses (None: every core; `cimxdsl.device.threads`)."""
    name: str = "model"
    input_names: list[str] = field(default_factory=list)
    """The ONNX model's input names (empty: the entry function's argument names)."""
    output_names: list[str] = field(default_factory=list)
    """The ONNX model's output names (empty: the names of the values the entry function returns)."""

    def __post_init__(self) -> None:
        if not self.input_names or not self.output_names:
            function = entry_function(self.module(), "main")
            arguments = function.body.block.args
            self.input_names = self.input_names or [a.name_hint or f"input_{i}" for i, a in enumerate(arguments)]
            self.output_names = self.output_names or result_names(function)

    def __repr__(self) -> str:
        return (
            f"CompiledModel(model={self.name!r}, target={self.options.get('target', 'memristor')!r}, "
            f"device={self.device.name!r}, mode={self.options.get('mode')!r}, stages={list(self.stages)})"
        )

    def module(self, stage: str = "func") -> ModuleOp:
        if stage not in self.stages:
            raise CompileError(f"unknown stage '{stage}' (stages: {', '.join(self.stages)})")
        ir = self.stages[stage]
        if isinstance(ir, str):
            ir = self.stages[stage] = parse_module_text(ir, f"<{stage}>")
        elif isinstance(ir, RebuiltStage):
            module = self.module(ir.base).clone()
            for passes in ir.passes:
                apply_passes(module, passes)
            ir = self.stages[stage] = module
        return ir

    def mlir(self, stage: str = "func") -> str:
        """The IR after `stage`, as text."""
        return str(self.module(stage))

    def run(self, *inputs: np.ndarray, stage: str = "func", device: Device | None = None) -> RunResult:
        """Run the IR after `stage` on `inputs`, which must have the shapes and types of the
        compiled model's inputs (`cimxdsl.data_io`; else an `InputError`)."""
        arrays, _ = check_inputs(function_inputs(self.module(stage)), inputs)
        device = device or Device(self.device)
        if device.config.static_adc and not device.adc_spans:
            device.adc_spans = self.static_adc_spans(device.config)
        return self.program(stage)(arrays, device)

    def program(self, stage: str = "func") -> Program:
        """The IR after `stage` prepared to run (once per stage: every later run reuses it)."""
        if stage not in self.programs:
            self.programs[stage] = Program(self.module(stage), self.device)
        self.programs[stage].threads = check_threads(self.threads)
        return self.programs[stage]

    def static_adc_spans(self, config: DeviceConfig) -> dict:
        """The spans of a static ADC range: the calibration inputs run once on the nominal device."""
        key = config.calibration_key
        if key not in self.adc_spans:
            if self.calibration_inputs is None:
                raise CompileError(f"device '{config.name}' has a static ADC range: compile with calibration data")
            recorder = Device(config.nominal, calibrating=True)
            for sample in self.calibration_inputs:
                self.program()([np.asarray(x, np.float32) for x in sample], recorder)
            self.adc_spans[key] = recorder.adc_spans
        return self.adc_spans[key]

    def __call__(self, *inputs: np.ndarray | Mapping[str, np.ndarray]) -> np.ndarray | list[np.ndarray]:
        """Run the lowered program on the device; one output array, or a list of them. The inputs in
        order, or one dict by name. The device keeps its weights between calls, so weights still
        resident are not written again."""
        inputs = self.positional(inputs)
        if self.resident is None:
            self.resident = Device(self.device)
        self.resident.reset_metrics()
        self.last_inputs = list(inputs)
        self.last_run = self.run(*inputs, device=self.resident)
        outputs = self.last_run.outputs
        return outputs[0] if len(outputs) == 1 else outputs

    @property
    def precision(self) -> dict:
        """The mode, the bits the model was quantized to, and what limits the device's results."""
        mode = self.options.get("mode", "int8")
        quantized = quantization_bits(self.device) if mode == "int8" else None
        return {"mode": mode, "quantized_bits": quantized, **self.device.precision}

    def report(self) -> Report:
        """Latency, energy by component and crossbar writes of the last call: the total of the
        lowered program, and per layer from the scheduled cim program on the same inputs; with
        the device, mode and bits that produced them (`precision`). A dict that prints as tables."""
        if self.last_run is None or self.last_inputs is None:
            raise CompileError("call the model on an input before asking for its report")
        layers = self.run(*self.last_inputs, stage="schedule").layers
        report = self.last_run.device.report()
        return Report(
            {
                "model": self.name,
                "device": self.device.name,
                "precision": self.precision,
                "options": self.options,
                "notes": self.notes,
                "compile_seconds": self.compile_seconds,
                "latency_ns": report["latency_ns"],
                "latency_cycles": report["latency_cycles"],
                "total": report["total"],
                "layers": layers,
                "runtime_products": runtime_products(layers),
                "crossbars": report.get("crossbars", {}),
            }
        )

    def save(self, path: str | Path) -> None:
        """Write a `.cimx` file: a zip of `manifest.json` (format version, device, options), the
        IR of every stage as text and the calibration inputs (`calibration.npz`, which a static ADC
        range is calibrated on). No pickle."""
        manifest = {
            "format": "cimxdsl-compiled-model",
            "version": FORMAT_VERSION,
            "device": self.device.to_dict(),
            "options": self.options,
            "notes": self.notes,
            "stages": list(self.stages),
            "name": self.name,
            "input_names": self.input_names,
            "output_names": self.output_names,
        }
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("manifest.json", json.dumps(manifest, indent=2))
            for stage in self.stages:
                archive.writestr(f"{stage}.mlir", self.mlir(stage))
            if self.calibration_inputs is not None:
                archive.writestr("calibration.npz", calibration_bytes(self.calibration_inputs))


def quantization_bits(config: DeviceConfig) -> dict[str, int]:
    """The bits int8 mode quantizes weights and inputs to on `config`: 8, or fewer if it holds fewer."""
    return {"weights": min(8, config.weight_bits), "inputs": min(8, config.input_bits)}


def runtime_products(layers: list[dict]) -> dict:
    """Where the products of two run-time tensors ran (the layers with a `placement`) and the
    crossbar writes they caused."""
    placed = [layer for layer in layers if "placement" in layer]
    return {
        "products": [
            {key: layer[key] for key in ("layer", "placement", "writes", "cells_written", "digital_macs")}
            for layer in placed
        ],
        "host": sum(layer["placement"] == "host" for layer in placed),
        "crossbar": sum(layer["placement"] == "crossbar" for layer in placed),
        "writes": sum(layer["writes"] for layer in placed),
        "cells_written": sum(layer["cells_written"] for layer in placed),
    }


def load(path: str | Path) -> CompiledModel:
    """Read a model written by `CompiledModel.save`."""
    try:
        with zipfile.ZipFile(path) as archive:
            manifest = json.loads(archive.read("manifest.json"))
            if manifest.get("format") != "cimxdsl-compiled-model":
                raise CompileError(f"'{path}' is not a compiled cimxdsl model")
            if manifest.get("version") != FORMAT_VERSION:
                raise CompileError(f"'{path}' has format version {manifest.get('version')}, expected {FORMAT_VERSION}")
            stages = {stage: archive.read(f"{stage}.mlir").decode() for stage in manifest["stages"]}
            calibration = archive.read("calibration.npz") if "calibration.npz" in archive.namelist() else None
    except (OSError, zipfile.BadZipFile, KeyError, json.JSONDecodeError) as e:
        raise CompileError(f"cannot read compiled model '{path}': {e}") from None
    device = DeviceConfig.from_dict(manifest["device"])
    names = {k: manifest[k] for k in ("name", "input_names", "output_names") if k in manifest}
    model = CompiledModel(stages, device, manifest["options"], manifest.get("notes", []), **names)
    model.calibration_inputs = None if calibration is None else calibration_from_bytes(calibration)
    return model


def calibration_bytes(samples: list) -> bytes:
    """Calibration samples (each a list of input arrays) as the bytes of an `.npz` file."""
    buffer = io.BytesIO()
    np.savez(buffer, **{f"sample{i}_input{j}": x for i, sample in enumerate(samples) for j, x in enumerate(sample)})
    return buffer.getvalue()


def calibration_from_bytes(data: bytes) -> list:
    """The samples `calibration_bytes` wrote, in order."""
    with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
        keys = sorted(arrays.files, key=lambda k: tuple(int(n) for n in k.removeprefix("sample").split("_input")))
        samples: dict[int, list] = {}
        for key in keys:
            samples.setdefault(int(key.removeprefix("sample").split("_input")[0]), []).append(arrays[key])
    return [samples[i] for i in sorted(samples)]


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


@dataclass(repr=False)
class PimModel(OnnxFace):
    """A model compiled to per-core PIM instructions (pimsim-nn artifacts in `directory`) for one
    image: calling it (inputs in order, or one dict by name) checks the inputs against the model's
    (`inputs`), quantizes them, executes the instructions in the validator for each image of the
    batch in turn and dequantizes."""

    program: IntegerProgram
    """The integer program of one image: its interpretation is what the instructions must give."""
    directory: Path
    report_data: dict
    inputs: list[InputSpec] = field(default_factory=list)
    """The model's inputs as declared (an open or fixed batch of N streams N images)."""
    last_result: object = None
    name: str = "model"
    input_names: list[str] = field(default_factory=list)
    output_names: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        return (
            f"PimModel(model={self.name!r}, target='pim', device={self.report_data.get('device', '')!r}, "
            f"cores={self.report_data.get('cores_used')}, artifacts='{self.directory}')"
        )

    def images(self, inputs: Sequence[np.ndarray]) -> list[list[np.ndarray]]:
        """The checked inputs, one list per image (its batch of 1)."""
        try:
            arrays, _ = check_inputs(self.inputs or function_inputs(self.program.module), inputs)
        except InputError as e:
            raise CompileError(str(e)) from None
        count = len(arrays[0]) if arrays and arrays[0].ndim else 1
        return [[x[i : i + 1] for x in arrays] for i in range(count)]

    def golden(self, *inputs: np.ndarray) -> list[np.ndarray]:
        """The integer outputs of the program interpreted on the host, for `inputs` (image by image)."""
        module = self.program.module
        runs = [run(module, self.program.quantize(image), "ideal").outputs for image in self.images(inputs)]
        return [np.concatenate(outputs) for outputs in zip(*runs, strict=True)]

    def __call__(self, *inputs: np.ndarray) -> np.ndarray | list[np.ndarray]:
        from cimxdsl.backend.artifacts import read_artifacts
        from cimxdsl.backend.validator import validate_images

        images = self.images(self.positional(inputs))
        quantized = [np.concatenate(x) for x in zip(*(self.program.quantize(image) for image in images), strict=True)]
        self.last_result = validate_images(read_artifacts(self.directory), quantized)
        outputs = self.program.dequantize(self.last_result.outputs)
        return outputs[0] if len(outputs) == 1 else outputs

    def report(self) -> Report:
        report = Report(self.report_data)
        if self.last_result is not None:
            report["images"] = self.last_result.images
            report["executed_instructions"] = self.last_result.executed
            report["round_robin_steps"] = self.last_result.steps
            report["executed_instructions_per_image"] = self.last_result.executed_per_image
        return report


def pim_unsupported(model: onnx.ModelProto) -> str | None:
    """Why the PIM flow cannot take `model` yet, naming the first node: a LayerNormalization, or a
    MatMul/Gemm of two run-time tensors (attention's Q·Kᵀ and P·V). Run-time: not an initializer,
    a Constant, or computed from those alone."""
    constant = {init.name for init in model.graph.initializer} | {""}
    for node in model.graph.node:
        if node.op_type == "LayerNormalization":
            return f"--target pim does not support LayerNormalization yet (node '{node.name}'); use --target memristor"
        if node.op_type in ("MatMul", "Gemm") and not {node.input[0], node.input[1]} & constant:
            return (
                f"--target pim does not support {node.op_type} of two run-time tensors (attention) yet "
                f"(node '{node.name}'); use --target memristor"
            )
        if all(name in constant for name in node.input):
            constant.update(node.output)
    return None


PIM_OPTIONS = ("cores", "crossbars_per_core", "out_dir", "packing", "mapping", "mapping_budget", "chip")
"""The keyword options of `compile_pim` that `compile(target="pim")` and `cim-compile --target pim`
forward as given (the defaults are `compile_pim`'s)."""


def compile_pim(
    model: onnx.ModelProto | str | Path,
    device: str | Path | DeviceConfig = DEFAULT_DEVICE,
    calibration=None,
    cores: int | None = None,
    crossbars_per_core: int | None = None,
    out_dir: str | Path | None = None,
    packing: str = DEFAULT_PACKING,
    mapping: str = "none",
    mapping_budget: float = 10.0,
    chip: str | Path | ChipConfig = "pimcomp",
) -> PimModel:
    """Import `model` as an integer program (power-of-two scales) and compile it to per-core PIM
    instructions with the device's crossbar size on `chip`'s cores (a preset name or a TOML/JSON
    file, `cimxdsl.device.chip`): `cores` of `crossbars_per_core` crossbars when given, else the
    chip's when the model fits them, else as many cores as the model needs (`packing`: `im2col`, the
    default, or `kernel`, see `cinm-to-spatial`; `mapping`: `none`, `greedy` or `ga` within `mapping_budget`
    seconds, see `spatial-mapping`). The report includes the chip's performance estimate
    (`performance`)."""
    import tempfile

    from cimxdsl.flow.pim import compile_to_pim

    config = device if isinstance(device, DeviceConfig) else load_device_config(device)
    try:
        chip_config = load_chip_config(chip)
    except ChipConfigError as e:
        raise CompileError(str(e)) from None
    notes: list[str] = []
    onnx_model = load_model(model)
    specs = onnx_inputs(onnx_model)
    unsupported = pim_unsupported(onnx_model)
    if unsupported:
        raise CompileError(unsupported)
    onnx_model = one_image(onnx_model, specs)
    start = time.perf_counter()
    program = import_integer(onnx_model, calibration_samples(calibration, onnx_model, notes))
    import_seconds = time.perf_counter() - start
    directory = Path(out_dir) if out_dir is not None else Path(tempfile.mkdtemp(prefix="cimxdsl-pim-"))
    try:
        report = compile_to_pim(
            program.module.clone(),
            cores=cores,
            crossbars_per_core=crossbars_per_core,
            xbar_size=config.rows,
            out_dir=directory,
            packing=packing,
            mapping=mapping,
            mapping_budget=mapping_budget,
            chip=chip_config,
        )
    except (PassFailedException, PerformanceError) as e:
        raise CompileError(str(e)) from None
    report["compile_time_s"] = {"import and calibrate": import_seconds, **report["compile_time_s"]}
    notes += chip_notes(report, chip_config, cores)
    report["notes"] = notes
    report["device"] = config.name
    report["precision"] = {
        "mode": "int8",
        "quantized_bits": {"weights": 8, "inputs": 8},
        "device": config.name,
        "crossbar_rows": config.rows,
        "summary": (
            f"mode int8 (power-of-two scales, 8-bit weights and inputs); device {config.name}: its "
            f"{config.rows}-row crossbars only (the PIM instructions compute exact integer products: "
            "no cell, DAC, ADC or noise model)"
        ),
    }
    names = dict(
        input_names=[i.name for i in graph_inputs(onnx_model)], output_names=[o.name for o in onnx_model.graph.output]
    )
    return PimModel(program, directory, report, specs, name=model_name(model), **names)


def one_image(model: onnx.ModelProto, specs: list[InputSpec]) -> onnx.ModelProto:
    """`model` for a batch of one image: the PIM pipeline streams a batch image after image. A
    fixed batch that cannot be set to 1 (a shape computed from it) is an error."""
    batches = {s.shape[0] for s in specs if s.shape}
    if batches <= {1}:
        return model
    try:
        single = load_model(model, 1)
    except OnnxImportError as e:
        raise CompileError(
            f"--target pim compiles one image at a time, but this model's batch cannot be 1 ({e}); "
            "export it with batch 1"
        ) from None
    return single


def chip_notes(report: dict, chip: ChipConfig, cores: int | None) -> list[str]:
    """Which cores the compiler chose, and when the estimate goes beyond the chip."""
    per_core, needed = report["crossbars_per_core"], report["crossbars_needed"]
    notes = []
    if cores is None and report["cores_as_needed"]:
        notes.append(
            f"no core count given: the model needs {needed} crossbars, more than chip '{chip.name}' holds "
            f"({chip.core_cnt} cores x {per_core}): using as many cores as the model needs "
            f"({report['cores']} cores of {per_core} crossbars)"
        )
    elif cores is None:
        notes.append(f"no core count given: using chip '{chip.name}' ({chip.core_cnt} cores x {per_core} crossbars)")
    if report["cores_used"] > chip.core_cnt:
        notes.append(
            f"the performance estimate gives all {report['cores_used']} cores the figures of chip "
            f"'{chip.name}', which has {chip.core_cnt}"
        )
    return notes


def compile(
    model: onnx.ModelProto | str | Path,
    device: str | Path | DeviceConfig = DEFAULT_DEVICE,
    target: str = "memristor",
    calibration=None,
    mode: str = "int8",
    crossbars: int | None = None,
    strategy: str = "list",
    example_input=None,
    batch: int | None = None,
    progress: Callable[[str], None] | None = None,
    placement: str = "host",
    threads: int | None = None,
    **pim_options: Any,
) -> CompiledModel | PimModel:
    """Import, quantize (`mode="int8"`; `"exact"` keeps floats for an ideal device), lower through
    the memristor flow for `device` (a preset name, a TOML file or a `DeviceConfig`; by default
    `cimxdsl.device.DEFAULT_DEVICE`, ISAAC) and keep the IR of every stage. The compiled model is
    called on NumPy inputs (in order, or one dict by name) and reports what the call cost
    (`report()`). A `torch.nn.Module` is exported to ONNX with `example_input`. `batch` compiles for
    that many inputs at once (the leading dimension); int8 quantization is calibrated on the model at
    its own batch, so its scales are the same for any `batch`.
    `placement` (`host`, `crossbar`, `auto`) places the products of two run-time tensors (attention).
    `target="pim"` compiles with `compile_pim`, which takes the `PIM_OPTIONS` (`cores`,
    `crossbars_per_core`, `out_dir`, `packing`, `mapping`, `mapping_budget`, `chip`) as keywords.
    `threads`: the threads the compiled model's runs use (None: every core)."""
    try:
        check_threads(threads)
    except ValueError as e:
        raise CompileError(str(e)) from None
    if unknown := sorted(set(pim_options) - set(PIM_OPTIONS)):
        raise CompileError(f"unknown option {', '.join(unknown)} (options of target 'pim': {', '.join(PIM_OPTIONS)})")
    if target == "pim":
        model = to_onnx(model, example_input)
        return compile_pim(model, device, calibration, **pim_options)
    if target != "memristor":
        raise CompileError(f"unknown target '{target}' (targets: memristor, pim)")
    if pim_options:
        raise CompileError(f"{', '.join(pim_options)}: options of target 'pim'")
    if mode not in MODES:
        raise CompileError(f"unknown mode '{mode}' (modes: {', '.join(MODES)})")
    if placement not in PLACEMENTS:
        raise CompileError(f"unknown placement '{placement}' (placements: {', '.join(PLACEMENTS)})")
    config = device if isinstance(device, DeviceConfig) else load_device_config(device)
    if mode == "exact" and not config.exact:
        raise CompileError(
            f"mode 'exact' needs a lossless, noiseless device; '{config.name}' is not (device 'ideal' is)"
        )
    crossbars = min(config.crossbars, DEFAULT_CROSSBARS) if crossbars is None else crossbars
    if not 1 <= crossbars <= config.crossbars:
        raise CompileError(f"crossbars must be in 1..{config.crossbars} for device '{config.name}', got {crossbars}")
    say = progress or (lambda _: None)
    notes: list[str] = []
    seconds: dict[str, float] = {}
    stages: dict[str, ModuleOp | str] = {}

    rebuilt: list[str | ModulePass] = []
    """The passes since the last kept stage."""

    def stage(name: str, work: Callable[[], ModuleOp], passes: str | ModulePass | None = None) -> ModuleOp:
        say(name)
        start = time.perf_counter()
        module = work()
        seconds[name] = time.perf_counter() - start
        if passes is not None:
            rebuilt.append(passes)
        if name == STAGES[-1]:
            stages[name] = module  # not changed again
        elif name in KEPT_STAGES:
            stages[name] = module.clone()
            rebuilt.clear()
        else:
            base = next(kept for kept in reversed(stages) if isinstance(stages[kept], ModuleOp))
            stages[name] = RebuiltStage(base, tuple(rebuilt))
        freeze()
        return module

    with stages_frozen() as freeze:
        label = model_name(model)
        source = to_onnx(model, example_input)
        onnx_model = load_model(source, batch)
        module = stage("import", lambda: import_onnx(onnx_model))
        if mode == "int8":
            # calibrated on the model at its own batch: the scales do not depend on the batch compiled for
            own = onnx_model if batch is None else load_model(source)
            own_shapes, shapes = model_input_shapes(own), model_input_shapes(onnx_model)
            samples = regroup(calibration_samples(calibration, own, notes), own_shapes)
            quantized_bits = quantization_bits(config)
            bits = dict(weight_bits=quantized_bits["weights"], input_bits=quantized_bits["inputs"])

            def quantized() -> ModuleOp:
                calibrated = None if own_shapes == shapes else import_onnx(own)
                return quantize(module, samples, calibrated=calibrated, **bits)

            module = stage("quantize", quantized)
            samples = regroup(samples, shapes)
        schedule: str | ModulePass = (
            ScheduleListPass.for_device(config) if strategy == "list" else f"schedule-{strategy}"
        )
        for name, spec in (
            ("cinm", LinalgToCinmPass.for_device(config, placement=placement)),
            ("tile", TilePass.for_device(config)),
            ("cim", f"cinm-to-cim{{crossbars={crossbars}}}"),
            ("schedule", schedule),
            ("memristor", "cim-to-memristor"),
            ("func", "memristor-to-func"),
        ):
            module = stage(name, lambda spec=spec: apply_passes(module, spec), spec)
    options = {
        "target": target,
        "mode": mode,
        "crossbars": crossbars,
        "strategy": strategy,
        "batch": batch,
        "placement": placement,
    }
    names = dict(
        input_names=[i.name for i in graph_inputs(onnx_model)], output_names=[o.name for o in onnx_model.graph.output]
    )
    model = CompiledModel(stages, config, options, notes, seconds, threads=threads, name=label, **names)
    model.calibration_inputs = samples if mode == "int8" else None
    return model


@contextmanager
def stages_frozen() -> Iterator[Callable[[], None]]:
    """Yields a function to call after each stage: it moves every object alive into the permanent
    generation of Python's cyclic collector (`gc.freeze`), so that full collections no longer walk
    the IR of every finished stage again; within a stage a full collection comes every 100 middle
    ones instead of every 10. The collector took a third of ShuffleNet's compile time otherwise.
    All is unfrozen and the thresholds restored at the end; nothing changes if the caller had
    frozen objects already."""
    if gc.get_freeze_count():
        yield lambda: None
        return
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], max(thresholds[2], 100))
    try:
        yield gc.freeze
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)


def apply_passes(module: ModuleOp, passes: str | ModulePass) -> ModuleOp:
    """Apply a pass pipeline (text, as for cim-opt) or one pass object to `module` in place."""
    try:
        pipeline = (
            PassPipeline.parse_spec(get_all_passes(), passes) if isinstance(passes, str) else PassPipeline((passes,))
        )
        pipeline.apply(make_context(), module)
    except (ValueError, KeyError) as e:
        raise CompileError(f"cannot run '{passes}': {e}") from None
    return module


def to_onnx(model, example_input) -> onnx.ModelProto | str | Path:
    """`model` as something `load_model` takes; a `torch.nn.Module` is exported first."""
    if isinstance(model, onnx.ModelProto | str | Path):
        return model
    if hasattr(model, "forward") and hasattr(model, "parameters"):
        if example_input is None:
            raise CompileError("compiling a torch.nn.Module needs example_input")
        import torch

        buffer = io.BytesIO()
        model.eval()
        inputs = example_input if isinstance(example_input, tuple) else (example_input,)
        torch.onnx.export(model, inputs, buffer, opset_version=17, dynamo=False)
        return onnx.load_from_string(buffer.getvalue())
    raise CompileError(f"cannot compile a {type(model).__name__}: give an ONNX model, a path or a torch.nn.Module")
