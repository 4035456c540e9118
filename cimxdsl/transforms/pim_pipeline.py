"""The `pim` named pipeline and `compile_to_pim`, the spatial flow in one call.

`pim` = `linalg-to-cinm, cinm-to-spatial, spatial-to-pim, pim-bufferize, pim-codegen` with the
crossbar size, core count and crossbars per core given once (defaults: the `device` preset's
crossbar, 16 cores of 16 crossbars).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from cimxdsl.transforms.cinm_to_spatial import CinmToSpatialPass, crossbar_geometry
from cimxdsl.transforms.linalg_to_cinm import LinalgToCinmPass
from cimxdsl.transforms.pim_bufferize import PimBufferizePass
from cimxdsl.transforms.pim_codegen import PimCodegenPass, generate_artifacts
from cimxdsl.transforms.spatial_to_pim import SpatialToPimPass, pim_geometry


def pim_passes(
    xbar_size: int | None,
    cores: int | None,
    crossbars_per_core: int | None,
    device: str = "",
    out_dir: str = "",
    emit_instructions: bool = True,
) -> list[ModulePass]:
    cores, per_core = pim_geometry(device, cores, crossbars_per_core)
    size, _ = crossbar_geometry(device or "ideal", xbar_size, per_core)
    return [
        LinalgToCinmPass(),
        CinmToSpatialPass(xbar_size=size, crossbars_per_compute=per_core, device=device or "ideal"),
        SpatialToPimPass(cores=cores, crossbars_per_core=per_core),
        PimBufferizePass(),
        PimCodegenPass(out_dir=out_dir, emit_instructions=emit_instructions),
    ]


@dataclass(frozen=True)
class PimPipelinePass(ModulePass):
    """The RAPTOR-style flow from linalg (or cinm) to pimsim-nn artifacts: `linalg-to-cinm,
    cinm-to-spatial, spatial-to-pim, pim-bufferize, pim-codegen`."""

    name = "pim"

    xbar_size: int | None = None
    cores: int | None = None
    crossbars_per_core: int | None = None
    device: str = ""
    out_dir: str = ""
    emit_instructions: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for p in pim_passes(
            self.xbar_size, self.cores, self.crossbars_per_core, self.device, self.out_dir, self.emit_instructions
        ):
            p.apply(ctx, op)


def count_ops(module: ModuleOp) -> int:
    return sum(1 for _ in module.walk())


def compile_to_pim(
    module: ModuleOp,
    cores: int | None = None,
    crossbars_per_core: int | None = None,
    xbar_size: int | None = None,
    out_dir: str | Path | None = None,
    device: str = "",
) -> dict[str, Any]:
    """Lower `module` (linalg or cinm level, in place) to pimsim-nn artifacts in `out_dir` (if given)
    and report: instruction counts per op type (seeds/002 Fig. 5.2-5.3), core and crossbar
    utilization, memory, IR sizes and compile time per stage. Raises `PassFailedException` with a
    one-line message when the program cannot be compiled (e.g. it needs more crossbars than given)."""
    ctx = Context()
    passes = pim_passes(xbar_size, cores, crossbars_per_core, device, emit_instructions=False)
    cores_given, per_core = pim_geometry(device, cores, crossbars_per_core)
    times: dict[str, float] = {}
    ir_ops: dict[str, int] = {}
    start = time.perf_counter()
    for p in passes[:-1]:
        begin = time.perf_counter()
        p.apply(ctx, module)
        times[p.name] = time.perf_counter() - begin
        ir_ops[p.name] = count_ops(module)
    begin = time.perf_counter()
    artifacts = generate_artifacts(module)
    times["pim-codegen"] = time.perf_counter() - begin
    if out_dir is not None:
        from cimxdsl.backend.artifacts import write_artifacts

        begin = time.perf_counter()
        write_artifacts(out_dir, artifacts)
        times["write-artifacts"] = time.perf_counter() - begin
    times["total"] = time.perf_counter() - start
    crossbars = [len(core.groups) for core in artifacts.cores]
    counts = artifacts.instruction_counts()
    used = len(artifacts.cores)
    return {
        "xbar_size": passes[1].xbar_size,  # pyright: ignore[reportAttributeAccessIssue]
        "cores": cores_given,
        "crossbars_per_core": per_core,
        "cores_used": used,
        "core_utilization": used / cores_given,
        "crossbars_used": sum(crossbars),
        "crossbars_per_core_used": crossbars,
        "crossbar_utilization": sum(crossbars) / (used * per_core) if used else 0.0,
        "instruction_counts": counts,
        "instructions": sum(counts.values()),
        "instructions_per_core": [len(core.instructions) for core in artifacts.cores],
        "local_memory_bytes": [core.local_bytes for core in artifacts.cores],
        "global_memory_bytes": artifacts.memory.size,
        "ir_ops": ir_ops,
        "compile_time_s": times,
        "out_dir": str(out_dir) if out_dir is not None else None,
    }
