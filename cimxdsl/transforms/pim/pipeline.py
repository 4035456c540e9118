"""The `pim` named pipeline: the spatial flow's passes with their options given once.

`pim` = `linalg-to-cinm, cinm-to-spatial, [spatial-mapping,] spatial-to-pim, pim-bufferize, pim-codegen` with the
crossbar size, core count and crossbars per core given once (defaults: the `device` preset's
crossbar, 16 cores of 16 crossbars). `cimxdsl.flow.pim.compile_to_pim` runs it and writes
the artifact directory.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.passes import ModulePass

from cimxdsl.device.config import DEFAULT_DEVICE
from cimxdsl.transforms.common.errors import check_device
from cimxdsl.transforms.common.linalg_to_cinm import LinalgToCinmPass
from cimxdsl.transforms.common.options import ChoicePass
from cimxdsl.transforms.common.pipeline import PipelinePass
from cimxdsl.transforms.pim.cinm_to_spatial import CinmToSpatialPass, crossbar_geometry
from cimxdsl.transforms.pim.crossbar_weights import Packing
from cimxdsl.transforms.pim.mapping import Strategy
from cimxdsl.transforms.pim.pim_bufferize import PimBufferizePass
from cimxdsl.transforms.pim.pim_codegen import PimCodegenPass
from cimxdsl.transforms.pim.spatial_mapping import SpatialMappingPass
from cimxdsl.transforms.pim.spatial_to_pim import SpatialToPimPass, pim_geometry


@dataclass(frozen=True)
class PimPipelinePass(ChoicePass, PipelinePass):
    """The RAPTOR-style flow from linalg (or cinm) to pimsim-nn instructions: `linalg-to-cinm,
    cinm-to-spatial, [spatial-mapping,] spatial-to-pim, pim-bufferize, pim-codegen`."""

    name = "pim"

    xbar_size: int | None = None
    cores: int | None = None
    crossbars_per_core: int | None = None
    device: str = ""
    packing: Packing = "kernel"
    mapping: Strategy = "none"
    mapping_budget: float = 10.0

    def steps(self) -> list[ModulePass]:
        """The passes of the pipeline in order, its geometry resolved once (an error names the pipeline)."""
        if self.device:
            check_device(self.name, self.device)
        cores, per_core = pim_geometry(self.device, self.cores, self.crossbars_per_core)
        size, _ = crossbar_geometry(self.device or DEFAULT_DEVICE, self.xbar_size, per_core)
        mapped: list[ModulePass] = []
        if self.mapping != "none":
            mapped.append(
                SpatialMappingPass(
                    strategy=self.mapping, cores=cores, crossbars_per_core=per_core, budget=self.mapping_budget
                )
            )
        spatial = CinmToSpatialPass(
            xbar_size=size, crossbars_per_compute=per_core, device=self.device or DEFAULT_DEVICE, packing=self.packing
        )
        return [
            LinalgToCinmPass(),
            spatial,
            *mapped,
            SpatialToPimPass(cores=cores, crossbars_per_core=per_core),
            PimBufferizePass(),
            PimCodegenPass(),
        ]
