"""Event counts, energy and the per-crossbar metrics of a device.

Costs of one operation on a logical crossbar (S input slices, A physical arrays, J cells per weight):

- write of a K×N tile: K·N·J·A cells; K × write_ns_per_row (the arrays of a pair in parallel);
- MVM of B rows on a K×N tile (S by `input_encoding`, `DeviceConfig.input_slices`; sign-magnitude
  rows with a negative entry take 2·S): S·B input slices, S·B·A array reads, S·B·A·K DAC row activations and
  S·B·A·N·J ADC conversions (only the columns the tile uses); the pipeline is busy for
  pipeline_fill_cycles + S·B - 1 cycles (0 for B = 0);
- a product of M×K by K×N on the digital unit: M·K·N MACs, M·K·N / digital_macs_per_ns ns.

Energy per component (pJ) = events × the config's per-event energy (see `config.py`).
"""

from __future__ import annotations

import numpy as np

from cimxdsl.device.config import DeviceConfig

COUNTERS = (
    "writes",
    "cells_written",
    "mvms",
    "input_slices",
    "array_reads",
    "dac_activations",
    "adc_conversions",
    "busy_cycles",
    "digital_macs",
)
COMPONENTS = ("crossbar", "dac", "adc", "sample_hold", "shift_add", "write", "digital")


def write_events(config: DeviceConfig, k: int, n: int) -> dict[str, int]:
    """Counters for writing a k×n weight tile (and its k reference cells, with `reference`)."""
    reference = k if config.encoding == "reference" else 0
    return {"writes": 1, "cells_written": k * n * config.cells_per_weight * config.arrays_per_crossbar + reference}


def write_time_ns(config: DeviceConfig, k: int) -> float:
    return k * config.write_ns_per_row


def mvm_events(config: DeviceConfig, batch: int, k: int, n: int, negative_rows: int | None = None) -> dict[str, int]:
    """Counters for one MVM of `batch` input rows on a k×n tile, `negative_rows` of them with a
    negative entry (None: all; only `sign_magnitude` inputs send those in a second pass)."""
    slices = config.input_slices * batch
    if config.input_encoding == "sign_magnitude":
        slices += config.input_slices * (batch if negative_rows is None else negative_rows)
    reads = slices * config.arrays_per_crossbar
    return {
        "mvms": 1,
        "input_slices": slices,
        "array_reads": reads,
        "dac_activations": reads * k,
        "adc_conversions": (slices if config.analog_subtraction else reads) * n * config.cells_per_weight,
        "busy_cycles": config.pipeline_fill_cycles + slices - 1 if batch else 0,
    }


def digital_events(m: int, k: int, n: int) -> dict[str, int]:
    """Counters for an M×K by K×N product on the digital unit."""
    return {"digital_macs": m * k * n}


def digital_time_ns(config: DeviceConfig, macs: int) -> float:
    return macs / config.digital_macs_per_ns


def energy_pj(config: DeviceConfig, events: dict[str, int]) -> dict[str, float]:
    """Energy by component of the given event counts."""
    conversions = events.get("adc_conversions", 0)
    reads = events.get("array_reads", 0)
    return {
        "crossbar": reads * config.crossbar_read_pj,
        "dac": events.get("dac_activations", 0) * config.dac_pj,
        "adc": conversions * config.adc_pj,
        "sample_hold": conversions * config.sample_hold_pj,
        "shift_add": reads * config.shift_add_pj,
        "write": events.get("cells_written", 0) * config.write_pj_per_cell,
        "digital": events.get("digital_macs", 0) * config.digital_pj_per_mac,
    }


class Metrics:
    """Counters, busy time and energy per crossbar (NumPy arrays, one row per crossbar, and a last
    row, `DIGITAL`, for the digital unit). Operations are recorded as rows of a table of costs
    (`cost`: the events and energy of one kind of operation) and summed into the arrays in one
    vectorised update, in the order they were recorded, when the metrics are read."""

    DIGITAL = -1

    def __init__(self, crossbars: int):
        self.counts = np.zeros((crossbars + 1, len(COUNTERS)), np.int64)
        self.energy = np.zeros((crossbars + 1, len(COMPONENTS)))
        self.busy_ns = np.zeros(crossbars + 1)
        self._costs: list[tuple[list[int], list[float]]] = []
        self._table: tuple[np.ndarray, np.ndarray] | None = None
        self._pending: tuple[list[int], list[int], list[float]] = ([], [], [])

    def cost(self, events: dict[str, int], energy: dict[str, float]) -> int:
        """A row of the table of costs for operations of these events and energy."""
        self._costs.append(([events.get(key, 0) for key in COUNTERS], [energy[c] for c in COMPONENTS]))
        self._table = None
        return len(self._costs) - 1

    def add(self, xbar: int, cost: int, busy_ns: float) -> None:
        """Record an operation of `cost` (a `cost` row) on `xbar`, busy for `busy_ns`."""
        xbars, costs, busy = self._pending
        xbars.append(xbar)
        costs.append(cost)
        busy.append(busy_ns)

    def add_many(self, xbars: list[int], costs: list[int], busy_ns: list[float]) -> None:
        """Record operations as `add` does one at a time, in their order."""
        pending = self._pending
        pending[0].extend(xbars)
        pending[1].extend(costs)
        pending[2].extend(busy_ns)

    def _flush(self) -> None:
        xbars, costs, busy = self._pending
        if not xbars:
            return
        if self._table is None:
            self._table = (
                np.array([c for c, _ in self._costs], np.int64),
                np.array([e for _, e in self._costs], np.float64),
            )
        rows, kinds = np.array(xbars), np.array(costs)
        np.add.at(self.counts, rows, self._table[0][kinds])  # (unbuffered: in the order recorded)
        np.add.at(self.energy, rows, self._table[1][kinds])
        np.add.at(self.busy_ns, rows, np.array(busy))
        self._pending = ([], [], [])

    def reset(self) -> None:
        self._pending = ([], [], [])
        self.counts[:] = 0
        self.energy[:] = 0
        self.busy_ns[:] = 0

    def used(self) -> list[int]:
        """Crossbars with at least one write or MVM."""
        self._flush()
        return [int(i) for i in np.flatnonzero(self.counts[: self.DIGITAL].any(axis=1))]

    def crossbar(self, xbar: int) -> dict:
        self._flush()
        return _summary(self.counts[xbar], self.energy[xbar], self.busy_ns[xbar])

    def total(self) -> dict:
        self._flush()
        return _summary(self.counts.sum(axis=0), self.energy.sum(axis=0), self.busy_ns.sum())


def _summary(counts: np.ndarray, energy: np.ndarray, busy_ns: float) -> dict:
    summary: dict = {key: int(v) for key, v in zip(COUNTERS, counts, strict=True)}
    summary["busy_ns"] = float(busy_ns)
    parts = {c: float(e) for c, e in zip(COMPONENTS, energy, strict=True)}
    summary["energy_pj"] = {**parts, "total": float(sum(parts.values()))}
    return summary
