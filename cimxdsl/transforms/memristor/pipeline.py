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
    of two run-time tensors (`linalg-to-cinm`: `host`, `crossbar` or `auto`). With
    `strategy=clsa` the layers share one device (`cinm-to-cim{devices=model}`, all the device's
    crossbars by default), are tiled in bands of `band` output rows (default 1) and scheduled
    across layers with up to `duplicates` copies of weight tiles (`schedule-clsa`)."""

    name = "memristor"

    device: str = DEFAULT_DEVICE
    crossbars: int | None = None
    """Crossbars per layer (`cinm-to-cim`); by default the device's, at most `DEFAULT_CROSSBARS`."""
    strategy: str = "list"
    tiling: str = "unroll"
    placement: str = "host"
    band: int | None = None
    """Output rows per band (`tile{band=N}`); by default 1 with `strategy=clsa`, else none (0)."""
    duplicates: int = 0
    """Copies of weight tiles on spare crossbars (`schedule-clsa`; `strategy=clsa` only)."""
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
        cross_layer = self.strategy == "clsa"
        if self.duplicates and not cross_layer:
            raise pass_error(self.name, f"option 'duplicates' needs strategy=clsa, got strategy={self.strategy}")
        crossbars = self.crossbars
        if crossbars is None:
            crossbars = self.config().crossbars if cross_layer else min(self.config().crossbars, DEFAULT_CROSSBARS)
        if crossbars < 1:
            raise pass_error(self.name, f"option 'crossbars' must be at least 1, got {crossbars}")
        band = self.band if self.band is not None else int(cross_layer and self.tiling == "unroll")
        scheduler, unroll = schedulers[self.strategy](), [CinmUnrollLoopsPass()] if self.tiling == "loop" else []
        options = {"duplicates": self.duplicates} if cross_layer else {}
        if "device" in scheduler.__dataclass_fields__:
            schedule = self.on_device(scheduler, **options)
        else:
            schedule = scheduler()
        tile_options = {"band": band} if band else {}
        return [
            ("cinm", [self.on_device(LinalgToCinmPass, placement=self.placement), CinmIsolateComputePass()]),
            ("tile", [self.on_device(TilePass, mode=self.tiling, **tile_options), *unroll]),
            ("cim", [CinmToCimPass(crossbars=crossbars, devices="model" if cross_layer else "layer")]),
            ("schedule", [schedule]),
            ("memristor", [CimToMemristorPass()]),
            ("func", [MemristorToFuncPass(), CinmToLinalgPass()]),
        ]

    def steps(self) -> list[ModulePass]:
        """The passes of the pipeline in order."""
        return [step for _, passes in self.stages() for step in passes]
