"""The cimxdsl passes, one module per pass, registered lazily by name (Cinnamon's names as aliases,
with the options that make them do what Cinnamon's pass does)."""

import dataclasses
import importlib
from collections.abc import Callable

from xdsl.passes import ModulePass

# pass name -> (module in cimxdsl.transforms, class name)
_PASSES: dict[str, tuple[str, str]] = {
    "linalg-to-cinm": ("common.linalg_to_cinm", "LinalgToCinmPass"),
    "cinm-isolate-compute": ("memristor.cinm_isolate_compute", "CinmIsolateComputePass"),
    "tile": ("memristor.tile", "TilePass"),
    "cinm-unroll-loops": ("memristor.cinm_unroll_loops", "CinmUnrollLoopsPass"),
    "cinm-to-cim": ("memristor.cinm_to_cim", "CinmToCimPass"),
    "schedule-asap": ("memristor.schedule", "ScheduleAsapPass"),
    "schedule-alap": ("memristor.schedule", "ScheduleAlapPass"),
    "schedule-list": ("memristor.schedule", "ScheduleListPass"),
    "schedule-round-robin": ("memristor.schedule", "ScheduleRoundRobinPass"),
    "schedule-clsa": ("memristor.schedule", "ScheduleClsaPass"),
    "cim-to-memristor": ("memristor.cim_to_memristor", "CimToMemristorPass"),
    "memristor-to-func": ("memristor.memristor_to_func", "MemristorToFuncPass"),
    "memristor": ("memristor.pipeline", "MemristorPipelinePass"),
    "cinm-to-spatial": ("pim.cinm_to_spatial", "CinmToSpatialPass"),
    "spatial-to-pim": ("pim.spatial_to_pim", "SpatialToPimPass"),
    "spatial-mapping": ("pim.spatial_mapping", "SpatialMappingPass"),
    "pim-bufferize": ("pim.pim_bufferize", "PimBufferizePass"),
    "pim-codegen": ("pim.pim_codegen", "PimCodegenPass"),
    "pim": ("pim.pipeline", "PimPipelinePass"),
    "cinm-to-linalg": ("memristor.cinm_to_linalg", "CinmToLinalgPass"),
}
PASS_NAMES = tuple(_PASSES)

ALIASES: dict[str, str] = {
    "cinm-tiling": "tile{mode=loop}",
    "cinm-isolate-compute-blocks": "cinm-isolate-compute",
    "convert-cinm-to-cim": "cinm-to-cim",
    "cim-schedule-asap": "schedule-asap",
    "cim-schedule-alap": "schedule-alap",
    "convert-cim-to-memristor": "cim-to-memristor",
    "convert-memristor-to-func": "memristor-to-func",
}


def _factory(module: str, class_name: str) -> Callable[[], type[ModulePass]]:
    def load() -> type[ModulePass]:
        return getattr(importlib.import_module(f"cimxdsl.transforms.{module}"), class_name)

    return load


def _alias_factory(alias: str, load: Callable[[], type[ModulePass]], defaults: str) -> Callable[[], type[ModulePass]]:
    """The pass under another name (xDSL checks that a spec's name is the class's `name`), with the
    option defaults `defaults` (`name=value ...`, as the pipeline text writes them)."""

    def load_alias() -> type[ModulePass]:
        cls = load()
        values = dict(pair.split("=") for pair in defaults.split())
        doc = f"Cinnamon's name for `{cls.name}{{{defaults}}}`." if defaults else f"Alias of `{cls.name}`."
        namespace = {"name": alias, "__doc__": doc, **values}
        namespace["__annotations__"] = {key: cls.__dataclass_fields__[key].type for key in values}
        return dataclasses.dataclass(frozen=True)(type(cls.__name__, (cls,), namespace))

    return load_alias


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Lazy factories for every cimxdsl pass, keyed by pass name (aliases included)."""
    passes = {name: _factory(*where) for name, where in _PASSES.items()}
    for alias, spec in ALIASES.items():
        name, _, defaults = spec.partition("{")
        passes[alias] = _alias_factory(alias, passes[name], defaults.rstrip("}"))
    return passes
