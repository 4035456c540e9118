"""A genetic search over the replica counts (as PIMCOMP's mapping search), seeded with the greedy
mapping, within a time budget."""

from __future__ import annotations

import time

import numpy as np

from cimxdsl.transforms.pim.mapping.greedy import greedy_mapping
from cimxdsl.transforms.pim.mapping.problem import Mapping, MappingProblem, place

POPULATION = 16
GENERATIONS = 60


def fitness(problem: MappingProblem, replicas: list[int]) -> tuple[float, Mapping | None]:
    mapping = place(problem, replicas)
    return (mapping.bottleneck if mapping is not None else float("inf")), mapping


def mutate(problem: MappingProblem, genes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A few replica counts moved up or down by one (within 1 and each compute's maximum)."""
    child = genes.copy()
    for i in rng.choice(len(genes), size=max(1, len(genes) // 10), replace=False):
        child[i] = min(max(child[i] + rng.choice([-1, 1]), 1), problem.max_replicas[i])
    return child


def genetic_mapping(problem: MappingProblem, budget_s: float, seed: int = 0) -> Mapping:
    """Tournament selection, uniform crossover, mutation and elitism for `GENERATIONS` generations
    of `POPULATION`; when `budget_s` seconds run out first, the best mapping so far, with a note."""
    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    best = greedy_mapping(problem)
    seed_genes = np.array(best.replicas)
    population = [seed_genes] + [mutate(problem, seed_genes, rng) for _ in range(POPULATION - 1)]
    scores = [fitness(problem, list(g))[0] for g in population]
    for generation in range(GENERATIONS):
        if time.perf_counter() - start > budget_s:
            best.notes.append(
                f"mapping search stopped at its time budget ({budget_s:g} s) after {generation} of {GENERATIONS} "
                "generations: best mapping so far"
            )
            return best
        children = []
        for _ in range(POPULATION):
            a, b = (min(rng.choice(POPULATION, 2, replace=False), key=lambda k: scores[k]) for _ in range(2))
            mask = rng.random(len(seed_genes)) < 0.5
            children.append(mutate(problem, np.where(mask, population[a], population[b]), rng))
        child_scores = []
        for child in children:
            score, mapping = fitness(problem, list(child))
            child_scores.append(score)
            if mapping is not None and score < best.bottleneck:
                best = mapping
        ranked = sorted(zip(scores + child_scores, range(2 * POPULATION)), key=lambda item: item[0])[:POPULATION]
        pool = population + children
        population = [pool[k] for _, k in ranked]
        scores = [score for score, _ in ranked]
    return best
