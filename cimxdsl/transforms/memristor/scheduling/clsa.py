"""Cross-layer scheduling with weight duplication, after CLSA-CIM (R. Pelke, J. Bosbach, J. Yang,
C. Lammert, R. Leupers, "CLSA-CIM: A Cross-Layer Scheduling Approach for Computing-in-Memory
Architectures", DATE 2024).

The graph is one device's products across all its layers. With row bands (`tile{band=N}`) and
their data flow traced (`row_bands`), a band of a layer depends only on the bands of the layers
before that make the rows it reads, so a layer starts on its first rows while the layers before
it still compute later ones.

Weights stay where they are written: when the device has a crossbar for each weight tile, each
tile gets its own (in order of first use) and the crossbars left over take copies of the tiles
with the most work per copy, up to `duplicates` copies (each copy halves, thirds, … that tile's
queue); an op then runs on whichever of its tile's crossbars finishes it first. When the tiles do
not fit, any crossbar takes any op (the one finishing it first, a crossbar holding its tile on a
tie), writing the tile where it is not held.

The ops are placed in the order their inputs are ready (then the longest path to the end, then
graph order): an op starts once its inputs exist and one of its crossbars is free. The times are
real (the device model's, `CrossbarCostModel`), and the IR gets them as steps (`steps_from_times`).
With a `resident` cost model the tiles are on their crossbars from an earlier run of the program
(weights stationary, as CLSA-CIM assumes), which the same program on the same device finds there
when the tiles fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from heapq import heappop, heappush

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation

from cimxdsl.dialects.cinm import LAYER
from cimxdsl.transforms.memristor.scheduling.critical_path import (
    CrossbarCostModel,
    crossbar_work,
    graph_lower_bound_ns,
    steps_from_times,
)
from cimxdsl.transforms.memristor.scheduling.framework import (
    DependencyGraph,
    DependencyNode,
    R,
    Schedule,
    SchedulingStrategy,
)
from cimxdsl.transforms.memristor.scheduling.residency import StoredTile


def layer_of(operation: Operation) -> str:
    """The layer a product belongs to (`cimxdsl.layer`, set on a device shared by layers)."""
    attr = operation.attributes.get(LAYER)
    return attr.data if isinstance(attr, StringAttr) else "layer"


@dataclass
class ScheduleReport:
    """What a schedule achieves: its end, a lower bound on any schedule's end, and the crossbar
    utilisation (busy time ÷ available crossbar-time): overall over all crossbars and the whole
    schedule, per layer over the crossbars the layer used from its first start to its last end."""

    latency_ns: float = 0.0
    lower_bound_ns: float = 0.0
    utilisation: float = 0.0
    layers: dict[str, float] = field(default_factory=dict[str, float])
    copies: int = 0
    """Crossbars holding a second (third, …) copy of a tile from the start."""


def utilisation(
    placed: Sequence[tuple[DependencyNode, int]],
    start: dict[DependencyNode, float],
    finish: dict[DependencyNode, float],
    crossbars: int,
) -> tuple[float, dict[str, float]]:
    """Overall and per-layer utilisation of a timed placement (see `ScheduleReport`)."""
    makespan = max(finish.values(), default=0.0)
    busy = sum(finish[node] - start[node] for node, _ in placed)
    spans: dict[str, tuple[float, float, float, set[int]]] = {}
    for node, crossbar in placed:
        name = layer_of(node.operation)
        first, last, total, used = spans.get(name, (start[node], finish[node], 0.0, set()))
        used.add(crossbar)
        spans[name] = (min(first, start[node]), max(last, finish[node]), total + finish[node] - start[node], used)
    layers = {
        name: total / (len(used) * (last - first)) if last > first else 0.0
        for name, (first, last, total, used) in spans.items()
    }
    return (busy / (crossbars * makespan) if makespan > 0 else 0.0), layers


def in_program_order(graph: DependencyGraph) -> list[DependencyNode]:
    """The nodes of `graph` (ops of one block) in program order."""
    nodes = list(graph)
    if not nodes:
        return nodes
    block = nodes[0].operation.parent_block()
    position = {op: i for i, op in enumerate(block.ops)} if block is not None else {}
    return sorted(nodes, key=lambda node: position.get(node.operation, 0))


class ClsaScheduler(SchedulingStrategy[R]):
    """Cross-layer list scheduling on resident weights with copies (see the module docstring)."""

    def __init__(self, resources: Sequence[R], cost: CrossbarCostModel, duplicates: int = 0, cross_layer: bool = True):
        super().__init__(resources)
        self.cost = cost
        self.duplicates = duplicates
        self.cross_layer = cross_layer
        """False: layer by layer on the same crossbars, a layer starting once the layers before it
        (in graph order of their first ops) have ended: the baseline cross-layer scheduling beats."""
        self.report = ScheduleReport()
        self.notes: list[str] = []

    def homes(
        self, graph: DependencyGraph, tile_of: dict[DependencyNode, StoredTile]
    ) -> dict[StoredTile, list[int]] | None:
        """The crossbars of each tile (its own, then its copies), or None when the tiles do not fit."""
        work: dict[StoredTile, float] = {}
        for node in graph:
            work[tile_of[node]] = work.get(tile_of[node], 0.0) + self.cost.mvm_ns(node.operation)
        count = len(self.resources)
        if len(work) > count:
            self.notes.append(
                f"{len(work)} weight tiles on {count} crossbars: tiles are written where they are needed, no copies"
            )
            return None
        homes = {tile: [i] for i, tile in enumerate(work)}
        spare = count - len(work)
        if self.duplicates > spare:
            self.notes.append(
                f"duplicates={self.duplicates} but {spare} copies fit: {count} crossbars to use (at most one "
                f"per op) for {len(work)} weight tiles"
            )
        queue = [(-total, i, tile) for i, (tile, total) in enumerate(work.items())]
        queue.sort()
        for crossbar in range(len(work), len(work) + min(self.duplicates, spare)):
            _, i, tile = heappop(queue)
            homes[tile].append(crossbar)
            heappush(queue, (-work[tile] / len(homes[tile]), i, tile))
        self.report.copies = min(self.duplicates, spare)
        return homes

    def schedule(self, graph: DependencyGraph) -> Schedule[R]:
        cost, count = self.cost, len(self.resources)
        tile_of = {node: crossbar_work(node.operation).weights for node in graph}
        mvm = {node: cost.mvm_ns(node.operation) for node in graph}
        write = {node: cost.write_ns(node.operation) for node in graph}
        path: dict[DependencyNode, float] = {}
        for node in reversed(graph.topological_order()):
            path[node] = mvm[node] + max((path[d] for d in node.dependents), default=0.0)
        position = {node: i for i, node in enumerate(graph)}
        homes = self.homes(graph, tile_of)
        everywhere = list(range(count))

        free = [0.0] * count
        held: list[StoredTile | None] = [None] * count
        if homes is not None and cost.resident:
            for tile, crossbars in homes.items():
                for i in crossbars:
                    held[i] = tile
        start: dict[DependencyNode, float] = {}
        finish: dict[DependencyNode, float] = {}
        placed: list[tuple[DependencyNode, int]] = []
        waiting = {node: len(node.dependencies) for node in graph}
        stage = dict.fromkeys(graph, 0)
        layers: list[str | None] = [None]
        if not self.cross_layer:
            layers = list(dict.fromkeys(layer_of(node.operation) for node in in_program_order(graph)))
            stage = {node: layers.index(layer_of(node.operation)) for node in graph}
        held_back: list[list[DependencyNode]] = [[] for _ in layers]
        ready: list[tuple[float, float, int, DependencyNode]] = []
        gate = 0.0

        def release(node: DependencyNode, time: float) -> None:
            heappush(ready, (max(time, gate), -path[node], position[node], node))

        for node in graph:
            if not node.dependencies:
                held_back[stage[node]].append(node)
        for current in range(len(layers)):
            for node in held_back[current]:
                release(node, max((finish[d] for d in node.dependencies), default=0.0))
            while ready:
                at, _, _, node = heappop(ready)
                tile = tile_of[node]
                candidates = homes[tile] if homes is not None else everywhere

                def end(i: int) -> tuple[float, bool, int]:
                    needs_write = held[i] != tile
                    return (
                        round(max(at, free[i]) + mvm[node] + (write[node] if needs_write else 0.0), 6),
                        needs_write,
                        i,
                    )

                best = min(candidates, key=end)
                start[node] = max(at, free[best])
                finish[node] = free[best] = start[node] + mvm[node] + (write[node] if held[best] != tile else 0.0)
                held[best] = tile
                placed.append((node, best))
                for dependent in node.dependents:
                    waiting[dependent] -= 1
                    if not waiting[dependent]:
                        assert stage[dependent] >= current, "a layer depends on a later one"
                        if stage[dependent] == current:
                            release(dependent, max(finish[d] for d in dependent.dependencies))
                        else:
                            held_back[stage[dependent]].append(dependent)
            gate = max(finish.values(), default=0.0)
        self.report.latency_ns = max(finish.values(), default=0.0)
        self.report.lower_bound_ns = graph_lower_bound_ns(graph, cost, count)
        self.report.utilisation, self.report.layers = utilisation(placed, start, finish, count)
        return steps_from_times(self.resources, placed, start, finish)
