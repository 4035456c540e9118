"""Named pipelines, so users need not remember pass lists."""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from cimxdsl.device.config import DEFAULT_DEVICE
from cimxdsl.device.placement import PLACEMENTS
from cimxdsl.transforms import get_all_passes
from cimxdsl.transforms.cim_to_memristor import CimToMemristorPass
from cimxdsl.transforms.cinm_isolate_compute import CinmIsolateComputePass
from cimxdsl.transforms.cinm_to_cim import CinmToCimPass
from cimxdsl.transforms.cinm_to_linalg import CinmToLinalgPass
from cimxdsl.transforms.cinm_unroll_loops import CinmUnrollLoopsPass
from cimxdsl.transforms.errors import check_choice, check_device, pass_error, run_steps
from cimxdsl.transforms.linalg_to_cinm import LinalgToCinmPass
from cimxdsl.transforms.memristor_to_func import MemristorToFuncPass
from cimxdsl.transforms.tile import TilePass


@dataclass(frozen=True)
class MemristorPipelinePass(ModulePass):
    """The Cinnamon-style flow from linalg to runtime calls: `linalg-to-cinm, cinm-isolate-compute,
    tile, cinm-to-cim, schedule-<strategy>, cim-to-memristor, memristor-to-func, cinm-to-linalg`,
    for a device preset or TOML file: the host's element-wise ops and reductions end as upstream
    `linalg`. With `tiling=loop`, products are tiled into loops (`tile{mode=loop}`) and
    unrolled before the crossbar lowering (`cinm-unroll-loops`). `placement` places the products
    of two run-time tensors (`linalg-to-cinm`: `host`, `crossbar` or `auto`)."""

    name = "memristor"

    device: str = DEFAULT_DEVICE
    crossbars: int = 16
    strategy: str = "list"
    tiling: str = "unroll"
    placement: str = "host"

    def steps(self) -> list[ModulePass]:
        """The passes of the pipeline, its options checked first (an error names the option)."""
        check_device(self.name, self.device)
        passes = get_all_passes()
        schedulers = {name.removeprefix("schedule-"): load for name, load in passes.items() if name.startswith("schedule-")}
        check_choice(self.name, "strategy", self.strategy, list(schedulers))
        check_choice(self.name, "tiling", self.tiling, ("unroll", "loop"))
        check_choice(self.name, "placement", self.placement, PLACEMENTS)
        if self.crossbars < 1:
            raise pass_error(self.name, f"option 'crossbars' must be at least 1, got {self.crossbars}")
        scheduler = schedulers[self.strategy]()
        return [
            LinalgToCinmPass(placement=self.placement, device=self.device),
            CinmIsolateComputePass(),
            TilePass(device=self.device, mode=self.tiling),
            *([CinmUnrollLoopsPass()] if self.tiling == "loop" else []),
            CinmToCimPass(crossbars=self.crossbars),
            scheduler(device=self.device) if "device" in scheduler.__dataclass_fields__ else scheduler(),
            CimToMemristorPass(),
            MemristorToFuncPass(),
            CinmToLinalgPass(),
        ]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_steps(self.name, self.steps(), ctx, op)
