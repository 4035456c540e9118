"""ASAP: Cinnamon's `AsapScheduler` (Reißmann 2024, §3.4; Cinnamon's `Utils/Scheduling/Schedulers/Asap.h`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cimxdsl.transforms.memristor.scheduling.framework import (
    DependencyGraph,
    DependencyNode,
    R,
    Schedule,
    ScheduledOperation,
    SchedulingStrategy,
)


def first_fit_steps(
    graph: DependencyGraph,
    resources: Sequence[R],
    waits_for: Callable[[DependencyNode], Sequence[DependencyNode]],
    step: int,
) -> Schedule[R]:
    """Cinnamon's stepping: in each step (0, then 0 + `step`, ...), walk the graph in list order; a
    node whose `waits_for` nodes are all scheduled in earlier steps takes the next free resource of
    this step (first fit, from resource 0 again in every step) until none is left."""
    schedule: Schedule[R] = []
    scheduled = set[DependencyNode]()
    time = 0
    while len(scheduled) < len(graph):
        ready = [node for node in graph if node not in scheduled and all(d in scheduled for d in waits_for(node))]
        this_step = ready[: len(resources)]
        for resource, node in zip(resources, this_step):
            schedule.append(ScheduledOperation(node.operation, resource, time, time))
        scheduled.update(this_step)
        time += step
    return schedule


class AsapScheduler(SchedulingStrategy[R]):
    """Schedules a node as soon as its dependencies have run."""

    def schedule(self, graph: DependencyGraph) -> Schedule[R]:
        return first_fit_steps(graph, self.resources, lambda node: node.dependencies, 1)
