"""Which ops each pass acts on, and which passes give it those ops: so that a pass that finds nothing
to do on a module still at an earlier stage can say which pass to run first.

`nothing_to_do("tile", module)` on a module of `linalg.matmul`s is `tile: nothing to tile; the module
holds linalg.matmul ops: run linalg-to-cinm first`; on a module that holds `cinm` products, or none
of the ops any earlier pass would give it, it is None.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from cimxdsl.transforms import ALIASES
from cimxdsl.transforms.common.linalg_to_cinm import offloadable


def named(*names: str) -> Callable[[Operation], bool]:
    """Ops of the given names; a name ending in `.` stands for a whole dialect."""
    return lambda op: op.name in names or any(n.endswith(".") and op.name.startswith(n) for n in names)


@dataclass(frozen=True)
class Stage:
    work: str
    """what the pass does, as in 'nothing to <work>'"""
    acts_on: Callable[[Operation], bool]
    after: tuple[str, ...] = ()
    """the passes that produce the ops it acts on"""


SCHEDULE = Stage("schedule", named("cim.acquire_device"), ("cinm-to-cim",))
STAGES: dict[str, Stage] = {
    "linalg-to-cinm": Stage("offload", offloadable),
    "tile": Stage("tile", named("cinm.op.gemm", "cinm.op.gemv"), ("linalg-to-cinm",)),
    "cinm-to-cim": Stage("lower", named("cinm.compute"), ("linalg-to-cinm",)),
    "schedule-asap": SCHEDULE,
    "schedule-alap": SCHEDULE,
    "schedule-list": SCHEDULE,
    "schedule-round-robin": SCHEDULE,
    "cim-to-memristor": Stage("lower", named("cim."), ("cinm-to-cim",)),
    "memristor-to-func": Stage("lower", named("memristor."), ("cim-to-memristor",)),
    "cinm-to-spatial": Stage("lower", named("cinm.compute"), ("linalg-to-cinm",)),
    "spatial-mapping": Stage("map", named("spat.compute"), ("cinm-to-spatial",)),
    "spatial-to-pim": Stage("place", named("spat.compute"), ("cinm-to-spatial",)),
    "pim-bufferize": Stage("bufferize", named("pim.core"), ("spatial-to-pim",)),
    "pim-codegen": Stage("generate", named("pim.core"), ("spatial-to-pim",)),
}


def earlier_work(stage: Stage, ops: list[Operation]) -> tuple[list[str], list[Operation]] | None:
    """The passes to run before `stage` (nearest last) and the ops the first of them acts on, for the
    nearest earlier stage that finds ops in `ops`."""
    for producer in stage.after:
        found = [op for op in ops if STAGES[producer].acts_on(op)]
        if found:
            return [producer], found
        deeper = earlier_work(STAGES[producer], ops)
        if deeper is not None:
            return [*deeper[0], producer], deeper[1]
    return None


def nothing_to_do(name: str, module: ModuleOp) -> str | None:
    """One line when the pass `name` finds none of its ops in `module` but an earlier pass would
    give it some; else None."""
    stage = STAGES.get(ALIASES.get(name, name).partition("{")[0])
    if stage is None or not stage.after:
        return None
    ops = list(module.walk())
    if any(stage.acts_on(op) for op in ops):
        return None
    earlier = earlier_work(stage, ops)
    if earlier is None:
        return None
    passes, found = earlier
    names = ", ".join(dict.fromkeys(op.name for op in found))
    return f"{name}: nothing to {stage.work}; the module holds {names} ops: run {', '.join(passes)} first"
