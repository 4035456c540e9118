"""The greedy balancer: every compute gets as many replicas as it takes to bring its work per
replica down to a common stage time, the smallest stage time whose replicas the chip holds."""

from __future__ import annotations

import math

from cimxdsl.transforms.pim.mapping.problem import Mapping, MappingProblem, place, unreplicated


def replicas_for(problem: MappingProblem, stage: float) -> list[int]:
    """The fewest replicas that bring every compute's work per replica (its busiest band, halo and
    uneven bands included) to `stage` or below."""
    replicas = []
    for i, (cost, most) in enumerate(zip(problem.costs, problem.max_replicas, strict=True)):
        r = min(most, max(1, math.ceil(cost / stage))) if stage > 0 else most
        while r < most and problem.cost(i, r) > stage:
            r += 1
        replicas.append(r)
    return replicas


def greedy_mapping(problem: MappingProblem) -> Mapping:
    """Binary search over the stage time for the smallest one whose replicas fit the crossbar
    budget, then place them (in program order, `place`) for it and every larger
    stage time below the best busiest core so far (fewer replicas may pack onto the cores
    better); the mapping whose busiest core has the least work."""
    best = unreplicated(problem)
    stages = sorted({problem.cost(i, r) for i, most in enumerate(problem.max_replicas) for r in range(1, most + 1)})
    low, high = 0, len(stages) - 1
    while low < high:  # the smallest stage time whose replicas fit the budget
        middle = (low + high) // 2
        if problem.fits(replicas_for(problem, stages[middle])):
            high = middle
        else:
            low = middle + 1
    for stage in stages[low:]:  # placed, the busiest core may exceed the stage time: try larger ones
        if stage >= best.bottleneck:
            break
        mapping = place(problem, replicas_for(problem, stage))
        if mapping is not None and mapping.bottleneck < best.bottleneck:
            best = mapping
    return best
