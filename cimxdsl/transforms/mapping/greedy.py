"""The greedy balancer: every compute gets as many replicas as it takes to bring its work per
replica down to a common stage time, the smallest stage time whose replicas the chip holds."""

from __future__ import annotations

import math

from cimxdsl.transforms.mapping.problem import Mapping, MappingProblem, place, unreplicated


def replicas_for(problem: MappingProblem, stage: float) -> list[int]:
    """The fewest replicas that bring every compute's work per replica to `stage` or below."""
    return [
        min(most, max(1, math.ceil(cost / stage))) if stage > 0 else most
        for cost, most in zip(problem.costs, problem.max_replicas, strict=True)
    ]


def greedy_mapping(problem: MappingProblem) -> Mapping:
    """Binary search over the stage time for the smallest one whose replicas fit the crossbar
    budget, then place them (largest first onto the least loaded core); if that placement does
    not fit, the next larger stage time."""
    best = unreplicated(problem)
    stages = sorted({cost / r for cost, most in zip(problem.costs, problem.max_replicas) for r in range(1, most + 1)})
    low, high = 0, len(stages) - 1
    while low < high:  # the smallest stage time whose replicas fit the budget
        middle = (low + high) // 2
        if problem.fits(replicas_for(problem, stages[middle])):
            high = middle
        else:
            low = middle + 1
    for stage in stages[low:]:
        mapping = place(problem, replicas_for(problem, stage))
        if mapping is not None:
            return mapping if mapping.bottleneck < best.bottleneck else best
    return best
