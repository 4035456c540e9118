"""The compiled models `cimxdsl.compile` returns: `CompiledModel` (the memristor flow: IR of every
stage, run on the simulated device, report) and `PimModel` (the PIM flow: per-core instructions run
in the validator); both are called as onnxruntime sessions are (`OnnxFace`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline

from cimxdsl import storage
from cimxdsl.data_io import InputError, InputSpec, check_inputs, function_inputs
from cimxdsl.device import Device, DeviceConfig
from cimxdsl.device.config import CALIBRATION_FIELDS, GROUPS
from cimxdsl.device.threads import check_threads
from cimxdsl.frontend.integer import IntegerProgram
from cimxdsl.interpreters import Program, RunResult, entry_function, result_names, run
from cimxdsl.parsing import make_context, parse_module_text
from cimxdsl.report import Report


class CompileError(ValueError):
    """A model, option or device the compiler cannot take; the message is one line."""


@dataclass(frozen=True)
class RebuiltStage:
    """A stage not kept: its IR is that of stage `base` after `passes` (deterministic)."""

    base: str
    passes: tuple[ModulePass, ...]


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
    backend: str = "numpy"
    """The array library the crossbar products run on (`cimxdsl.device.backend`)."""
    array_device: str | None = None
    """The device that library runs on ("cpu", "cuda:0"; None: the library's default)."""
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
            PassPipeline(ir.passes).apply(make_context(), module)
            ir = self.stages[stage] = module
        return ir

    def mlir(self, stage: str = "func") -> str:
        """The IR after `stage`, as text."""
        return str(self.module(stage))

    def run(self, *inputs: np.ndarray, stage: str = "func", device: Device | None = None) -> RunResult:
        """Run the IR after `stage` on `inputs`, which must have the shapes and types of the
        compiled model's inputs (`cimxdsl.data_io`; else an `InputError`)."""
        arrays, _ = check_inputs(function_inputs(self.module(stage)), inputs)
        device = device or self.new_device()
        if device.config.static_adc and not device.adc_spans:
            device.adc_spans = self.static_adc_spans(device.config)
        return self.program(stage)(arrays, device)

    def new_device(self, config: DeviceConfig | None = None) -> Device:
        """A fresh device of `config` (None: the model's) on the model's array backend."""
        return Device(config or self.device, backend=self.backend, array_device=self.array_device)

    def program(self, stage: str = "func") -> Program:
        """The IR after `stage` prepared to run (once per stage: every later run reuses it)."""
        if stage not in self.programs:
            self.programs[stage] = Program(self.module(stage), self.device)
        self.programs[stage].threads = check_threads(self.threads)
        return self.programs[stage]

    def static_adc_spans(self, config: DeviceConfig) -> dict:
        """The spans of a static ADC range: the calibration inputs run once on the nominal device
        (or the spans a saved model holds for devices that agree on `CALIBRATION_FIELDS`)."""
        key = config.calibration_key
        if key not in self.adc_spans:
            if self.calibration_inputs is None:
                raise CompileError(self._uncalibrated(config))
            recorder = Device(config.nominal, calibrating=True)
            for sample in self.calibration_inputs:
                self.program()([np.asarray(x, np.float32) for x in sample], recorder)
            self.adc_spans[key] = recorder.adc_spans
        return self.adc_spans[key]

    def _uncalibrated(self, config: DeviceConfig) -> str:
        """Why `config`'s static ADC range has no spans, in one line naming the key."""
        start = f"device '{config.name}': 'adc_range' = '{config.adc_range}' is a static ADC range"
        if not self.adc_spans:
            return f"{start}: compile with calibration data"
        key = config.calibration_key
        # the calibration the model holds that differs from this device in the fewest fields
        held = min(self.adc_spans, key=lambda other: sum(a != b for a, b in zip(other, key, strict=True)))
        differ = [
            f"'{f}' = {ours!r} (calibrated: {theirs!r})"
            for f, ours, theirs in zip(CALIBRATION_FIELDS, key, held, strict=True)
            if ours != theirs
        ]
        return f"{start}, and the model was not calibrated for {', '.join(differ)} and holds no calibration inputs"

    def __call__(self, *inputs: np.ndarray | Mapping[str, np.ndarray]) -> np.ndarray | list[np.ndarray]:
        """Run the lowered program on the device; one output array, or a list of them. The inputs in
        order, or one dict by name. The device keeps its weights between calls, so weights still
        resident are not written again."""
        inputs = self.positional(inputs)
        if self.resident is None:
            self.resident = self.new_device()
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
        """Write a `.cimx` file (`cimxdsl.storage`): the IR of every stage as text, the device, the
        options, the calibration inputs and the static ADC spans recorded on them (for the model's
        own device, if it has a static range, and every device calibrated so far). No pickle."""
        if self.device.static_adc and self.calibration_inputs is not None:
            self.static_adc_spans(self.device)
        calibrations = list(self.adc_spans)
        spans = {
            f"{i}_{tile.hex()}": span
            for i, key in enumerate(calibrations)
            for tile, span in self.adc_spans[key].items()
        }
        manifest = {
            "device": self.device.to_dict(),
            "options": self.options,
            "notes": self.notes,
            "name": self.name,
            "input_names": self.input_names,
            "output_names": self.output_names,
            "adc_spans": [dict(zip(CALIBRATION_FIELDS, key, strict=True)) for key in calibrations],
        }
        stages = {stage: self.mlir(stage) for stage in self.stages}
        storage.write(path, manifest, stages, self.calibration_inputs, spans)


_MISSING = object()


def load(path: str | Path) -> CompiledModel:
    """Read a model written by `CompiledModel.save`."""
    try:
        manifest, stages, calibration, spans = storage.read(path)
    except storage.ModelFileError as e:
        raise CompileError(str(e)) from None
    names = {k: manifest[k] for k in ("name", "input_names", "output_names") if k in manifest}
    device = DeviceConfig.from_dict(manifest["device"])
    model = CompiledModel(stages, device, manifest["options"], manifest.get("notes", []), **names)
    model.calibration_inputs = calibration
    # the spans of each calibration, by the fields it was recorded for (one that lacks a field is
    # skipped; one without the wire fields was recorded on ideal wires)
    wireless = {f: getattr(DeviceConfig(), f) for f in GROUPS["parasitics"]}
    keys = [
        tuple({**wireless, **fields}.get(f, _MISSING) for f in CALIBRATION_FIELDS)
        for fields in manifest.get("adc_spans", [])
    ]
    for name, span in spans.items():
        index, tile = name.split("_", 1)
        key = keys[int(index)]
        if _MISSING not in key:
            model.adc_spans.setdefault(key, {})[bytes.fromhex(tile)] = span
    return model


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
