"""List scheduling with critical-path priority and the device model's latencies.

Cost model (per cim op on one logical crossbar, from `cimxdsl.device`, the simulator's own formulas):

- the weight tile (`StoredTile`): `rhs` (K×N) of a gemm; of a gemv (M×K matrix · K-vector) the matrix
  `lhs`, stored transposed (K×M) so that one input vector gives the M results;
- MVM time = (pipeline_fill_cycles + input_slices · B − 1) · cycle_ns for B input rows (B = lhs rows of
  a gemm, 1 for a gemv), input_slices = ceil(input_bits / dac_bits) (the op's own input bits when
  its layer has them), at least one cycle;
- write time = K · write_ns_per_row, paid only if the crossbar does not hold that tile already (the
  same `StoredTile`: value and orientation), as `cim-to-memristor` writes a tile once.

An op takes write (if needed) + MVM time on its crossbar, starting once its crossbar is free and its
dependencies have finished (their barriers come first).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from heapq import heapify, heappop, heappush

from xdsl.ir import Operation

from cimxdsl.device.config import DeviceConfig
from cimxdsl.device.metrics import mvm_events, write_time_ns
from cimxdsl.dialects.cim import CimValue, FutureType, GemmOp
from cimxdsl.dialects.utils import precision_of
from cimxdsl.transforms.memristor.scheduling.framework import (
    DependencyGraph,
    DependencyNode,
    R,
    Schedule,
    ScheduledOperation,
    SchedulingStrategy,
)
from cimxdsl.transforms.memristor.scheduling.residency import StoredTile, stored_tile


@dataclass(frozen=True)
class CrossbarWork:
    """What a cim op asks of a crossbar: the weight tile (K×N as stored) and the number of input rows
    it streams through it."""

    weights: StoredTile
    rows: int
    k: int
    n: int


def crossbar_work(operation: Operation) -> CrossbarWork:
    tile = stored_tile(operation)
    rows = 1
    if isinstance(operation, GemmOp):
        assert isinstance(operation.lhs.type, CimValue | FutureType)
        rows = operation.lhs.type.get_shape()[0]
    return CrossbarWork(tile, rows, *tile.shape)


@cache
def layer_config(config: DeviceConfig, precision: tuple[int, int] | None) -> DeviceConfig:
    """`config` at a layer's precision (`DeviceConfig.with_precision`), made once."""
    return config.with_precision(precision)


@dataclass(frozen=True)
class CrossbarCostModel:
    """Latencies of cim ops on one logical crossbar of `config`, in ns; with `resident`, weights are
    on their crossbars before the run (written by an earlier run of the same program): no writes."""

    config: DeviceConfig
    resident: bool = False

    def mvm_ns(self, operation: Operation) -> float:
        """The op's MVM at its layer's input bits (`weight_bits`/`input_bits`, else the device's)."""
        work = crossbar_work(operation)
        config = layer_config(self.config, precision_of(operation))
        cycles = mvm_events(config, work.rows, work.k, work.n)["busy_cycles"]
        return max(cycles, 1) * self.config.cycle_ns

    def write_ns(self, operation: Operation) -> float:
        return 0.0 if self.resident else write_time_ns(self.config, crossbar_work(operation).k)

    def duration_ns(self, operation: Operation, held: StoredTile | None) -> float:
        """Time on a crossbar that holds the tile `held` (None: nothing yet)."""
        write = 0.0 if held == crossbar_work(operation).weights else self.write_ns(operation)
        return write + self.mvm_ns(operation)


def schedule_makespan_ns(schedule: Schedule[R], cost: CrossbarCostModel) -> float:
    """The time the last op of a step schedule ends, run as the emitted IR runs on the device: per step
    the dispatches (each starts when the host issues it and its crossbar is free), then the barriers
    (the host waits for those ops)."""
    now = 0.0
    free: dict[R, float] = {}
    held: dict[R, StoredTile] = {}
    finish: dict[Operation, float] = {}
    dispatches: defaultdict[int, list[ScheduledOperation[R]]] = defaultdict(list)
    barriers: defaultdict[int, list[ScheduledOperation[R]]] = defaultdict(list)
    for entry in schedule:
        dispatches[entry.dispatch_time].append(entry)
        barriers[entry.barrier_time].append(entry)
    for time in sorted(dispatches.keys() | barriers.keys()):
        for entry in dispatches[time]:
            start = max(now, free.get(entry.resource, 0.0))
            duration = cost.duration_ns(entry.operation, held.get(entry.resource))
            free[entry.resource] = finish[entry.operation] = start + duration
            held[entry.resource] = crossbar_work(entry.operation).weights
        for entry in barriers[time]:
            now = max(now, finish[entry.operation])
    return max([now, *free.values()])


def makespan_lower_bound_ns(operations: Iterable[Operation], cost: CrossbarCostModel, crossbars: int) -> float:
    """A lower bound on the time any schedule of the cim `operations` on `crossbars` crossbars takes
    (from its start until the last op ends), writes included, no weights resident at the start.

    A crossbar runs one write or MVM at a time, so the makespan is at least each crossbar's busy time.
    Split the busy time into *items*, disjoint sets of work that each run on one crossbar: per distinct
    weight tile, one op using it (the one with the longest MVM) with the write of the tile on that
    op's crossbar that must precede it (different tiles, different writes), and every other op alone
    (its MVM). With the item sizes p1 ≥ p2 ≥ … ≥ pn on m crossbars the makespan is at least

    - p1, the longest op with its write;
    - (p1 + … + pn) ÷ m, the total work (every tile written once) spread evenly;
    - for k = 1 … (n − 1) ÷ m: p(km−k+1) + … + p(km+1). Of the km+1 largest items some crossbar runs
      at least k+1 (pigeonhole), so at least the k+1 smallest of them: ops are indivisible, e.g. 36
      equal ops on 16 crossbars take 3 ops' time, not 36/16.

    Dependencies are ignored (the bound stays valid, only less tight)."""
    by_tile: dict[StoredTile, list[Operation]] = {}
    for operation in operations:
        by_tile.setdefault(crossbar_work(operation).weights, []).append(operation)
    items: list[float] = []
    for tile_ops in by_tile.values():
        mvms = sorted((cost.mvm_ns(operation) for operation in tile_ops), reverse=True)
        items += [cost.write_ns(tile_ops[0]) + mvms[0], *mvms[1:]]
    items.sort(reverse=True)
    bound = sum(items) / crossbars
    for k in range((len(items) - 1) // crossbars + 1):
        bound = max(bound, sum(items[k * crossbars - k : k * crossbars + 1]))
    return bound


def _key(time: float) -> float:
    return round(time, 6)


def _first_of_tiles(tops: list[tuple[int, int]], by_tile: dict[int, list[int]], avoid: set[int]) -> int:
    """The first op (by rank) of the tiles not in `avoid` in `tops` (see `CriticalPathScheduler._plan`),
    else the first op of any tile. Stale entries met on the way are dropped; `avoid` ones are kept."""
    aside: list[tuple[int, int]] = []
    seen: set[int] = set()
    found = fallback = -1
    while tops:
        first, tile = tops[0]
        tile_ops = by_tile[tile]
        if not tile_ops or tile_ops[0] != first or tile in seen:
            heappop(tops)
        elif tile not in avoid:
            found = first
            break
        else:
            fallback = first if fallback < 0 else fallback
            seen.add(tile)
            aside.append(heappop(tops))
    for entry in aside:
        heappush(tops, entry)
    return found if found >= 0 else fallback


class _GraphWork:
    """What the plans of a graph share: per node its weight tile (by number: cheaper to hash than a
    `StoredTile`), MVM and write times, and its rank (longest path to the end first, then graph order);
    `by_rank` holds the nodes in rank order, `position` each node's index there."""

    def __init__(self, graph: DependencyGraph, cost: CrossbarCostModel):
        self.graph = graph
        tiles: dict[StoredTile, int] = {}
        self.weights = {node: tiles.setdefault(crossbar_work(node.operation).weights, len(tiles)) for node in graph}
        self.mvm = {node: cost.mvm_ns(node.operation) for node in graph}
        self.write = {node: cost.write_ns(node.operation) for node in graph}
        path: dict[DependencyNode, float] = {}
        for node in reversed(graph.topological_order()):
            path[node] = self.write[node] + self.mvm[node] + max((path[d] for d in node.dependents), default=0.0)
        self.rank = {node: (-path[node], i) for i, node in enumerate(graph)}
        self.by_rank = sorted(self.rank, key=self.rank.__getitem__)
        self.position = {node: i for i, node in enumerate(self.by_rank)}


@dataclass
class _Plan:
    """A list schedule in real times: (node, crossbar index) in placement order, start and finish."""

    placed: list[tuple[DependencyNode, int]] = field(default_factory=list[tuple[DependencyNode, int]])
    start: dict[DependencyNode, float] = field(default_factory=dict[DependencyNode, float])
    finish: dict[DependencyNode, float] = field(default_factory=dict[DependencyNode, float])
    makespan_ns: float = 0.0


class CriticalPathScheduler(SchedulingStrategy[R]):
    """List scheduling, two plans of which the shorter is kept (the first on a tie).

    Both repeatedly take, among the ops whose dependencies are placed, the one that can start first;
    on a tie, one that can start then on a crossbar already holding its weights, then (first plan
    only) one whose weights no crossbar holds (it needs a write anyway, while the others may wait for
    theirs), then the one with the longest path to the end of the graph (write + MVM per op: the
    critical path), then graph order. The op goes on the crossbar where it finishes first; on equal
    finish one holding its weights, then one whose weights no later op needs, then the lowest index.
    The second plan first tries the crossbars holding the op's weights: if the op finishes on one by
    a target makespan (`target_slack` × `makespan_lower_bound_ns`, or the plan's end so far if later),
    it goes there, the write it saves being work no crossbar has to do. Either plan alone can be far
    from the best: the first when a tile's MVMs are more than a crossbar's share of the work (its ops
    wait for the one crossbar holding it instead of writing it on a second one in time), the second
    when waiting for a held tile costs more than the write. On 500 random layers of up to 10
    independent ops sharing tiles, the shorter plan was at most 9% above the optimum, each plan alone
    up to 33% and 37%.

    The times are real (ns). They become steps for the dispatch/barrier loop so the IR runs the same
    timeline: dispatches in start-time order, each barrier at its op's finish, and at equal times
    barriers before dispatches. `makespan_ns` holds the planned end of the last op."""

    target_slack = 1.1

    def __init__(self, resources: Sequence[R], cost: CrossbarCostModel):
        super().__init__(resources)
        self.cost = cost
        self.makespan_ns = 0.0

    def schedule(self, graph: DependencyGraph) -> Schedule[R]:
        work = _GraphWork(graph, self.cost)
        target = self.target_slack * makespan_lower_bound_ns(
            (node.operation for node in graph), self.cost, len(self.resources)
        )
        plans = [self._plan(work, defer_held=True, target=None), self._plan(work, defer_held=False, target=target)]
        plan = min(plans, key=lambda plan: _key(plan.makespan_ns))
        self.makespan_ns = plan.makespan_ns
        return steps_from_times(self.resources, plan.placed, plan.start, plan.finish)

    def _plan(self, work: _GraphWork, defer_held: bool, target: float | None) -> _Plan:
        """One list schedule (see the class docstring): `defer_held` puts ops whose weights some
        crossbar holds after the others that can start as early; with a `target`, an op goes on a
        crossbar holding its weights if it ends there by max(target, the plan's end so far).

        Each step takes the least of the ready ops by (max(ready time, now), weights not resident,
        weights held somewhere (with `defer_held`), rank), in O(crossbars + log ops), where `now` =
        max(first crossbar free, earliest ready time) (times by `_key`). So the op is one of those
        ready by `now`, and `now` never decreases: the crossbars' free times do not, and an op starts
        no earlier than `now` (it is ready by then, and its crossbar free no earlier than the first),
        so its dependents are ready no earlier. Hence an op ready by `now` stays so, and while some
        are left the earliest ready time is at most `now`: `now` = max(`now`, first crossbar free).
        Ops ready later wait in a heap by (ready time, rank); those ready by `now` are in a heap per
        weight tile by rank, and `tops` holds (rank, tile) of each such tile's first op (and stale
        entries, skipped). The op is the first of a resident tile (at most one per crossbar), else
        with `defer_held` the first in `tops` whose tile no crossbar holds (past at most one entry
        per crossbar), else the first in `tops`."""
        weights, mvm, write, by_rank = work.weights, work.mvm, work.write, work.by_rank
        position = work.position
        tile_of = [weights[node] for node in by_rank]
        needed = Counter(weights.values())
        crossbars = range(len(self.resources))
        free = [0.0] * len(self.resources)
        free_key = [0.0] * len(self.resources)  # _key(free[i])
        held = [-1] * len(self.resources)
        plan = _Plan()
        ready_at = {node: 0.0 for node in work.graph if not node.dependencies}
        later = [(0.0, position[node]) for node in ready_at]
        heapify(later)
        by_tile: defaultdict[int, list[int]] = defaultdict(list)
        tops: list[tuple[int, int]] = []
        waiting = {node: len(node.dependencies) for node in work.graph}
        now, ready_by_now = 0.0, 0
        tile, ready, run, write_ns = -1, 0.0, 0.0, 0.0  # of the op being placed

        def end(i: int) -> float:
            return max(ready, free[i]) + run + (0.0 if held[i] == tile else write_ns)

        def placement(i: int) -> tuple[float, bool, bool, int]:
            other = held[i] != tile
            return (
                _key(max(ready, free[i]) + run + (write_ns if other else 0.0)),
                other,
                other and needed[held[i]] > 0,
                i,
            )

        while ready_at:
            # Every op ready by `now` can start at `now` and no op earlier; `resident` weights are on
            # crossbars free by then.
            now = max(now, min(free_key), later[0][0] if later and not ready_by_now else now)
            while later and later[0][0] <= now:
                first = heappop(later)[1]
                ready_by_now += 1
                tile_ops = by_tile[tile_of[first]]
                heappush(tile_ops, first)
                if tile_ops[0] == first:
                    heappush(tops, (first, tile_of[first]))
            resident = {held[i] for i in crossbars if free_key[i] <= now}
            first = min((by_tile[held_tile][0] for held_tile in resident if by_tile.get(held_tile)), default=-1)
            if first < 0:
                first = _first_of_tiles(tops, by_tile, set(held) if defer_held else set())
            node = by_rank[first]
            ready_by_now -= 1
            tile, ready, run, write_ns = weights[node], ready_at.pop(node), mvm[node], write[node]
            tile_ops = by_tile[tile]
            heappop(tile_ops)
            if tile_ops:
                heappush(tops, (tile_ops[0], tile))
            needed[tile] -= 1
            best = min(crossbars, key=placement)
            if target is not None and held[best] != tile:
                limit = _key(max(target, max(free)))
                holders = [i for i in crossbars if held[i] == tile and _key(end(i)) <= limit]
                best = min(holders, key=placement, default=best)
            start = max(ready, free[best])
            duration = run + (0.0 if held[best] == tile else write_ns)
            plan.start[node] = start
            plan.finish[node] = free[best] = start + duration
            free_key[best] = _key(free[best])
            held[best] = tile
            plan.placed.append((node, best))
            for dependent in node.dependents:
                waiting[dependent] -= 1
                if not waiting[dependent]:
                    ready_at[dependent] = max(plan.finish[d] for d in dependent.dependencies)
                    heappush(later, (_key(ready_at[dependent]), position[dependent]))
        plan.makespan_ns = max(plan.finish.values(), default=0.0)
        return plan


def steps_from_times(
    resources: Sequence[R],
    placed: list[tuple[DependencyNode, int]],
    start: dict[DependencyNode, float],
    finish: dict[DependencyNode, float],
) -> Schedule[R]:
    """Steps from real times, for ops `placed` on resources by index: a new step at each dispatch
    after a barrier and at each later finish, so that the IR runs the same timeline (dispatches in
    start-time order, each barrier at its op's finish, at equal times barriers first)."""
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
    return [ScheduledOperation(node.operation, resources[i], dispatch[node], barrier[node]) for node, i in by_start]


def critical_path_ns(graph: DependencyGraph, cost: CrossbarCostModel) -> float:
    """The longest chain of dependent ops, each op's MVM time, plus the write of the chain's first
    op's tile: no tile is resident at the start, so an op starts no earlier than one write, and a
    dependent op no earlier than the end of what it depends on."""
    longest: dict[DependencyNode, float] = {}
    bound = 0.0
    for node in reversed(graph.topological_order()):
        longest[node] = cost.mvm_ns(node.operation) + max((longest[d] for d in node.dependents), default=0.0)
        bound = max(bound, cost.write_ns(node.operation) + longest[node])
    return bound


def graph_lower_bound_ns(graph: DependencyGraph, cost: CrossbarCostModel, crossbars: int) -> float:
    """A lower bound on any schedule of `graph` on `crossbars` crossbars, across layers when the graph
    spans several: the larger of the resource bound (`makespan_lower_bound_ns`, dependencies
    ignored) and the critical path (`critical_path_ns`, crossbars unlimited)."""
    resources = makespan_lower_bound_ns((node.operation for node in graph), cost, crossbars)
    return max(resources, critical_path_ns(graph, cost))
