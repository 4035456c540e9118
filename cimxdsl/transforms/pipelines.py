"""Named pipelines, so users need not remember pass lists."""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline

from cimxdsl.device.config import DEFAULT_DEVICE
from cimxdsl.transforms.errors import pass_error


@dataclass(frozen=True)
class MemristorPipelinePass(ModulePass):
    """The Cinnamon-style flow from linalg to runtime calls: `linalg-to-cinm, cinm-isolate-compute,
    tile, cinm-to-cim, schedule-<strategy>, cim-to-memristor, memristor-to-func`, for a device preset
    or TOML file. With `tiling=loop`, products are tiled into loops (`tile{mode=loop}`) and
    unrolled before the crossbar lowering (`cinm-unroll-loops`). `placement` places the products
    of two run-time tensors (`linalg-to-cinm`: `host`, `crossbar` or `auto`)."""

    name = "memristor"

    device: str = DEFAULT_DEVICE
    crossbars: int = 16
    strategy: str = "list"
    tiling: str = "unroll"
    placement: str = "host"

    def passes(self) -> str:
        schedule = f"schedule-{self.strategy}" + (f'{{device="{self.device}"}}' if self.strategy == "list" else "")
        return ",".join(
            [
                f'linalg-to-cinm{{placement={self.placement} device="{self.device}"}}',
                "cinm-isolate-compute",
                f'tile{{device="{self.device}" mode={self.tiling}}}',
                *(["cinm-unroll-loops"] if self.tiling == "loop" else []),
                f"cinm-to-cim{{crossbars={self.crossbars}}}",
                schedule,
                "cim-to-memristor",
                "memristor-to-func",
            ]
        )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from cimxdsl.transforms import get_all_passes

        spec = self.passes()
        try:
            pipeline = PassPipeline.parse_spec(get_all_passes(), spec)
        except (ValueError, KeyError) as e:
            raise pass_error(self.name, f"cannot build '{spec}': {e}") from None
        pipeline.apply(ctx, op)
