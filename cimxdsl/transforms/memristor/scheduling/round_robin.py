"""Round-robin: a baseline that deals the ops out over all crossbars in turn."""

from __future__ import annotations

from cimxdsl.transforms.memristor.scheduling.framework import (
    DependencyGraph,
    DependencyNode,
    R,
    Schedule,
    ScheduledOperation,
    SchedulingStrategy,
)


class RoundRobinScheduler(SchedulingStrategy[R]):
    """The i-th op, by dependency level (longest chain of dependencies before it; graph order within a
    level), runs on resource i mod N, in the first step after its dependencies' steps and after the
    previous op on that resource. Unlike ASAP's first fit, which starts at resource 0 in every step,
    every crossbar gets work."""

    def schedule(self, graph: DependencyGraph) -> Schedule[R]:
        level: dict[DependencyNode, int] = {}
        for node in graph.topological_order():
            level[node] = 1 + max((level[d] for d in node.dependencies), default=-1)
        position = {node: i for i, node in enumerate(graph)}
        schedule: Schedule[R] = []
        step: dict[DependencyNode, int] = {}
        next_free_step = [0] * len(self.resources)
        for i, node in enumerate(sorted(graph, key=lambda n: (level[n], position[n]))):
            resource = i % len(self.resources)
            step[node] = max([next_free_step[resource], *(step[d] + 1 for d in node.dependencies)])
            next_free_step[resource] = step[node] + 1
            schedule.append(ScheduledOperation(node.operation, self.resources[resource], step[node], step[node]))
        return schedule
