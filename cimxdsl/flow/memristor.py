"""The memristor flow: an ONNX model imported, quantized (int8) and lowered through the `memristor`
pipeline (`MemristorPipelinePass`, the passes `cim-opt -p memristor` runs), the IR of every stage
kept for the `CompiledModel` through the pipeline's callback."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import PassFailedException

from cimxdsl.device import DeviceConfig
from cimxdsl.flow.calibration import calibration_samples, model_input_shapes, regroup
from cimxdsl.flow.collector import stages_frozen
from cimxdsl.flow.source import model_name, to_onnx
from cimxdsl.frontend.onnx_importer import graph_inputs, import_onnx, load_model
from cimxdsl.frontend.quantize import first_non_binary_weight, layer_names, quantize
from cimxdsl.models import CompiledModel, CompileError, RebuiltStage, quantization_bits
from cimxdsl.parsing import make_context
from cimxdsl.precision import resolve_precision
from cimxdsl.transforms import get_all_passes
from cimxdsl.transforms.memristor.pipeline import DEFAULT_CROSSBARS, MemristorPipelinePass
from cimxdsl.transforms.memristor.schedule import schedule_notes

MODES = ("int8", "exact")
STAGES = ("import", "quantize", *(name for name, _ in MemristorPipelinePass().stages()))
"""The stages whose IR a `CompiledModel` holds: the import, the quantization, then the pipeline's."""
KEPT_STAGES = ("import", "quantize", "schedule", "func")
"""Stages whose IR `compile` keeps (the report runs `schedule`, a call `func`); the others are
rebuilt from the stage before them when asked for, instead of cloning every stage's IR."""


@dataclass
class StageRecorder:
    """Keeps the IR after each stage (`STAGES`), times each stage and says which one begins; as the
    callback of the pipeline's `PassPipeline` it sees the passes of a stage run one after another."""

    stage_of: dict[str, str]
    """The stage of each pass of the pipeline, by the pass's name."""
    say: Callable[[str], None]
    freeze: Callable[[], None]
    stages: dict[str, ModuleOp | RebuiltStage] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    rebuilt: list[ModulePass] = field(default_factory=list)
    """The passes since the last kept stage."""
    start: float = 0.0

    def begin(self, name: str) -> None:
        self.say(name)
        self.start = time.perf_counter()

    def end(self, name: str, module: ModuleOp) -> None:
        self.seconds[name] = time.perf_counter() - self.start
        if name == STAGES[-1]:
            self.stages[name] = module  # not changed again
        elif name in KEPT_STAGES:
            self.stages[name] = module.clone()
            self.rebuilt.clear()
        else:
            base = next(kept for kept in reversed(self.stages) if isinstance(self.stages[kept], ModuleOp))
            self.stages[name] = RebuiltStage(base, tuple(self.rebuilt))
        self.freeze()

    def stage(self, name: str, work: Callable[[], ModuleOp]) -> ModuleOp:
        """Run the stage `name` that is no pass (import, quantize)."""
        self.begin(name)
        module = work()
        self.end(name, module)
        return module

    def __call__(self, previous: ModulePass | None, module: ModuleOp, following: ModulePass | None) -> None:
        before = None if previous is None else self.stage_of[previous.name]
        after = None if following is None else self.stage_of[following.name]
        if previous is not None:
            self.rebuilt.append(previous)
        if before != after:
            if before is not None:
                self.end(before, module)
            if after is not None:
                self.begin(after)


def compile_memristor(
    model,
    config: DeviceConfig,
    calibration,
    mode: str,
    crossbars: int | None,
    strategy: str,
    example_input,
    batch: int | None,
    progress: Callable[[str], None] | None,
    placement: str,
    threads: int | None,
    precision=None,
    backend: str = "numpy",
    array_device: str | None = None,
) -> CompiledModel:
    """`cimxdsl.compile` for `target="memristor"`, its options checked (see there)."""
    if mode not in MODES:
        raise CompileError(f"unknown mode '{mode}' (modes: {', '.join(MODES)})")
    if precision is not None and mode != "int8":
        raise CompileError(f"a per-layer precision needs mode 'int8' (mode '{mode}' keeps floats)")
    if mode == "exact" and not config.exact:
        raise CompileError(
            f"mode 'exact' needs a lossless, noiseless device; '{config.name}' is not (device 'ideal' is)"
        )
    crossbars = min(config.crossbars, DEFAULT_CROSSBARS) if crossbars is None else crossbars
    if not 1 <= crossbars <= config.crossbars:
        raise CompileError(f"crossbars must be in 1..{config.crossbars} for device '{config.name}', got {crossbars}")
    pipeline = MemristorPipelinePass.for_device(config, crossbars=crossbars, strategy=strategy, placement=placement)
    try:
        stage_of = {p.name: name for name, passes in pipeline.stages() for p in passes}
    except PassFailedException as e:
        raise CompileError(str(e)) from None
    notes: list[str] = []
    with stages_frozen() as freeze:
        recorder = StageRecorder(stage_of, progress or (lambda _: None), freeze)
        label = model_name(model)
        source = to_onnx(model, example_input)
        onnx_model = load_model(source, batch)
        module = recorder.stage("import", lambda: import_onnx(onnx_model))
        if mode == "int8":
            # calibrated on the model at its own batch: the scales do not depend on the batch compiled for
            own = onnx_model if batch is None else load_model(source)
            own_shapes, shapes = model_input_shapes(own), model_input_shapes(onnx_model)
            samples = regroup(calibration_samples(calibration, own, notes), own_shapes)
            quantized_bits = quantization_bits(config)
            bits = dict(weight_bits=quantized_bits["weights"], input_bits=quantized_bits["inputs"])

            def quantized() -> ModuleOp:
                calibrated = None if own_shapes == shapes else import_onnx(own)
                layers = None
                if precision is not None:
                    default = (bits["weight_bits"], bits["input_bits"])
                    layers = resolve_precision(precision, layer_names(module), default)
                try:
                    quantize(
                        module, samples, calibrated=calibrated, precision=layers,
                        ternary_inputs=config.input_encoding == "bipolar", **bits,
                    )  # fmt: skip
                except ValueError as e:
                    raise CompileError(str(e)) from None
                bad = first_non_binary_weight(module) if config.encoding == "reference" else None
                if bad is not None:
                    raise CompileError(
                        f"layer '{bad[0]}': weight {bad[1]} is not binary, but device '{config.name}' maps "
                        "weights with 'encoding'='reference' (-1 and +1 only)"
                    )
                return module

            module = recorder.stage("quantize", quantized)
            samples = regroup(samples, shapes)
        pipeline.pipeline(recorder).apply(make_context(), module)
    scheduled = recorder.stages.get("schedule")
    if isinstance(scheduled, ModuleOp):
        notes += schedule_notes(scheduled)
    options = {
        "target": "memristor",
        "mode": mode,
        "crossbars": crossbars,
        "strategy": strategy,
        "batch": batch,
        "placement": placement,
    }
    names = dict(
        input_names=[i.name for i in graph_inputs(onnx_model)], output_names=[o.name for o in onnx_model.graph.output]
    )
    compiled = CompiledModel(
        recorder.stages, config, options, notes, recorder.seconds, threads=threads, name=label,
        backend=backend, array_device=array_device, **names,
    )  # fmt: skip
    compiled.calibration_inputs = samples if mode == "int8" else None
    return compiled


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
