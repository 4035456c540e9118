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

from cimxdsl.dialects import spatial as spat
from xdsl.ir import SSAValue

from cimxdsl.dialects.utils import num_elements, shape_of


def compute_cost(compute: spat.ComputeOp, rows: Callable[[SSAValue], int] | None = None) -> int:
    """The work of a compute: its crossbar reads (`mvmul`s), one per output pixel and matrix of each
    `apply_filters` (`rows`: how many rows of each result a band computes; all by default). The
    one place to plug a performance model's estimate in."""
    cost = 0
    for op in compute.body.block.ops:
        if isinstance(op, spat.ApplyFiltersOp):
            shape = shape_of(op.result)
            pixels = num_elements(shape[1:-1]) * (rows(op.result) if rows is not None else shape[0])
            cost += pixels * sum(1 for i in op.weight_index_list() if i >= 0)
    return cost


@dataclass(frozen=True)
class MappingProblem:
    """Per compute: its cost, its crossbars and the most replicas it can have (its output rows, 1
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
    """Replicas onto cores, largest load first onto the least loaded core with room that holds no
    other replica of the same compute (LPT); None when they do not fit."""
    replicas = [int(r) for r in replicas]
    if not problem.fits(replicas):
        return None
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
    mapping = place(problem, [1] * len(problem.costs))
    if mapping is None:
        need = sum(problem.crossbars)
        raise ValueError(
            f"the program's computes ({need} crossbars) cannot be placed on {problem.cores} cores of "
            f"{problem.per_core} crossbars (at least {math.ceil(need / problem.per_core)} cores)"
        )
    return mapping
