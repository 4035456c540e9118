"""ALAP: Cinnamon's `AlapScheduler` (Reißmann 2024, §3.4; Cinnamon's `Utils/Scheduling/Schedulers/Alap.h`), the mirror image of ASAP."""

from __future__ import annotations

from cimxdsl.transforms.memristor.scheduling.asap import first_fit_steps
from cimxdsl.transforms.memristor.scheduling.framework import DependencyGraph, R, Schedule, SchedulingStrategy


class AlapScheduler(SchedulingStrategy[R]):
    """Schedules a node as late as its dependents allow: steps count down from the last one and are
    then shifted to start at 0 (Cinnamon's start at 2; only the order matters)."""

    def schedule(self, graph: DependencyGraph) -> Schedule[R]:
        schedule = first_fit_steps(graph, self.resources, lambda node: node.dependents, -1)
        first = min((entry.dispatch_time for entry in schedule), default=0)
        for entry in schedule:
            entry.dispatch_time -= first
            entry.barrier_time -= first
        return schedule
