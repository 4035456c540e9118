"""Where a product of two run-time tensors runs (attention's Q·Kᵀ and P·V), by the device's cost.

`host`: the digital unit computes it exactly (M·K·N MACs). `crossbar`: its right operand is
written into crossbar tiles before the product, then read as any crossbar product. `auto`
(`cheaper_placement`): the crossbar when its energy-delay product (latency × energy) is strictly
below the digital unit's, else the host.

The crossbar estimate: the K×N operand in tiles of `tile_shape`, each written (K·N·J·A cells, K ×
`write_ns_per_row`) and read with M rows; the tiles spread over the device's crossbars, so the
latency is the rounds of `crossbars` tiles times one full tile's write and read.
"""

from __future__ import annotations

from dataclasses import dataclass

from cimxdsl.device.config import DeviceConfig
from cimxdsl.device.metrics import digital_time_ns, energy_pj, mvm_events, write_events, write_time_ns

PLACEMENTS = ("host", "crossbar", "auto")


@dataclass(frozen=True)
class Cost:
    latency_ns: float
    energy_pj: float

    @property
    def energy_delay(self) -> float:
        return self.latency_ns * self.energy_pj


def host_cost(config: DeviceConfig, m: int, k: int, n: int) -> Cost:
    macs = m * k * n
    return Cost(digital_time_ns(config, macs), macs * config.digital_pj_per_mac)


def crossbar_cost(config: DeviceConfig, m: int, k: int, n: int) -> Cost:
    rows, cols = config.tile_shape
    energy, tiles = 0.0, 0
    for tile_k in (min(rows, k - start) for start in range(0, k, rows)):
        for tile_n in (min(cols, n - start) for start in range(0, n, cols)):
            events = write_events(config, tile_k, tile_n) | mvm_events(config, m, tile_k, tile_n)
            energy += sum(energy_pj(config, events).values())
            tiles += 1
    full = mvm_events(config, m, min(rows, k), min(cols, n))["busy_cycles"] * config.cycle_ns
    rounds = -(-tiles // config.crossbars)
    return Cost(rounds * (write_time_ns(config, min(rows, k)) + full), energy)


def cheaper_placement(config: DeviceConfig, m: int, k: int, n: int) -> str:
    """`crossbar` if its energy-delay product is strictly the lower, else `host`."""
    crossbar, host = crossbar_cost(config, m, k, n), host_cost(config, m, k, n)
    return "crossbar" if crossbar.energy_delay < host.energy_delay else "host"


def placement_of(policy: str, config: DeviceConfig, m: int, k: int, n: int) -> str:
    """Where a product of `policy` (`PLACEMENTS`) runs: `host` or `crossbar`."""
    if policy not in PLACEMENTS:
        raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}, got {policy!r}")
    return cheaper_placement(config, m, k, n) if policy == "auto" else policy
