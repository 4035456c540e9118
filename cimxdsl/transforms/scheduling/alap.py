"""ALAP: Cinnamon's `AlapScheduler` (notes/cinnamon.md §5), the mirror image of ASAP."""

from __future__ import annotations

from cimxdsl.transforms.scheduling.framework import (
    DependencyGraph,
    DependencyNode,
    R,
    Schedule,
    ScheduledOperation,
    SchedulingStrategy,
)


class AlapScheduler(SchedulingStrategy[R]):
    """Step by step from the last one backwards, walk the graph in list order; a node whose
    dependents are all scheduled in later steps takes the next free resource of this step (first
    fit, from resource 0 again in every step). Steps are then shifted to start at 0 (Cinnamon's start
    at 2; only the order matters)."""

    def schedule(self, graph: DependencyGraph) -> Schedule[R]:
        schedule: Schedule[R] = []
        scheduled = set[DependencyNode]()
        time = 0
        while len(scheduled) < len(graph):
            this_step = [
                node for node in graph if node not in scheduled and all(d in scheduled for d in node.dependents)
            ][: len(self.resources)]
            for resource, node in zip(self.resources, this_step):
                schedule.append(ScheduledOperation(node.operation, resource, time, time))
            scheduled.update(this_step)
            time -= 1
        first = time + 1
        for entry in schedule:
            entry.dispatch_time -= first
            entry.barrier_time -= first
        return schedule
