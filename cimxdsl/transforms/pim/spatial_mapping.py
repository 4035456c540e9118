"""`spatial-mapping`: replicate the computes that bound the pipeline and place every replica on a core.

A mapping strategy (`transforms/pim/mapping/`: `greedy`, `ga`) chooses, for the chip's `cores` cores
of `crossbars-per-core` crossbars, how many replicas each `spat.compute` gets and the core of each,
from each compute's time on the `chip` (`compute_cost`: the performance model's instruction
latencies), so that the busiest core's time, the pipeline's stage time, is smallest. A compute
with `r` replicas is split into `r` computes on `r` bands of its output rows (`mapping/bands.py`),
each holding a copy of its weights; its consumers receive the bands they need. Every compute gets its core as the `core` attribute, which
`spatial-to-pim` follows. Since the replicas of a layer run on different cores, and every core runs
its computes in program order with blocking transfers, layers on different cores work concurrently
on successive bands. With the `row` pipeline, poolings are set apart first where they would keep
the layer before them whole or in thick bands (`mapping/bands.py`: `peeled`). The function gets a
`spat.mapping` attribute summing up the mapping.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation

from cimxdsl.device.chip import ChipConfig
from cimxdsl.device.latency import Latencies
from cimxdsl.dialects import spatial as spat
from cimxdsl.dialects.utils import crossbar_count
from cimxdsl.transforms.common.device_option import ChipOption
from cimxdsl.transforms.common.errors import pass_error
from cimxdsl.transforms.common.functions import functions_holding, functions_in
from cimxdsl.transforms.common.options import ChoicePass
from cimxdsl.transforms.pim.mapping import (
    Mapping,
    MappingProblem,
    Strategy,
    compute_cost,
    genetic_mapping,
    greedy_mapping,
    place,
    unreplicated,
)
from cimxdsl.transforms.pim.mapping.bands import (
    DEFAULT_ROWS_PER_BAND,
    Area,
    Pipeline,
    band_bounds,
    band_cost,
    can_split,
    dealt_bands,
    peel_tail,
    peeled,
    rows_of,
    split_into_bands,
)
from cimxdsl.transforms.pim.value_bounds import compute_value_bounds

CORE = "core"
"""The discardable attribute of a `spat.compute` naming the core `spatial-to-pim` puts it on."""
SUMMARY = "spat.mapping"
"""The discardable attribute of a mapped function: the mapping in one line."""


def map_computes(problem: MappingProblem, strategy: Strategy, budget_s: float) -> Mapping:
    if strategy == "greedy":
        return greedy_mapping(problem)
    if strategy == "ga":
        return genetic_mapping(problem, budget_s)
    return unreplicated(problem)


def solve(
    computes: list[spat.ComputeOp],
    strategy: Strategy,
    cores: int,
    per_core: int,
    budget_s: float,
    latencies: Latencies,
    weights: Sequence[float],
) -> tuple[MappingProblem, Mapping]:
    """The mapping problem of `computes` (their times on the chip, each times its `weights`) and
    its `strategy`'s mapping."""
    bounds = compute_value_bounds(computes)  # which crossbar inputs are read as 8-bit elements

    @functools.cache
    def replica_cost(i: int, replicas: int) -> float:
        """The busiest band: the first or last (their padding) or the widest inner one."""
        compute = computes[i]
        if replicas == 1:
            return weights[i] * compute_cost(compute, latencies=latencies, bounds=bounds)
        bands = band_bounds(rows_of(compute.outputs[0]), replicas)
        widest = max(bands[1:-1], key=lambda band: band[1] - band[0], default=bands[0])
        return weights[i] * max(
            band_cost(compute, (band, None), latencies, bounds) for band in {bands[0], widest, bands[-1]}
        )

    problem = MappingProblem(
        tuple(replica_cost(i, 1) for i in range(len(computes))),
        tuple(crossbar_count(c.weights) for c in computes),
        tuple(can_split(c) for c in computes),
        cores,
        per_core,
        replica_cost,
    )
    try:
        return problem, map_computes(problem, strategy, budget_s)
    except ValueError as e:
        raise pass_error("spatial-mapping", str(e)) from None


def row_weights(computes: list[spat.ComputeOp], exponent: float) -> list[float]:
    """How much each compute's time counts when the mapping balances the computes:
    (the most rows a compute has ÷ its rows) ** `exponent` (1 for one that cannot be cut into
    bands). In the row pipeline a layer of few rows overlaps least with its neighbours, so its
    time per replica adds most to an image's latency; a positive exponent gives it more replicas."""
    rows = [can_split(c) for c in computes]
    most = max(rows, default=1)
    return [(most / r) ** exponent if r > 1 and exponent else 1.0 for r in rows]


def map_function(
    function: func.FuncOp,
    strategy: Strategy,
    cores: int,
    per_core: int,
    budget_s: float,
    chip: ChipConfig,
    pipeline: Pipeline = "layer",
    rows_per_band: int = DEFAULT_ROWS_PER_BAND,
    share_rows: bool = False,
    row_weight: float = 0.0,
) -> None:
    latencies = Latencies(chip)
    block = function.body.block
    computes = [op for op in block.ops if isinstance(op, spat.ComputeOp)]
    if pipeline == "row":  # poolings apart where they keep the layer before them whole or in thick bands
        computes = peeled(computes, rows_per_band)
    spare = cores > 0  # room for replicas
    if not spare:  # as many as the program needs (placed)
        crossbars = tuple(crossbar_count(c.weights) for c in computes)
        cores = -(-sum(crossbars) // per_core)
        ones = (1,) * len(crossbars)
        while place(MappingProblem(ones, crossbars, ones, cores, per_core), list(ones)) is None:
            cores += 1
    weights = row_weights(computes, row_weight)
    problem, mapping = solve(computes, strategy, cores, per_core, budget_s, latencies, weights)
    if spare and computes:
        # a stream bound by one compute alone: if it stays whole only for a global pooling after its
        # last convolution (`peel_tail` leaves any other compute as it is), set the pooling apart so
        # that the convolution can be replicated, and map again
        cost = [problem.cost(i, r) for i, r in enumerate(mapping.replicas)]
        slowest = max(range(len(cost)), key=cost.__getitem__)
        parts = peel_tail(computes[slowest]) if cost[slowest] >= mapping.bottleneck else []
        if len(parts) > 1:
            computes = [*computes[:slowest], *parts, *computes[slowest + 1 :]]
            weights = row_weights(computes, row_weight)
            problem, mapping = solve(computes, strategy, cores, per_core, budget_s, latencies, weights)
    shared = apply_mapping(computes, mapping, pipeline, rows_per_band, share_rows)
    busiest, before = (busiest_core(problem, m, weights) for m in (mapping, unreplicated(problem)))
    replicated = [r for r in mapping.replicas if r > 1]
    crossbars = sum(w * r for w, r in zip(problem.crossbars, mapping.replicas, strict=True))
    summary = (
        f"{strategy} mapping on {cores} cores of {per_core} crossbars: {len(replicated)} computes replicated "
        f"(up to {max(replicated, default=1)}x), {crossbars} crossbars, "
        f"busiest core {busiest / 1e6:.3g} ms per image on chip '{chip.name}' (without replicas "
        f"{before / 1e6:.3g} ms)"
    )
    if row_weight:
        summary += f", layers weighted by (most rows / their rows) ** {row_weight:g}"
    if share_rows:
        summary += (
            f"; the replicas of {shared} compute{'s' if shared != 1 else ''} share each band, each its own columns"
        )
    function.attributes[SUMMARY] = StringAttr("; ".join([summary, *mapping.notes]))


def busiest_core(problem: MappingProblem, mapping: Mapping, weights: Sequence[float]) -> float:
    """The time of `mapping`'s busiest core (its computes' times, not weighted)."""
    loads: dict[int, float] = {}
    for i, (replicas, on) in enumerate(zip(mapping.replicas, mapping.cores, strict=True)):
        for core in on:
            loads[core] = loads.get(core, 0.0) + problem.cost(i, replicas) / weights[i]
    return max(loads.values(), default=0.0)


def apply_mapping(
    computes: list[spat.ComputeOp],
    mapping: Mapping,
    pipeline: Pipeline = "layer",
    rows_per_band: int = DEFAULT_ROWS_PER_BAND,
    share_rows: bool = False,
) -> int:
    """Split the replicated computes into bands, rewire their consumers, set every compute's core;
    with the `row` pipeline every replica's rows are cut further into bands of `rows_per_band` rows
    (with `share_rows`, each band into one part of its columns per replica). The computes whose
    bands were cut into columns are counted."""
    shared = 0
    bands: list[list[Area]] = []
    cores: list[list[int]] = []
    for compute, replicas, on in zip(computes, mapping.replicas, mapping.cores, strict=True):
        if pipeline == "row":
            compute_bands, compute_cores = dealt_bands(compute, on, rows_per_band, share_rows)
            shared += any(columns is not None for _, columns in compute_bands)
            bands.append(compute_bands)
            cores.append(compute_cores)
        else:
            rows = band_bounds(rows_of(compute.outputs[0]), replicas) if replicas > 1 else [(0, 1)]
            bands.append([(band, None) for band in rows])
            cores.append(list(on))
    split_into_bands(computes, bands, cores, CORE, mark=pipeline == "row")
    return shared


def spatial_crossbars(op: Operation) -> tuple[int, ...]:
    """The crossbars each `spat.compute` of the functions inside `op` holds."""
    return tuple(
        crossbar_count(compute.weights)
        for function in functions_in(op)
        for compute in function.body.ops
        if isinstance(compute, spat.ComputeOp)
    )


def fitting_cores(crossbars: Sequence[int], cores: int, per_core: int) -> int:
    """`cores` if computes holding `crossbars` each fit them (`per_core` each, packed first-fit as
    `spatial-to-pim` packs them at worst), else 0: as many cores as the program needs."""
    loads: list[int] = []
    for held in crossbars:
        core = next((c for c, load in enumerate(loads) if load + held <= per_core), None)
        if core is None:
            loads.append(held)
        else:
            loads[core] += held
    return cores if len(loads) <= cores else 0


@dataclass(frozen=True)
class SpatialMappingPass(ChipOption, ChoicePass):
    """Replicate the computes that bound the pipeline (`strategy`: `greedy`, `ga` within `budget`
    seconds, or `none`) under the crossbar budget of `cores` cores of `crossbars-per-core`
    crossbars, and place every compute on a core, balancing their time on `chip` (a preset or a
    TOML/JSON file, `cimxdsl.device.chip`). With `fit`, the program takes the `cores` only if its
    crossbars fit them, else as many cores as it needs (and no replica). With `share-rows` (row
    pipeline), the replicas of a layer compute each band together, each its own columns, so that
    its consumers wait for a part of a band's time rather than a whole band's. With `row-weight` w
    (row pipeline), a layer's time counts (most rows ÷ its rows) ** w times when balancing, so that
    the layers of few rows, which the row pipeline overlaps least, get more replicas."""

    name = "spatial-mapping"

    strategy: Strategy = "greedy"
    cores: int = 0
    crossbars_per_core: int = 16
    budget: float = 10.0
    chip: str = "pimcomp"
    fit: bool = False
    pipeline: Pipeline = "layer"
    rows_per_band: int = DEFAULT_ROWS_PER_BAND
    share_rows: bool = False
    row_weight: float = 0.0
    chip_config: ChipConfig | None = field(default=None, init=False, compare=False)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        chip = self.chip_object()
        if self.cores < 0 or self.crossbars_per_core < 1 or self.budget < 0 or self.rows_per_band < 1:
            raise pass_error(
                self.name, "cores must be >= 0, crossbars-per-core and rows-per-band positive and budget >= 0"
            )
        if self.share_rows and self.pipeline != "row":
            raise pass_error(
                self.name, "share-rows needs pipeline=row (the layer pipeline's replicas take whole bands)"
            )
        if not self.row_weight >= 0 or (self.row_weight and self.pipeline != "row"):
            raise pass_error(self.name, f"row-weight must be >= 0 and needs pipeline=row, got {self.row_weight}")
        cores = fitting_cores(spatial_crossbars(op), self.cores, self.crossbars_per_core) if self.fit else self.cores
        for function in functions_holding(op, spat.ComputeOp):
            map_function(
                function,
                self.strategy,
                cores,
                self.crossbars_per_core,
                self.budget,
                chip,
                self.pipeline,
                self.rows_per_band,
                self.share_rows,
                self.row_weight,
            )
