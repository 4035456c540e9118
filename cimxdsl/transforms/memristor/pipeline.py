"""Named pipelines, so users need not remember pass lists: each flow's passes are defined once
here (`memristor`) and in `transforms/pim/pipeline.py` (`pim`), and `cim-opt -p NAME`, `cimxdsl.compile`,
`cim-compile` and the benchmarks all run that one list."""

from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.passes import ModulePass

from cimxdsl.device.config import DEFAULT_DEVICE, DeviceConfig
from cimxdsl.device.placement import PLACEMENTS
from cimxdsl.transforms import get_all_passes
from cimxdsl.transforms.common.device_option import DeviceOption
from cimxdsl.transforms.common.errors import check_choice, check_device, pass_error
from cimxdsl.transforms.common.linalg_to_cinm import LinalgToCinmPass
from cimxdsl.transforms.common.pipeline import PipelinePass
from cimxdsl.transforms.memristor.cim_to_memristor import CimToMemristorPass
from cimxdsl.transforms.memristor.cinm_isolate_compute import CinmIsolateComputePass
from cimxdsl.transforms.memristor.cinm_to_cim import CinmToCimPass
from cimxdsl.transforms.memristor.cinm_to_linalg import CinmToLinalgPass
from cimxdsl.transforms.memristor.cinm_unroll_loops import CinmUnrollLoopsPass
from cimxdsl.transforms.memristor.memristor_to_func import MemristorToFuncPass
from cimxdsl.transforms.memristor.tile import TilePass


def scheduling_strategies() -> dict[str, Callable[[], type[ModulePass]]]:
    """The strategies of the `schedule-<name>` passes, by name (the `strategy` option's values)."""
    passes = get_all_passes()
    return {name.removeprefix("schedule-"): load for name, load in passes.items() if name.startswith("schedule-")}


DEFAULT_CROSSBARS = 64
"""The crossbars per layer of the memristor flow when none are given: the device's, at most this."""


@dataclass(frozen=True)
class MemristorPipelinePass(DeviceOption, PipelinePass):
    """The Cinnamon-style flow from linalg to runtime calls: `linalg-to-cinm, cinm-isolate-compute,
    tile, cinm-to-cim, schedule-<strategy>, cim-to-memristor, memristor-to-func, cinm-to-linalg`,
    for a device preset or TOML file: the host's element-wise ops and reductions end as upstream
    `linalg`. With `tiling=loop`, products are tiled into loops (`tile{mode=loop}`) and
    unrolled before the crossbar lowering (`cinm-unroll-loops`). `placement` places the products
    of two run-time tensors (`linalg-to-cinm`: `host`, `crossbar` or `auto`)."""

    name = "memristor"

    device: str = DEFAULT_DEVICE
    crossbars: int | None = None
    """Crossbars per layer (`cinm-to-cim`); by default the device's, at most `DEFAULT_CROSSBARS`."""
    strategy: str = "list"
    tiling: str = "unroll"
    placement: str = "host"
    device_config: DeviceConfig | None = field(default=None, init=False, compare=False)
    """The device as an object, from Python (`for_device`); not an option, it has no text form."""

    def on_device(self, kind: type[ModulePass], **options) -> ModulePass:
        """The pass `kind` with `options` for this pipeline's device (its object when given one)."""
        if self.device_config is not None:
            return kind.for_device(self.device_config, **options)  # pyright: ignore[reportAttributeAccessIssue]
        return kind(device=self.device, **options)

    def stages(self) -> list[tuple[str, list[ModulePass]]]:
        """The passes of the pipeline by stage (`cimxdsl.compile` keeps the IR after each stage),
        its options checked first (an error names the option)."""
        if self.device_config is None:
            check_device(self.name, self.device)
        schedulers = scheduling_strategies()
        check_choice(self.name, "strategy", self.strategy, list(schedulers))
        check_choice(self.name, "tiling", self.tiling, ("unroll", "loop"))
        check_choice(self.name, "placement", self.placement, PLACEMENTS)
        crossbars = self.crossbars
        if crossbars is None:
            crossbars = min(self.config().crossbars, DEFAULT_CROSSBARS)
        if crossbars < 1:
            raise pass_error(self.name, f"option 'crossbars' must be at least 1, got {crossbars}")
        scheduler, unroll = schedulers[self.strategy](), [CinmUnrollLoopsPass()] if self.tiling == "loop" else []
        return [
            ("cinm", [self.on_device(LinalgToCinmPass, placement=self.placement), CinmIsolateComputePass()]),
            ("tile", [self.on_device(TilePass, mode=self.tiling), *unroll]),
            ("cim", [CinmToCimPass(crossbars=crossbars)]),
            ("schedule", [self.on_device(scheduler) if "device" in scheduler.__dataclass_fields__ else scheduler()]),
            ("memristor", [CimToMemristorPass()]),
            ("func", [MemristorToFuncPass(), CinmToLinalgPass()]),
        ]

    def steps(self) -> list[ModulePass]:
        """The passes of the pipeline in order."""
        return [step for _, passes in self.stages() for step in passes]
