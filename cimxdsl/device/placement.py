"""Where a product of two run-time tensors runs (attention's Q·Kᵀ and P·V), by the device's cost.

`host`: the digital unit computes it exactly (M·K·N MACs). `crossbar`: its right operand is
written into crossbar tiles before the product, then read as any crossbar product. `auto`
(`cheaper_placement`): the crossbar when its energy-delay product (latency × energy) is strictly
below the digital unit's, else the host.

Costs are of a whole batch of B products (attention's heads): the host does B·M·K·N MACs in a row;
for the crossbars each K×N operand is cut in tiles of `tile_shape`, each written (K·N·J·A cells, K ×
`write_ns_per_row`) and read with M rows, the energy of all of them counted, and the tiles of the
batch spread over the device's crossbars, so the latency is the rounds of `crossbars` tiles times
one full tile's write and read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from cimxdsl.device.config import DeviceConfig
from cimxdsl.device.metrics import digital_time_ns, energy_pj, mvm_events, write_events, write_time_ns

Placement = Literal["host", "crossbar", "auto"]
PLACEMENTS: tuple[str, ...] = get_args(Placement)


@dataclass(frozen=True)
class Cost:
    latency_ns: float
    energy_pj: float

    @property
    def energy_delay(self) -> float:
        return self.latency_ns * self.energy_pj


def host_cost(config: DeviceConfig, m: int, k: int, n: int, batch: int = 1) -> Cost:
    macs = batch * m * k * n
    return Cost(digital_time_ns(config, macs), macs * config.digital_pj_per_mac)


def crossbar_cost(config: DeviceConfig, m: int, k: int, n: int, batch: int = 1) -> Cost:
    rows, cols = config.tile_shape
    energy, tiles = 0.0, 0
    for tile_k in (min(rows, k - start) for start in range(0, k, rows)):
        for tile_n in (min(cols, n - start) for start in range(0, n, cols)):
            events = write_events(config, tile_k, tile_n) | mvm_events(config, m, tile_k, tile_n)
            energy += batch * sum(energy_pj(config, events).values())
            tiles += batch
    full = mvm_events(config, m, min(rows, k), min(cols, n))["busy_cycles"] * config.cycle_ns
    rounds = -(-tiles // config.crossbars)
    return Cost(rounds * (write_time_ns(config, min(rows, k)) + full), energy)


def cheaper_placement(config: DeviceConfig, m: int, k: int, n: int, batch: int = 1) -> str:
    """`crossbar` if its energy-delay product is strictly the lower, else `host`."""
    crossbar, host = crossbar_cost(config, m, k, n, batch), host_cost(config, m, k, n, batch)
    return "crossbar" if crossbar.energy_delay < host.energy_delay else "host"


def placement_of(policy: str, config: DeviceConfig, m: int, k: int, n: int, batch: int = 1) -> str:
    """Where a batch of products of `policy` (`PLACEMENTS`) runs: `host` or `crossbar`."""
    if policy not in PLACEMENTS:
        raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}, got {policy!r}")
    return cheaper_placement(config, m, k, n, batch) if policy == "auto" else policy
