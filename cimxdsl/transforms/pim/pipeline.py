"""The `pim` named pipeline: the spatial flow's passes with their options given once.

`pim` = `linalg-to-cinm, cinm-to-spatial, [spatial-mapping,] spatial-to-pim, pim-bufferize, pim-codegen` with the
crossbar size, core count, crossbars per core, `packing`, `array-group` and `pipelining` (`layer` or `row`, with
`rows-per-band`, `band-slack`, `share-rows` and `row-weight`) given once (defaults: the `device` preset's
crossbar, 16 cores of 16 crossbars; with a `chip`, its cores when the program's crossbars fit them
and its crossbars per core). `cimxdsl.flow.pim.compile_to_pim` runs it (up to `pim-bufferize`: the
cores' code is generated packed) and writes the artifact directory.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.passes import ModulePass

from cimxdsl.device.chip import ChipConfig
from cimxdsl.device.config import DEFAULT_DEVICE
from cimxdsl.transforms.common.device_option import ChipOption
from cimxdsl.transforms.common.errors import check_device
from cimxdsl.transforms.common.linalg_to_cinm import LinalgToCinmPass
from cimxdsl.transforms.common.options import ChoicePass
from cimxdsl.transforms.common.pipeline import PipelinePass
from cimxdsl.transforms.pim.cinm_to_spatial import CinmToSpatialPass, crossbar_geometry
from cimxdsl.transforms.pim.crossbar_weights import Packing
from cimxdsl.transforms.pim.mapping import Strategy
from cimxdsl.transforms.pim.mapping.bands import DEFAULT_ROWS_PER_BAND, SLACK, Pipeline
from cimxdsl.transforms.pim.pim_bufferize import PimBufferizePass
from cimxdsl.transforms.pim.pim_codegen import PimCodegenPass
from cimxdsl.transforms.pim.spatial_mapping import SpatialMappingPass
from cimxdsl.transforms.pim.spatial_to_pim import SpatialToPimPass, pim_geometry

DEFAULT_PACKING: Packing = "im2col"
"""The pipeline's packing (`cinm-to-spatial`'s pass default stays RAPTOR's `kernel`): fewer crossbars,
better cell utilisation and fewer instructions on every measured model, exactly the same results."""


@dataclass(frozen=True)
class PimPipelinePass(ChipOption, ChoicePass, PipelinePass):
    """The RAPTOR-style flow from linalg (or cinm) to pimsim-nn instructions: `linalg-to-cinm,
    cinm-to-spatial, [spatial-mapping,] spatial-to-pim, pim-bufferize, pim-codegen`. With a `chip`
    (a preset or a TOML/JSON file), the mapping times the computes on it and, unless `cores` is
    given, the program takes the chip's cores when its crossbars fit them, else as many as it needs."""

    name = "pim"

    xbar_size: int | None = None
    cores: int | None = None
    crossbars_per_core: int | None = None
    device: str = ""
    packing: Packing = DEFAULT_PACKING
    array_group: int = 1
    mapping: Strategy = "none"
    mapping_budget: float = 10.0
    pipelining: Pipeline = "layer"
    rows_per_band: int = DEFAULT_ROWS_PER_BAND
    band_slack: float = SLACK
    share_rows: bool = False
    row_weight: float = 0.0
    chip: str = ""
    chip_config: ChipConfig | None = field(default=None, init=False, compare=False)

    def chip_object(self) -> ChipConfig | None:  # pyright: ignore[reportIncompatibleMethodOverride]
        """The chip: the object given, else the option's preset or file (None: no chip)."""
        return super().chip_object() if self.chip_config is not None or self.chip else None

    def steps(self) -> list[ModulePass]:
        """The passes of the pipeline in order, its geometry resolved once (an error names the pipeline)."""
        if self.device:
            check_device(self.name, self.device)
        chip = self.chip_object()
        per_core = self.crossbars_per_core
        if chip is not None and per_core is None:
            per_core = chip.xbar_array_count
        fit = chip is not None and self.cores is None  # the chip's cores if the program fits them
        cores, per_core = pim_geometry(self.device, chip.core_cnt if chip is not None and fit else self.cores, per_core)
        size, _ = crossbar_geometry(self.device or DEFAULT_DEVICE, self.xbar_size, per_core)
        placed = dict(
            cores=cores,
            crossbars_per_core=per_core,
            fit=fit,
            pipeline=self.pipelining,
            rows_per_band=self.rows_per_band,
        )
        mapped: list[ModulePass] = []
        if self.mapping != "none":
            mapped.append(
                SpatialMappingPass.for_chip(
                    chip,
                    strategy=self.mapping,
                    budget=self.mapping_budget,
                    share_rows=self.share_rows,
                    row_weight=self.row_weight,
                    **placed,
                )
            )
        spatial = CinmToSpatialPass.for_chip(
            chip,
            xbar_size=size,
            crossbars_per_compute=per_core,
            device=self.device or DEFAULT_DEVICE,
            packing=self.packing,
            whole_tiles=self.pipelining == "row",
            array_group=self.array_group,
        )
        return [
            LinalgToCinmPass(),
            spatial,
            *mapped,
            SpatialToPimPass(**placed, band_slack=self.band_slack),
            PimBufferizePass(),
            PimCodegenPass(),
        ]
