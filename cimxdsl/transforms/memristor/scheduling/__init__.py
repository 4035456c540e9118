"""Scheduling of cim ops onto crossbars: the framework (graph, hooks, `apply_scheduling`, crossbar
preparation, the pass base), one module per strategy, and `residency` (what an op needs on its
crossbar, shared with `cim-to-memristor`).

Adding a strategy: subclass `SchedulingStrategy` in a new module (its `schedule(graph)` returns a
`ScheduledOperation` per node) and add a few-line `CimSchedulePass` subclass to `transforms/memristor/schedule.py`.
"""

from cimxdsl.transforms.memristor.scheduling.alap import AlapScheduler
from cimxdsl.transforms.memristor.scheduling.asap import AsapScheduler
from cimxdsl.transforms.memristor.scheduling.critical_path import (
    CriticalPathScheduler,
    CrossbarCostModel,
    crossbar_work,
    schedule_makespan_ns,
)
from cimxdsl.transforms.memristor.scheduling.framework import (
    CimSchedulePass,
    DependencyGraph,
    DependencyNode,
    PreparedDevice,
    Schedule,
    ScheduledOperation,
    SchedulingHooks,
    SchedulingStrategy,
    apply_scheduling,
    prepare_for_scheduling,
    restore_dominance,
    schedule_device,
)
from cimxdsl.transforms.memristor.scheduling.residency import StoredTile, stored_tile
from cimxdsl.transforms.memristor.scheduling.round_robin import RoundRobinScheduler

__all__ = [
    "AlapScheduler",
    "AsapScheduler",
    "CimSchedulePass",
    "CriticalPathScheduler",
    "CrossbarCostModel",
    "DependencyGraph",
    "DependencyNode",
    "PreparedDevice",
    "RoundRobinScheduler",
    "Schedule",
    "ScheduledOperation",
    "SchedulingHooks",
    "SchedulingStrategy",
    "StoredTile",
    "apply_scheduling",
    "crossbar_work",
    "prepare_for_scheduling",
    "restore_dominance",
    "schedule_device",
    "schedule_makespan_ns",
    "stored_tile",
]
