"""Mapping strategies of the PIM flow (pluggable, as the memristor flow's schedulers): how many
replicas each `spat.compute` gets and on which cores they run. `Strategy` names them."""

from typing import Literal

from cimxdsl.transforms.pim.mapping.genetic import genetic_mapping
from cimxdsl.transforms.pim.mapping.greedy import greedy_mapping
from cimxdsl.transforms.pim.mapping.problem import Mapping, MappingProblem, compute_cost, place, unreplicated

Strategy = Literal["none", "greedy", "ga"]

__all__ = [
    "Mapping",
    "MappingProblem",
    "Strategy",
    "compute_cost",
    "genetic_mapping",
    "greedy_mapping",
    "place",
    "unreplicated",
]
