"""The Python face: `compile` a model for a crossbar device, run it, report, save and load.

import cimxdsl
m = cimxdsl.compile("model.onnx", device="isaac", calibration=samples)
y = m(x)                # or m({"x": x}), or m.run_onnx(["y"], {"x": x}) as onnxruntime's run
m.report()              # latency, energy by component, writes: total and per layer; .to_pandas()
m.mlir("schedule")      # the IR after any stage
m.save("model.cimx"); cimxdsl.load("model.cimx")

The flows live in `cimxdsl.flow` (`memristor`, `pim`), the model objects in `cimxdsl.models`, the
`.cimx` format in `cimxdsl.storage`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx

from cimxdsl.device import DEFAULT_DEVICE, DeviceConfig, load_device_config
from cimxdsl.device.backend import array_backend
from cimxdsl.device.placement import PLACEMENTS
from cimxdsl.device.threads import check_threads
from cimxdsl.flow.collector import stages_frozen
from cimxdsl.flow.memristor import STAGES, apply_passes, compile_memristor
from cimxdsl.flow.pim import PIM_OPTIONS, compile_pim
from cimxdsl.flow.source import to_onnx
from cimxdsl.models import CompiledModel, CompileError, PimModel, RebuiltStage, load

__all__ = [
    "PIM_OPTIONS",
    "STAGES",
    "CompileError",
    "CompiledModel",
    "PimModel",
    "RebuiltStage",
    "apply_passes",
    "compile",
    "compile_pim",
    "load",
    "stages_frozen",
]


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
    precision=None,
    backend: str = "numpy",
    array_device: str | None = None,
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
    `crossbars_per_core`, `out_dir`, `packing`, `array_group`, `mapping`, `mapping_budget`, `pipeline`,
    `rows_per_band`, `band_slack`, `share_rows`, `row_weight`, `chip`, `pimsim_mode`, `pimsim_time`) as keywords.
    `threads`: the threads the compiled model's runs use (None: every core).
    `precision`: the weight and input bits (1 to 8) per layer, a mapping of layer names or globs to
    `{"weight_bits": w, "input_bits": a}` (or `(w, a)`) or a TOML file of them (`cimxdsl.precision`);
    layers it does not name keep the device's bits (at most 8).
    `backend` (`numpy`, `torch`, `cupy`) and `array_device` (`cpu`, `cuda`, `cuda:N`): the array
    library and device the compiled model's crossbar products run on (`cimxdsl.device.backend`;
    target memristor)."""
    try:
        check_threads(threads)
        array_backend(backend, array_device)
    except ValueError as e:
        raise CompileError(str(e)) from None
    if unknown := sorted(set(pim_options) - set(PIM_OPTIONS)):
        raise CompileError(f"unknown option {', '.join(unknown)} (options of target 'pim': {', '.join(PIM_OPTIONS)})")
    if target == "pim":
        if backend != "numpy" or array_device not in (None, "cpu"):
            raise CompileError(
                "backend and array_device apply to target 'memristor' (target 'pim' runs its instructions on NumPy)"
            )
        model = to_onnx(model, example_input)
        return compile_pim(model, device, calibration, precision=precision, **pim_options)
    if target != "memristor":
        raise CompileError(f"unknown target '{target}' (targets: memristor, pim)")
    if pim_options:
        raise CompileError(f"{', '.join(pim_options)}: options of target 'pim'")
    if placement not in PLACEMENTS:
        raise CompileError(f"unknown placement '{placement}' (placements: {', '.join(PLACEMENTS)})")
    config = device if isinstance(device, DeviceConfig) else load_device_config(device)
    options = (mode, crossbars, strategy, example_input, batch, progress, placement, threads)
    return compile_memristor(
        model, config, calibration, *options, precision=precision, backend=backend, array_device=array_device
    )
