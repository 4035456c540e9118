"""The `pim` named pipeline: the spatial flow's passes with their options given once.

`pim` = `linalg-to-cinm, cinm-to-spatial, [spatial-mapping,] spatial-to-pim, pim-bufferize, pim-codegen` with the
crossbar size, core count and crossbars per core given once (defaults: the `device` preset's
crossbar, 16 cores of 16 crossbars). `cimxdsl.flow.pim.compile_to_pim` runs it and writes
the artifact directory.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from cimxdsl.device.config import DEFAULT_DEVICE
from cimxdsl.transforms.cinm_to_spatial import CinmToSpatialPass, crossbar_geometry
from cimxdsl.transforms.crossbar_weights import Packing
from cimxdsl.transforms.errors import PassError, check_device, run_steps
from cimxdsl.transforms.linalg_to_cinm import LinalgToCinmPass
from cimxdsl.transforms.mapping import Strategy
from cimxdsl.transforms.options import ChoicePass
from cimxdsl.transforms.pim_bufferize import PimBufferizePass
from cimxdsl.transforms.pim_codegen import PimCodegenPass
from cimxdsl.transforms.spatial_mapping import SpatialMappingPass
from cimxdsl.transforms.spatial_to_pim import SpatialToPimPass, pim_geometry


def pim_passes(
    xbar_size: int | None,
    cores: int | None,
    crossbars_per_core: int | None,
    device: str = "",
    packing: Packing = "kernel",
    mapping: Strategy = "none",
    mapping_budget: float = 10.0,
) -> list[ModulePass]:
    cores, per_core = pim_geometry(device, cores, crossbars_per_core)
    size, _ = crossbar_geometry(device or DEFAULT_DEVICE, xbar_size, per_core)
    mapped: list[ModulePass] = []
    if mapping != "none":
        mapped.append(
            SpatialMappingPass(strategy=mapping, cores=cores, crossbars_per_core=per_core, budget=mapping_budget)
        )
    return [
        LinalgToCinmPass(),
        CinmToSpatialPass(
            xbar_size=size, crossbars_per_compute=per_core, device=device or DEFAULT_DEVICE, packing=packing
        ),
        *mapped,
        SpatialToPimPass(cores=cores, crossbars_per_core=per_core),
        PimBufferizePass(),
        PimCodegenPass(),
    ]


@dataclass(frozen=True)
class PimPipelinePass(ChoicePass):
    """The RAPTOR-style flow from linalg (or cinm) to pimsim-nn instructions: `linalg-to-cinm,
    cinm-to-spatial, spatial-to-pim, pim-bufferize, pim-codegen`."""

    name = "pim"

    xbar_size: int | None = None
    cores: int | None = None
    crossbars_per_core: int | None = None
    device: str = ""
    packing: Packing = "kernel"
    mapping: Strategy = "none"
    mapping_budget: float = 10.0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.device:
            check_device(self.name, self.device)
        options = (self.device, self.packing, self.mapping, self.mapping_budget)
        try:
            steps = pim_passes(self.xbar_size, self.cores, self.crossbars_per_core, *options)
        except PassError as e:
            raise e.within(self.name) from None
        run_steps(self.name, steps, ctx, op)
