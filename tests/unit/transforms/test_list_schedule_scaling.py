"""The list scheduler's plans in O(ops · (crossbars + log ops)): the same plans as the straightforward
algorithm (a minimum over all ready ops per step, kept here as the reference), and work per op that
does not grow with the number of ready ops (a layer of thousands of independent tiles)."""

import random
from collections import Counter

import pytest
from xdsl.dialects.builtin import TensorType, i32
from xdsl.ir import Block

from cimxdsl.device import preset
from cimxdsl.dialects.cim import CrossbarIdType, FutureType, GemmOp
from cimxdsl.transforms.memristor.scheduling import CriticalPathScheduler, CrossbarCostModel, DependencyGraph
from cimxdsl.transforms.memristor.scheduling.critical_path import _GraphWork, _key, _Plan
from cimxdsl.transforms.memristor.scheduling.framework import DependencyNode


def reference_plan(self: CriticalPathScheduler, work: _GraphWork, defer_held: bool, target: float | None) -> _Plan:
    """`CriticalPathScheduler._plan` as first written: each step a minimum over all ready ops."""
    weights, mvm, write, rank = work.weights, work.mvm, work.write, work.rank
    needed = Counter(weights.values())
    crossbars = range(len(self.resources))
    free = [0.0] * len(self.resources)
    held = [-1] * len(self.resources)
    plan = _Plan()
    ready_at = {node: 0.0 for node in work.graph if not node.dependencies}
    ready_key = dict(ready_at)
    waiting = {node: len(node.dependencies) for node in work.graph}

    def end(node: DependencyNode, i: int) -> float:
        return max(ready_at[node], free[i]) + mvm[node] + (0.0 if held[i] == weights[node] else write[node])

    def placement(node: DependencyNode, i: int) -> tuple[float, bool, bool, int]:
        evicts = held[i] >= 0 and held[i] != weights[node] and needed[held[i]] > 0
        return _key(end(node, i)), held[i] != weights[node], evicts, i

    while ready_at:
        now = max(_key(min(free)), min(ready_key.values()))
        resident = {held[i] for i in crossbars if _key(free[i]) <= now}
        somewhere = set(held) if defer_held else set()
        node = min(
            ready_at,
            key=lambda n: (max(ready_key[n], now), weights[n] not in resident, weights[n] in somewhere, rank[n]),
        )
        del ready_key[node]
        needed[weights[node]] -= 1
        best = min(crossbars, key=lambda i: placement(node, i))
        if target is not None and held[best] != weights[node]:
            limit = _key(max(target, max(free)))
            holders = [i for i in crossbars if held[i] == weights[node] and _key(end(node, i)) <= limit]
            best = min(holders, key=lambda i: placement(node, i), default=best)
        start = max(ready_at.pop(node), free[best])
        duration = mvm[node] + (0.0 if held[best] == weights[node] else write[node])
        plan.start[node] = start
        plan.finish[node] = free[best] = start + duration
        held[best] = weights[node]
        plan.placed.append((node, best))
        for dependent in node.dependents:
            waiting[dependent] -= 1
            if not waiting[dependent]:
                ready_at[dependent] = max(plan.finish[d] for d in dependent.dependencies)
                ready_key[dependent] = _key(ready_at[dependent])
    plan.makespan_ns = max(plan.finish.values(), default=0.0)
    return plan


class ReferenceScheduler(CriticalPathScheduler):
    _plan = reference_plan


SEEDS = 50


def random_graph(seed: int, ops: int, tiles: int, shape: str = "independent") -> DependencyGraph:
    """`ops` gemms on `tiles` weight tiles (K of 32-128, 32 columns) with inputs of 1-128 rows (only the
    graph: the ops are built, not placed in a block, as the scheduler looks at their types only).
    `shape`: "independent" ops, "random" edges (each earlier op a dependency with one probability),
    or "layers" (each op depends on all ops of the layer before, or on one or two of them: many ops
    ready at once while the crossbars are free at different times)."""
    rng = random.Random(seed)
    ks = [rng.choice([32, 64, 128]) for _ in range(tiles)]
    rows = [1, 4, 16, 128]
    inputs = [TensorType(i32, [r, k]) for r in rows for k in (32, 64, 128)]
    block = Block(arg_types=[CrossbarIdType(), *inputs, *(TensorType(i32, [k, 32]) for k in ks)])
    crossbar, lhs, rhs = block.args[0], block.args[1 : 1 + len(inputs)], block.args[1 + len(inputs) :]
    edge_probability, layers, full = rng.choice([0.02, 0.1, 0.5]), rng.randint(2, 5), rng.random() < 0.5
    graph = DependencyGraph()
    layer: list[list[DependencyNode]] = [[] for _ in range(layers)]
    for i in range(ops):
        tile = i if i < tiles else rng.randrange(tiles)
        r = rng.randrange(len(rows))
        node = graph.add(
            GemmOp(crossbar, lhs[3 * r + [32, 64, 128].index(ks[tile])], rhs[tile], FutureType(i32, [rows[r], 32]))
        )
        if shape == "random":
            for earlier in graph.nodes[:-1]:
                if rng.random() < edge_probability:
                    DependencyGraph.link(earlier, node)
        elif shape == "layers":
            level = i * layers // ops
            layer[level].append(node)
            before = layer[level - 1] if level else []
            for earlier in before if full else rng.sample(before, min(len(before), rng.randint(1, 2))):
                DependencyGraph.link(earlier, node)
    return graph


def plans(scheduler: CriticalPathScheduler, graph: DependencyGraph, target: float) -> list[tuple]:
    """Both plans of `scheduler` (the second with `target`), as comparable values."""
    work = _GraphWork(graph, scheduler.cost)
    return [
        (plan.placed, list(plan.start.items()), list(plan.finish.items()), plan.makespan_ns)
        for plan in (scheduler._plan(work, True, None), scheduler._plan(work, False, target))
    ]


@pytest.mark.parametrize("device", ["cinnamon", "ideal", "isaac"])
def test_plans_are_those_of_the_reference(device: str):
    """Random DAGs (independent ops, random edges, layers), few to many ops per tile, 1-16 crossbars,
    targets from none to everything (writes free on the ideal device: many ties)."""
    cost = CrossbarCostModel(preset(device))
    for seed in range(SEEDS):
        rng = random.Random(seed)
        ops = rng.randint(1, 50)
        graph = random_graph(seed, ops, rng.randint(1, ops), rng.choice(["independent", "random", "layers"]))
        resources = list(range(rng.choice([1, 2, 3, 4, 8, 16])))
        target = rng.choice([0.0, 500.0, 2000.0, 1e9])
        new, reference = CriticalPathScheduler(resources, cost), ReferenceScheduler(resources, cost)
        assert plans(new, graph, target) == plans(reference, graph, target), f"seed {seed}"
        assert new.schedule(graph) == reference.schedule(graph), f"seed {seed}"
        assert new.makespan_ns == reference.makespan_ns


def node_lookups(scheduler: CriticalPathScheduler, graph: DependencyGraph, monkeypatch) -> int:
    """How many times scheduling `graph` hashes a node (a lookup in a dict or set keyed by nodes):
    every per-op structure is one, so this is the scheduler's work up to a constant."""
    count = 0

    def counting_hash(node: DependencyNode) -> int:
        nonlocal count
        count += 1
        return object.__hash__(node)

    with monkeypatch.context() as patch:
        patch.setattr(DependencyNode, "__hash__", counting_hash)
        scheduler.schedule(graph)
    return count


@pytest.mark.parametrize("device", ["cinnamon", "ideal"])
def test_work_per_op_does_not_grow_with_the_ready_ops(device: str, monkeypatch):
    """Layers of independent ops, all ready at once (like a dense layer's tiles), some tiles shared:
    four times the ops take four times the lookups, a bounded number per op (44 now). The
    reference takes over eight times as many: the count sees its quadratic work."""
    cost = CrossbarCostModel(preset(device))
    resources = list(range(8))
    layers = {ops: random_graph(1, ops, ops * 3 // 4) for ops in (75, 300, 1200)}
    lookups = {ops: node_lookups(CriticalPathScheduler(resources, cost), layers[ops], monkeypatch) for ops in layers}
    assert lookups[1200] < 4.2 * lookups[300] < 4.2**2 * lookups[75]
    assert lookups[1200] < 60 * 1200
    reference = {ops: node_lookups(ReferenceScheduler(resources, cost), layers[ops], monkeypatch) for ops in (75, 300)}
    assert reference[300] > 8 * reference[75]
