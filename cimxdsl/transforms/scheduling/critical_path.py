"""List scheduling with critical-path priority and the device model's latencies.

Cost model (per cim op on one logical crossbar, from `cimxdsl.device`, the simulator's own formulas):

- the weight tile: `rhs` (K×N) of a gemm; of a gemv (M×K matrix · K-vector) the matrix `lhs`, stored
  transposed (K×M) so that one input vector gives the M results;
- MVM time = (pipeline_fill_cycles + input_slices · B − 1) · cycle_ns for B input rows (B = lhs rows of
  a gemm, 1 for a gemv), input_slices = ceil(input_bits / dac_bits), at least one cycle;
- write time = K · write_ns_per_row, paid only if the crossbar does not hold that tile already (the
  same SSA value), as `cim-to-memristor` writes a tile once.

An op takes write (if needed) + MVM time on its crossbar, starting once its crossbar is free and its
dependencies have finished (their barriers come first).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from cimxdsl.device.config import DeviceConfig
from cimxdsl.device.metrics import mvm_events, write_time_ns
from cimxdsl.dialects.cim import FutureType, GemmOp, GemvOp
from cimxdsl.transforms.scheduling.framework import (
    DependencyGraph,
    DependencyNode,
    R,
    Schedule,
    ScheduledOperation,
    SchedulingStrategy,
)


@dataclass(frozen=True)
class CrossbarWork:
    """What a cim op asks of a crossbar: the weight tile (K×N, identified by its SSA value) and the
    number of input rows it streams through it."""

    weights: SSAValue
    rows: int
    k: int
    n: int


def crossbar_work(operation: Operation) -> CrossbarWork:
    def shape(value: SSAValue) -> tuple[int, ...]:
        assert isinstance(value.type, TensorType | FutureType)
        return value.type.get_shape()

    if isinstance(operation, GemmOp):
        (rows, k), (_, n) = shape(operation.lhs), shape(operation.rhs)
        return CrossbarWork(operation.rhs, rows, k, n)
    if isinstance(operation, GemvOp):
        m, k = shape(operation.lhs)
        return CrossbarWork(operation.lhs, 1, k, m)
    raise ValueError(f"no crossbar cost for '{operation.name}'")


@dataclass(frozen=True)
class CrossbarCostModel:
    """Latencies of cim ops on one logical crossbar of `config`, in ns."""

    config: DeviceConfig

    def mvm_ns(self, operation: Operation) -> float:
        work = crossbar_work(operation)
        cycles = mvm_events(self.config, work.rows, work.k, work.n)["busy_cycles"]
        return max(cycles, 1) * self.config.cycle_ns

    def write_ns(self, operation: Operation) -> float:
        return write_time_ns(self.config, crossbar_work(operation).k)

    def duration_ns(self, operation: Operation, held: SSAValue | None) -> float:
        """Time on a crossbar that holds the tile `held` (None: nothing yet)."""
        write = 0.0 if held is crossbar_work(operation).weights else self.write_ns(operation)
        return write + self.mvm_ns(operation)


def schedule_makespan_ns(schedule: Schedule[R], cost: CrossbarCostModel) -> float:
    """The time the last op of a step schedule ends, run as the emitted IR runs on the device: per step
    the dispatches (each starts when the host issues it and its crossbar is free), then the barriers
    (the host waits for those ops)."""
    now = 0.0
    free: dict[R, float] = {}
    held: dict[R, SSAValue] = {}
    finish: dict[Operation, float] = {}
    for time in sorted({t for entry in schedule for t in (entry.dispatch_time, entry.barrier_time)}):
        for entry in schedule:
            if entry.dispatch_time == time:
                start = max(now, free.get(entry.resource, 0.0))
                duration = cost.duration_ns(entry.operation, held.get(entry.resource))
                free[entry.resource] = finish[entry.operation] = start + duration
                held[entry.resource] = crossbar_work(entry.operation).weights
        for entry in schedule:
            if entry.barrier_time == time:
                now = max(now, finish[entry.operation])
    return max([now, *free.values()])


def _key(time: float) -> float:
    return round(time, 6)


class CriticalPathScheduler(SchedulingStrategy[R]):
    """List scheduling. Repeatedly take, among the ops whose dependencies are placed, the one that can
    start first; on a tie, one that can start then on a crossbar already holding its weights, then one
    whose weights no crossbar holds (it needs a write anyway, while the others may wait for theirs),
    then the one with the longest path to the end of the graph (write + MVM per op: the critical
    path), then graph order. Put it on the crossbar where it finishes first; on equal finish prefer a
    crossbar holding its weights, then one whose weights no later op needs, then the lowest index.

    The times are real (ns). They become steps for the dispatch/barrier loop so the IR runs the same
    timeline: dispatches in start-time order, each barrier at its op's finish, and at equal times
    barriers before dispatches. `makespan_ns` holds the planned end of the last op."""

    def __init__(self, resources: Sequence[R], cost: CrossbarCostModel):
        super().__init__(resources)
        self.cost = cost
        self.makespan_ns = 0.0

    def schedule(self, graph: DependencyGraph) -> Schedule[R]:
        tiles: dict[SSAValue, int] = {}  # weight tiles by number: cheaper to hash than SSA values
        weights = {node: tiles.setdefault(crossbar_work(node.operation).weights, len(tiles)) for node in graph}
        mvm = {node: self.cost.mvm_ns(node.operation) for node in graph}
        write = {node: self.cost.write_ns(node.operation) for node in graph}
        priority: dict[DependencyNode, float] = {}
        for node in reversed(graph.topological_order()):
            priority[node] = write[node] + mvm[node] + max((priority[d] for d in node.dependents), default=0.0)
        position = {node: i for i, node in enumerate(graph)}
        needed = Counter(weights.values())

        crossbars = range(len(self.resources))
        free = [0.0] * len(self.resources)
        held = [-1] * len(self.resources)
        start: dict[DependencyNode, float] = {}
        finish: dict[DependencyNode, float] = {}
        placed: list[tuple[DependencyNode, int]] = []
        ready_at = {node: 0.0 for node in graph if not node.dependencies}
        ready_key = dict(ready_at)
        waiting = {node: len(node.dependencies) for node in graph}

        rank = {node: (-priority[node], position[node]) for node in graph}

        def placement(node: DependencyNode, i: int) -> tuple[float, bool, bool, int]:
            end = max(ready_at[node], free[i]) + mvm[node] + (0.0 if held[i] == weights[node] else write[node])
            evicts = held[i] >= 0 and held[i] != weights[node] and needed[held[i]] > 0
            return _key(end), held[i] != weights[node], evicts, i

        while ready_at:
            # Every op ready by `now` can start at `now` and no op earlier; `resident` weights are on
            # crossbars free by then.
            now = max(_key(min(free)), min(ready_key.values()))
            resident = {held[i] for i in crossbars if _key(free[i]) <= now}
            somewhere = set(held)
            node = min(
                ready_at,
                key=lambda n: (max(ready_key[n], now), weights[n] not in resident, weights[n] in somewhere, rank[n]),
            )
            del ready_key[node]
            needed[weights[node]] -= 1
            best = min(crossbars, key=lambda i: placement(node, i))
            start[node] = max(ready_at.pop(node), free[best])
            duration = mvm[node] + (0.0 if held[best] == weights[node] else write[node])
            finish[node] = free[best] = start[node] + duration
            held[best] = weights[node]
            placed.append((node, best))
            for dependent in node.dependents:
                waiting[dependent] -= 1
                if not waiting[dependent]:
                    ready_at[dependent] = max(finish[d] for d in dependent.dependencies)
                    ready_key[dependent] = _key(ready_at[dependent])

        self.makespan_ns = max(finish.values(), default=0.0)
        return self._as_steps(placed, start, finish)

    def _as_steps(
        self,
        placed: list[tuple[DependencyNode, int]],
        start: dict[DependencyNode, float],
        finish: dict[DependencyNode, float],
    ) -> Schedule[R]:
        """Steps from times: a new step at each dispatch after a barrier and at each later finish."""
        order = {node: i for i, (node, _) in enumerate(placed)}
        events = sorted(
            [(_key(start[node]), 1, order[node], node) for node, _ in placed]
            + [(_key(finish[node]), 0, order[node], node) for node, _ in placed]
        )
        dispatch: dict[DependencyNode, int] = {}
        barrier: dict[DependencyNode, int] = {}
        step, in_barriers, last_finish = 0, False, 0.0
        for time, is_start, _, node in events:
            if is_start:
                step += in_barriers
                in_barriers = False
                dispatch[node] = step
            else:
                step += in_barriers and time != last_finish
                in_barriers, last_finish = True, time
                barrier[node] = step
        by_start = sorted(placed, key=lambda placement: (_key(start[placement[0]]), order[placement[0]]))
        return [
            ScheduledOperation(node.operation, self.resources[i], dispatch[node], barrier[node]) for node, i in by_start
        ]
