"""The PIM flow: `compile_pim` (an ONNX model to a `PimModel`) and `compile_to_pim` (the spatial flow in
one call, from linalg (or cinm) to the artifact directory).

The passes (`cimxdsl.transforms`, the `pim` pipeline's list) lower the module to bufferized
`pim.core`s and `pim-codegen` generates the cores' packed code; the back end (`cimxdsl.backend`)
reads that code as artifacts, writes them and estimates their performance on a chip.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import onnx
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import PassFailedException

from cimxdsl.backend.artifacts import ArtifactError, Artifacts, write_artifacts
from cimxdsl.backend.emit import artifacts_of_code
from cimxdsl.backend.performance import PerformanceError, estimate
from cimxdsl.backend.pimsim_config import SIM_MODES, SimMode, write_pimsim_config
from cimxdsl.data_io import InputSpec, onnx_inputs
from cimxdsl.device import DEFAULT_DEVICE, DeviceConfig, load_device_config
from cimxdsl.device.chip import ChipConfig, ChipConfigError, load_chip_config
from cimxdsl.dialects.utils import PRECISION
from cimxdsl.flow.calibration import calibration_samples
from cimxdsl.flow.collector import stages_frozen
from cimxdsl.flow.source import model_name
from cimxdsl.frontend.integer import import_integer, product_layers
from cimxdsl.frontend.onnx_importer import OnnxImportError, graph_inputs, load_model
from cimxdsl.models import CompileError, PimModel
from cimxdsl.precision import resolve_precision
from cimxdsl.transforms.common.functions import function_notes
from cimxdsl.transforms.pim.cinm_to_spatial import CinmToSpatialPass
from cimxdsl.transforms.pim.crossbar_weights import Packing
from cimxdsl.transforms.pim.mapping import Strategy
from cimxdsl.transforms.pim.mapping.bands import DEFAULT_ROWS_PER_BAND, SLACK, Pipeline
from cimxdsl.transforms.pim.pim_codegen import functions_with_cores, generate
from cimxdsl.transforms.pim.pipeline import DEFAULT_PACKING, PimPipelinePass
from cimxdsl.transforms.pim.spatial_mapping import SUMMARY, SpatialMappingPass, fitting_cores, spatial_crossbars
from cimxdsl.transforms.pim.spatial_to_pim import PIPELINE, SpatialToPimPass, pim_geometry

BandSlack = float | Literal["auto"]
SEARCHED_SLACKS = (SLACK, 1.0, 1.5)
"""The row pipeline's list-schedule slacks `band_slack="auto"` compiles, keeping the program of
least estimated latency (the best differs from program to program)."""


def count_ops(module: ModuleOp) -> int:
    """The ops of `module`, itself included (counted from a stack of ops: walking nested
    generators costs several times as much)."""
    count, stack = 0, [module]
    while stack:
        op = stack.pop()
        count += 1
        for region in op.regions:
            for block in region.blocks:
                stack.extend(block.ops)
    return count


def generate_artifacts(module: ModuleOp) -> Artifacts:
    """`pim-codegen`'s code for the module's cores, as artifacts: the instruction streams stay
    packed (`pim.CoreCode`) instead of becoming millions of IR ops nobody reads here."""
    functions = functions_with_cores(module)
    if len(functions) != 1:
        raise ArtifactError(f"expected one function with cores to generate code for, found {len(functions)}")
    codes = generate(functions[0])
    return artifacts_of_code(functions[0], codes)


def lowered(steps: list[ModulePass], module: ModuleOp, timer: PassTimer) -> Artifacts:
    """`module` through `steps` (the `pim` pipeline's, `pim-codegen` last), its code as artifacts
    (an `ArtifactError` as the failure of `pim-codegen`)."""
    PassPipeline(tuple(steps[:-1]), timer).apply(Context(), module)
    begin = time.perf_counter()
    try:
        artifacts = generate_artifacts(module)
    except ArtifactError as e:
        raise PassFailedException(f"{steps[-1].name}: {e}") from None
    timer.seconds[steps[-1].name] = timer.seconds.get(steps[-1].name, 0.0) + time.perf_counter() - begin
    return artifacts


def estimated(artifacts: Artifacts, chip: ChipConfig) -> dict[str, Any]:
    """The performance estimate of `artifacts` on `chip` as the report gives it, with its time."""
    begin = time.perf_counter()
    return estimate(artifacts, chip).as_dict() | {"estimate_s": time.perf_counter() - begin}


def searched_band_slack(
    steps: list[ModulePass], module: ModuleOp, timer: PassTimer, chip: ChipConfig
) -> tuple[Artifacts, dict[str, Any], str]:
    """`lowered` with each of `SEARCHED_SLACKS` as `spatial-to-pim`'s `band-slack` (the passes
    before it run once), `module` left as the one of least estimated latency on `chip`: its
    artifacts and estimate, and what was searched, in one line."""
    split = next(i for i, p in enumerate(steps) if isinstance(p, SpatialToPimPass))
    PassPipeline(tuple(steps[:split]), timer).apply(Context(), module)
    tried: list[str] = []
    best: tuple[dict[str, Any], float, ModuleOp, Artifacts] | None = None
    for slack in SEARCHED_SLACKS:
        candidate = module.clone()
        artifacts = lowered([replace(steps[split], band_slack=slack), *steps[split + 1 :]], candidate, timer)
        performance = estimated(artifacts, chip)
        tried.append(f"{slack:g}: {performance['latency_ns'] / 1e6:.3g} ms")
        if best is None or performance["latency_ns"] < best[0]["latency_ns"]:
            best = (performance, slack, candidate, artifacts)  # (the others are dropped as they come)
    assert best is not None
    performance, slack, chosen, artifacts = best
    old, new = module.body.block, chosen.body.block
    chosen.body.detach_block(new)
    module.body.detach_block(old)
    module.body.add_block(new)
    return artifacts, performance, f"band slack {slack:g} of {', '.join(tried)} (estimated latency)"


@dataclass
class PassTimer:
    """The callback of the PIM pipeline's `PassPipeline`: each pass's time (all its runs) and the ops
    it leaves, the crossbars of the spatial program (before any replica) and the mapping's summaries."""

    freeze: Callable[[], None] = lambda: None
    """Called after each pass (`stages_frozen`)."""
    seconds: dict[str, float] = field(default_factory=dict[str, float])
    ops: dict[str, int] = field(default_factory=dict[str, int])
    crossbars: tuple[int, ...] = ()
    """The crossbars of each compute after `cinm-to-spatial`."""
    summaries: list[str] = field(default_factory=list[str])
    start: float = 0.0

    def __call__(self, previous: ModulePass | None, module: ModuleOp, following: ModulePass | None) -> None:
        if previous is not None:
            self.seconds[previous.name] = self.seconds.get(previous.name, 0.0) + time.perf_counter() - self.start
            self.ops[previous.name] = count_ops(module)
            if isinstance(previous, CinmToSpatialPass):
                self.crossbars = spatial_crossbars(module)
            if isinstance(previous, SpatialMappingPass):
                self.summaries = function_notes(module, SUMMARY)
            self.freeze()
        self.start = time.perf_counter()


def compile_to_pim(
    module: ModuleOp,
    cores: int | None = None,
    crossbars_per_core: int | None = None,
    xbar_size: int | None = None,
    out_dir: str | Path | None = None,
    device: str = "",
    packing: Packing = DEFAULT_PACKING,
    array_group: int = 1,
    mapping: Strategy = "none",
    mapping_budget: float = 10.0,
    pipeline: Pipeline = "layer",
    rows_per_band: int = DEFAULT_ROWS_PER_BAND,
    band_slack: BandSlack = SLACK,
    share_rows: bool = False,
    row_weight: float = 0.0,
    chip: ChipConfig | None = None,
    pimsim_mode: SimMode = "latency",
    pimsim_time: float = 100.0,
) -> dict[str, Any]:
    """Lower `module` (linalg or cinm level, in place, up to `pim-bufferize`; the cores' code stays in
    the artifacts, packed, rather than becoming IR ops) to pimsim-nn artifacts in `out_dir` (if given)
    on `cores` cores (`0`: as many as the program needs; `None`: the `chip`'s when the program's
    crossbars fit them, else as many as it needs; without a chip, the device's) and report:
    instruction counts per op type, core and crossbar utilization, memory, IR sizes, compile time
    per stage and, with a `chip`, the performance estimate (`performance`); `packing` and
    `array_group` are `cinm-to-spatial`'s, `mapping` (`none`, `greedy`, `ga` within `mapping_budget` seconds)
    `spatial-mapping`'s strategy, `band_slack` the row pipeline's list-schedule slack (`"auto"`, with a
    `chip`: `searched_band_slack`), `share_rows` whether a replicated layer's replicas compute each
    of its bands together, each its own columns, `row_weight` how much more the mapping weighs the
    layers of few rows (`spatial-mapping`). With a `chip` and `out_dir`, pimsim-nn's configuration of the chip
    is written beside the artifacts (`pimsim_config.json`, `sim_mode` from `pimsim_mode`: `latency`
    or `throughput` for `pimsim_time` ms; `cimxdsl.backend.pimsim_config`). Raises
    `PassFailedException` with a one-line message when the program cannot be compiled (e.g. it needs
    more crossbars than given)."""
    options = dict(xbar_size=xbar_size, cores=cores, crossbars_per_core=crossbars_per_core, device=device)
    options |= dict(packing=packing, array_group=array_group, mapping=mapping, mapping_budget=mapping_budget)
    search = band_slack == "auto" and pipeline == "row"
    if search and chip is None:
        raise PassFailedException("band slack 'auto' needs a chip to estimate the programs on")
    slack = SLACK if band_slack == "auto" else band_slack
    options |= dict(pipelining=pipeline, rows_per_band=rows_per_band, band_slack=slack)
    options |= dict(share_rows=share_rows, row_weight=row_weight)
    flow = PimPipelinePass(**options) if chip is None else PimPipelinePass.for_chip(chip, **options)
    steps = flow.steps()
    with stages_frozen() as freeze:  # the IR of every finished pass is walked by full collections otherwise
        timer = PassTimer(freeze)
        start = time.perf_counter()
        searched, performance = "", None
        if search and chip is not None:
            artifacts, performance, searched = searched_band_slack(steps, module, timer, chip)
        else:
            artifacts = lowered(steps, module, timer)
        times, ir_ops = timer.seconds, timer.ops
        pipelined = [*function_notes(module, PIPELINE), *([searched] if searched else [])]
        spatial_to_pim = next(p for p in steps if isinstance(p, SpatialToPimPass))
        cores_given, per_core = pim_geometry(device, spatial_to_pim.cores, spatial_to_pim.crossbars_per_core)
        if spatial_to_pim.fit:
            cores_given = fitting_cores(timer.crossbars, cores_given, per_core)
        freeze()
        if out_dir is not None:
            begin = time.perf_counter()
            write_artifacts(out_dir, artifacts)
            if chip is not None:
                write_pimsim_config(out_dir, chip, len(artifacts.cores), pimsim_mode, pimsim_time)
            times["write-artifacts"] = time.perf_counter() - begin
        times["total"] = time.perf_counter() - start
    if chip is not None and performance is None:  # (the search estimated the program it kept)
        performance = estimated(artifacts, chip)
    crossbars = [sum(group.crossbars for group in core.groups) for core in artifacts.cores]
    counts = artifacts.instruction_counts()
    used = len(artifacts.cores)
    size: int = next(p.xbar_size for p in steps if isinstance(p, CinmToSpatialPass))
    cells = sum(group.weights.size for core in artifacts.cores for group in core.groups)
    return {
        "xbar_size": size,
        "packing": packing,
        "array_group": array_group,
        "mapping": "; ".join(timer.summaries) if timer.summaries else "none",
        "pipeline": "; ".join(pipelined) if pipelined else "layer",
        "cores": cores_given or used,
        "cores_as_needed": cores_given == 0,
        "crossbars_per_core": per_core,
        "cores_used": used,
        "core_utilization": used / (cores_given or used) if used else 0.0,
        "crossbars_used": sum(crossbars),
        "crossbars_per_core_used": crossbars,
        "crossbar_utilization": sum(crossbars) / (used * per_core) if used else 0.0,
        "cell_utilization": cells / (sum(crossbars) * size * size) if sum(crossbars) else 0.0,
        "instruction_counts": counts,
        "instructions": sum(counts.values()),
        "instructions_per_core": [len(core.instructions) for core in artifacts.cores],
        "local_memory_bytes": [core.local_bytes for core in artifacts.cores],
        "global_memory_bytes": artifacts.memory.size,
        "ir_ops": ir_ops,
        "compile_time_s": times,
        "out_dir": str(out_dir) if out_dir is not None else None,
        "crossbars_needed": sum(timer.crossbars),
        "chip": chip.name if chip is not None else None,
        "performance": performance,
    }


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


PIM_OPTIONS = (
    "cores",
    "crossbars_per_core",
    "out_dir",
    "packing",
    "array_group",
    "mapping",
    "mapping_budget",
    "pipeline",
    "rows_per_band",
    "band_slack",
    "share_rows",
    "row_weight",
    "chip",
    "pimsim_mode",
    "pimsim_time",
)
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
    array_group: int = 1,
    mapping: str = "none",
    mapping_budget: float = 10.0,
    pipeline: str = "layer",
    rows_per_band: int = DEFAULT_ROWS_PER_BAND,
    band_slack: BandSlack = SLACK,
    share_rows: bool = False,
    row_weight: float = 0.0,
    chip: str | Path | ChipConfig = "pimcomp",
    pimsim_mode: str = "latency",
    pimsim_time: float = 100.0,
    precision=None,
) -> PimModel:
    """Import `model` as an integer program (power-of-two scales) and compile it to per-core PIM
    instructions with the device's crossbar size on `chip`'s cores (a preset name or a TOML/JSON
    file, `cimxdsl.device.chip`): `cores` of `crossbars_per_core` crossbars when given, else the
    chip's when the model fits them, else as many cores as the model needs (`packing`: `im2col`, the
    default, `kernel` or `sdk`, see `cinm-to-spatial`; `array_group`: the most crossbars one `mvmul`
    reads side by side; `mapping`: `none`, `greedy` or `ga` within `mapping_budget`
    seconds, see `spatial-mapping`; `pipeline`: `layer`, the default, or `row`, layers overlapping on
    bands of `rows_per_band` output rows placed by a list schedule with `band_slack` (`"auto"`: the
    slack of least estimated latency on `chip`, see `compile_to_pim`), see `spatial-to-pim`, and with
    `share_rows` a replicated layer's replicas computing each band together, each its own columns,
    and `row_weight` w > 0 a layer's time counting (most rows ÷ its rows) ** w times in the mapping;
    `precision`: the weight and input bits per layer, as for `cimxdsl.compile`). The artifact
    directory also gets pimsim-nn's configuration of the chip (`pimsim_config.json`: one image with
    `pimsim_mode="latency"`, `pimsim_time` ms of streamed images with `"throughput"`). The report
    includes the chip's performance estimate (`performance`)."""
    config = device if isinstance(device, DeviceConfig) else load_device_config(device)
    try:
        chip_config = load_chip_config(chip)
    except ChipConfigError as e:
        raise CompileError(str(e)) from None
    if pipeline not in ("layer", "row"):
        raise CompileError(f"pipeline must be 'layer' or 'row', got {pipeline!r}")
    if not (isinstance(rows_per_band, int) and rows_per_band >= 1):
        raise CompileError(f"rows_per_band must be a positive integer, got {rows_per_band!r}")
    if band_slack != "auto" and not (isinstance(band_slack, int | float) and band_slack >= 0):
        raise CompileError(f"band_slack must be a number >= 0 or 'auto', got {band_slack!r}")
    if not (isinstance(array_group, int) and array_group >= 1):
        raise CompileError(f"array_group must be a positive integer, got {array_group!r}")
    if not isinstance(share_rows, bool):
        raise CompileError(f"share_rows must be True or False, got {share_rows!r}")
    if not (isinstance(row_weight, int | float) and not isinstance(row_weight, bool) and row_weight >= 0):
        raise CompileError(f"row_weight must be a number >= 0, got {row_weight!r}")
    for name, value in (("share_rows", share_rows), ("row_weight", row_weight)):
        if value and (pipeline != "row" or mapping == "none"):
            raise CompileError(f"{name} needs pipeline='row' and replicas (mapping 'greedy' or 'ga')")
    if pimsim_mode not in SIM_MODES:
        raise CompileError(f"pimsim_mode must be one of {', '.join(SIM_MODES)}, got {pimsim_mode!r}")
    if not pimsim_time > 0:
        raise CompileError(f"pimsim_time must be a positive number of ms, got {pimsim_time!r}")
    notes: list[str] = []
    onnx_model = load_model(model)
    specs = onnx_inputs(onnx_model)
    unsupported = pim_unsupported(onnx_model)
    if unsupported:
        raise CompileError(unsupported)
    onnx_model = one_image(onnx_model, specs)
    start = time.perf_counter()
    layers = None if precision is None else resolve_precision(precision, product_layers(onnx_model), (8, 8))
    program = import_integer(onnx_model, calibration_samples(calibration, onnx_model, notes), layers)
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
            array_group=array_group,
            mapping=mapping,
            mapping_budget=mapping_budget,
            pipeline=pipeline,  # pyright: ignore[reportArgumentType]
            rows_per_band=rows_per_band,
            band_slack=band_slack,
            share_rows=share_rows,
            row_weight=row_weight,
            chip=chip_config,
            pimsim_mode=pimsim_mode,  # pyright: ignore[reportArgumentType]
            pimsim_time=pimsim_time,
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
        "layers": {name: dict(zip(PRECISION, bits, strict=True)) for name, bits in (layers or {}).items()},
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
