"""ASAP: Cinnamon's `AsapScheduler` (notes/cinnamon.md §5)."""

from __future__ import annotations

from cimxdsl.transforms.scheduling.framework import (
    DependencyGraph,
    DependencyNode,
    R,
    Schedule,
    ScheduledOperation,
    SchedulingStrategy,
)


class AsapScheduler(SchedulingStrategy[R]):
    """Step by step from 0, walk the graph in list order; a node whose dependencies are all scheduled
    in earlier steps takes the next free resource of this step (first fit, from resource 0 again in
    every step) until none is left; the rest waits for a later step."""

    def schedule(self, graph: DependencyGraph) -> Schedule[R]:
        schedule: Schedule[R] = []
        scheduled = set[DependencyNode]()
        time = 0
        while len(scheduled) < len(graph):
            this_step = [
                node for node in graph if node not in scheduled and all(d in scheduled for d in node.dependencies)
            ][: len(self.resources)]
            for resource, node in zip(self.resources, this_step):
                schedule.append(ScheduledOperation(node.operation, resource, time, time))
            scheduled.update(this_step)
            time += 1
        return schedule
