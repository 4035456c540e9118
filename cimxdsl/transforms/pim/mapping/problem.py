"""The mapping problem of the PIM flow: how many replicas each `spat.compute` gets (each on its own
core, working on its own band of output rows) and which core runs each replica, under the chip's
crossbar budget, so that the busiest core (the pipeline's bottleneck stage) has as little work as
possible (PIMCOMP's high-throughput mode: X. Sun et al., "PIMCOMP: A Universal Compilation
Framework for Crossbar-based PIM DNN Accelerators", DAC 2023)."""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.dialects import arith
from xdsl.ir import SSAValue

from cimxdsl.device.chip import PRESETS
from cimxdsl.device.latency import Latencies
from cimxdsl.dialects import spatial as spat
from cimxdsl.dialects.utils import num_elements, shape_of


def compute_cost(
    compute: spat.ComputeOp, rows: Callable[[SSAValue], int] | None = None, latencies: Latencies | None = None
) -> float:
    """The time of a compute in ns: the instructions `pim-codegen` emits for it, each at the
    performance model's latency (`latencies`, default the `pimcomp` chip's): per output pixel one
    `mvmul` per crossbar and a `vvadd` per partial sum (im2col: the patch gathered by `lmv`),
    vector ops over their elements, pooling per window position, and the transfers of its inputs
    and results. `rows`: how many rows of each value a band computes or reads (all by default)."""
    model = latencies or Latencies(PRESETS["pimcomp"])
    block = compute.body.block

    def elements(value: SSAValue) -> int:
        shape = shape_of(value)
        return (rows(value) if rows is not None else shape[0]) * num_elements(shape[1:])

    moved = [*compute.input_args, *block.last_op.operands]  # pyright: ignore[reportOptionalMemberAccess]
    cost = sum(float(model.transfer(elements(v) * model.ibytes)) for v in moved)
    for op in block.ops:
        if not op.results:
            continue
        result = op.results[0]
        n = elements(result)
        channels = shape_of(result)[-1]
        if isinstance(op, spat.ApplyFiltersOp):
            pixels = n // channels
            matrices = sum(1 for i in op.weight_index_list() if i >= 0)
            cost += pixels * (matrices * model.mvmul() + (matrices - 1) * float(model.vector(channels)))
            if op.packing() is not None:
                cost += pixels * float(model.move(num_elements(shape_of(op.input)[-1:]) * math.prod(op.geometry().kernel)))
        elif isinstance(op, spat.MaxPoolOp | spat.AvgPoolOp):
            cost += (n // channels) * math.prod(op.geometry().kernel) * float(model.vector(channels))
        elif isinstance(op, spat.GlobalAvgPoolOp):
            cost += channels * float(model.vector(elements(op.input) // channels, binary=False, one_result=True))
        elif isinstance(op, arith.MinSIOp):  # 0 - max(0 - a, 0 - b)
            cost += float(model.fill(n)) + 4 * float(model.vector(n))
        elif isinstance(op, spat.VectorBinaryOp | arith.AddiOp | arith.SubiOp | arith.MuliOp | arith.MaxSIOp):
            cost += float(model.vector(n))
        elif isinstance(op, spat.VectorUnaryOp | arith.ShRSIOp | arith.ShLIOp):
            cost += float(model.vector(n, binary=False))
        elif isinstance(op, spat.ConcatOp):
            cost += float(model.move(n))
        elif isinstance(op, arith.ConstantOp):
            cost += float(model.fill(n))
    return cost


@dataclass(frozen=True)
class MappingProblem:
    """Per compute: its cost (ns), its crossbars and the most replicas it can have (its output rows, 1
    when it cannot be split); the chip: `cores` of `per_core` crossbars."""

    costs: tuple[int, ...]
    crossbars: tuple[int, ...]
    max_replicas: tuple[int, ...]
    cores: int
    per_core: int
    replica_cost: Callable[[int, int], float] | None = None
    """The work of the busiest of `r` replicas of compute `i` (default: its cost ÷ r); replicas
    recompute the rows their windows share."""

    def cost(self, i: int, replicas: int) -> float:
        if self.replica_cost is not None:
            return self.replica_cost(i, replicas)
        return self.costs[i] / replicas

    def fits(self, replicas: list[int]) -> bool:
        return sum(w * r for w, r in zip(self.crossbars, replicas, strict=True)) <= self.cores * self.per_core


@dataclass
class Mapping:
    """Replicas per compute, the core of each replica, the busiest core's load and notes."""

    replicas: list[int]
    cores: list[list[int]]
    bottleneck: float
    notes: list[str] = field(default_factory=list)


def place(problem: MappingProblem, replicas: list[int]) -> Mapping | None:
    """Replicas onto cores in program order, each core a run of consecutive computes (a pipeline
    stage: a core holding an early and a late layer could start the next image only after the
    late layer of this one), the least stage time whose runs fit the cores. None when the replicas
    do not fit so."""
    replicas = [int(r) for r in replicas]
    if not problem.fits(replicas):
        return None
    items = [(problem.cost(i, r), i) for i, r in enumerate(replicas) for _ in range(r)]
    low, high = max((load for load, _ in items), default=0.0), sum(load for load, _ in items)
    best = stages_in_order(problem, items, high)
    if best is None:
        return None
    for _ in range(40):  # bisect the stage time down to 0.1 % of the largest item
        if high - low <= 1e-3 * low:
            break
        middle = (low + high) / 2
        cut = stages_in_order(problem, items, middle)
        if cut is None:
            low = middle
        else:
            best, high = cut, middle
    return best


def stages_in_order(problem: MappingProblem, items: list[tuple[float, int]], stage: float) -> Mapping | None:
    """`items` (load, compute) placed in program order: each onto the fullest core that still has
    room for it within `stage`, holds no replica of its compute and was last given the previous or
    the same compute (so a core's computes follow one another), else onto a new core; None when
    that takes too many cores."""
    cores: list[list[int]] = [[] for _ in problem.crossbars]
    loads: list[float] = []
    room: list[int] = []
    last: list[int] = []
    for load, i in items:
        fitting = [
            c
            for c in range(len(loads))
            if last[c] >= i - 1 and loads[c] + load <= stage and room[c] >= problem.crossbars[i] and c not in cores[i]
        ]
        if fitting:
            core = max(fitting, key=lambda c: loads[c])
        else:
            if len(loads) == problem.cores:
                return None
            core = len(loads)
            loads.append(0.0)
            room.append(problem.per_core)
            last.append(i)
        loads[core] += load
        room[core] -= problem.crossbars[i]
        last[core] = i
        cores[i].append(core)
    return Mapping([len(c) for c in cores], cores, max(loads, default=0.0))


def place_balanced(problem: MappingProblem, replicas: list[int]) -> Mapping | None:
    """Replicas onto cores, largest load first onto the least loaded core with room that holds no
    other replica of the same compute (LPT); None when they do not fit."""
    loads = [0.0] * problem.cores
    room = [problem.per_core] * problem.cores
    cores: list[list[int]] = [[] for _ in replicas]
    heap = [(0.0, c) for c in range(problem.cores)]
    items = sorted(((problem.cost(i, r), i) for i, r in enumerate(replicas) for _ in range(r)), reverse=True)
    for load, i in items:
        skipped = []
        while heap and (room[heap[0][1]] < problem.crossbars[i] or heap[0][1] in cores[i]):
            skipped.append(heapq.heappop(heap))
        if not heap:
            return None
        _, core = heapq.heappop(heap)
        loads[core] += load
        room[core] -= problem.crossbars[i]
        cores[i].append(core)
        for entry in [*skipped, (loads[core], core)]:
            heapq.heappush(heap, entry)
    return Mapping(list(replicas), cores, max(loads, default=0.0))


def unreplicated(problem: MappingProblem) -> Mapping:
    """One replica per compute, placed (the program must fit the chip)."""
    ones = [1] * len(problem.costs)
    mapping = place(problem, ones) or place_balanced(problem, ones)
    if mapping is None:
        need = sum(problem.crossbars)
        raise ValueError(
            f"the program's computes ({need} crossbars) cannot be placed on {problem.cores} cores of "
            f"{problem.per_core} crossbars (at least {math.ceil(need / problem.per_core)} cores)"
        )
    return mapping
