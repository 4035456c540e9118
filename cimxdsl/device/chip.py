"""The PIM chip the `pim` target's performance model estimates: cores, crossbars and the latency
and energy of each unit, with pimsim-nn's parameter names (its `latency_config.json`, flattened).

Units: `period` in ns (one cycle of every unit); `*_latency_cycle` in cycles; `xbar_latency` in ns
(one read of the whole crossbar); `*_data_width` and `bus_width` in bytes moved per access / per
cycle; powers in mW (energy in pJ = mW × ns); `noc_energy_per_byte_hop` in pJ.

Presets:

* `pimcomp`: the setting PIMCOMP-NN's results on pimsim-nn use (X. Sun et al., "PIMCOMP: A
  Universal Compilation Framework for Crossbar-based PIM DNN Accelerators", DAC 2023; its
  repository's `config.json`): 64 cores × 64 crossbars of 128×128, 2-bit cells, 1-bit DACs (128),
  16 ADCs of 20 cycles, crossbar read 7 ns, 32-wide vector unit of 4 cycles, local memory 64 B
  per access (read 20 / write 30 cycles), global memory 32 B per access (read 40 / write 50),
  32-byte NoC links, 1 GHz; the 8×8 mesh of pimsim-nn's example configuration (Qi et al., pimsim-nn,
  `example/config/latency_config.json`) for its 64 cores. Powers: crossbar read 22.24 mW, ADC
  1.135 mW dynamic / 0.322 mW static (PIMCOMP's `config.json`); vector unit 22.80 mW, local memory
  18 mW, global memory 257.72 mW (PIMCOMP DAC 2023, Table I); the NoC's energy is not given (0).
* `pimsim-nn`: pimsim-nn's example `latency_config.json` (64 cores × 64 crossbars, 8-bit cells,
  crossbar read 30 ns, 2 ADCs of 10 cycles, 16-wide vector unit, 1-cycle memories with 64 / 16
  bytes per access, 8-byte links; its mesh's flit latencies, 7 ns over one hop to 42 ns over 14,
  as 3 ns per hop); it gives no powers (energies 0).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cimxdsl.device.settings import Schema, is_file_spec, setting


class ChipConfigError(ValueError):
    """A malformed chip configuration (one line naming the key)."""


@dataclass(frozen=True)
class ChipConfig:
    name: str = "custom"
    core_cnt: int = 64
    xbar_array_count: int = 64
    """Crossbars per core."""
    period: float = setting(1.0, positive=True)
    # matrix unit
    xbar_rows: int = 128
    xbar_cols: int = 128
    cell_precision: int = 2
    pipeline_mode: bool = True
    dac_resolution: int = 1
    dac_count: int = 128
    dac_latency_cycle: int = 1
    input_buffer_latency_cycle: int = setting(0, low=0)
    xbar_latency: float = 7.0
    sample_hold_latency_cycle: int = 1
    adc_count: int = 16
    adc_latency_cycle: int = 20
    shift_adder_latency_cycle: int = 1
    output_buffer_latency_cycle: int = 1
    xbar_read_power: float = 22.24
    dac_dynamic_power: float = 0.0
    adc_dynamic_power: float = 1.135
    adc_static_power: float = 0.322
    # scalar and vector units
    scalar_latency_cycle: int = 1
    vector_width: int = 32
    vector_latency_cycle: int = 4
    vector_dynamic_power: float = 22.80
    # memories
    local_memory_data_width: int = 64
    local_memory_read_latency_cycle: int = 20
    local_memory_write_latency_cycle: int = 30
    local_memory_dynamic_power: float = 18.0
    global_memory_data_width: int = 32
    global_memory_read_latency_cycle: int = 40
    global_memory_write_latency_cycle: int = 50
    global_memory_dynamic_power: float = 257.72
    # network: a mesh `mesh_columns` wide, the global memory attached next to core 0
    bus_width: int = 32
    mesh_columns: int = 8
    noc_hop_latency_cycle: int = setting(1, low=0)
    noc_energy_per_byte_hop: float = 0.0

    def __post_init__(self) -> None:
        CHIP.validate(self)

    def replace(self, **changes: Any) -> ChipConfig:
        return dataclasses.replace(self, **changes)


CHIP = Schema(
    ChipConfig,
    ChipConfigError,
    label="chip config: ",
    preset_message="chip: unknown preset '{name}'{hint} (presets: {presets})",
)
"""The keys of a chip configuration and their checks (the presets are added below)."""


PRESETS: dict[str, ChipConfig] = {
    "pimcomp": ChipConfig(name="pimcomp"),
    "pimsim-nn": ChipConfig(
        name="pimsim-nn",
        cell_precision=8,
        xbar_latency=30.0,
        adc_count=2,
        adc_latency_cycle=10,
        vector_width=16,
        local_memory_read_latency_cycle=1,
        local_memory_write_latency_cycle=1,
        global_memory_data_width=16,
        global_memory_read_latency_cycle=1,
        global_memory_write_latency_cycle=1,
        bus_width=8,
        noc_hop_latency_cycle=3,
        xbar_read_power=0.0,
        adc_dynamic_power=0.0,
        adc_static_power=0.0,
        vector_dynamic_power=0.0,
        local_memory_dynamic_power=0.0,
        global_memory_dynamic_power=0.0,
    ),
}


CHIP.presets.update(PRESETS)


def chip_preset(name: str) -> ChipConfig:
    return CHIP.preset(name)


def chip_from_dict(data: dict[str, Any]) -> ChipConfig:
    """A chip from flat keys; `preset` names the one it starts from (default `pimcomp`)."""
    data = dict(CHIP.table_of(data))
    base = chip_preset(str(data.pop("preset", "pimcomp")))
    for key in data:
        CHIP.check_known(key)
    return base.replace(**data)


def load_chip_config(spec: str | Path | ChipConfig) -> ChipConfig:
    """A chip from a preset name or a `.toml`/`.json` file of flat keys (with an optional `preset`;
    the chip is named after the file unless it says `name`)."""
    if isinstance(spec, ChipConfig):
        return spec
    if not is_file_spec(spec):
        return chip_preset(str(spec))
    return chip_from_dict({"name": Path(spec).stem, **CHIP.read(spec)})
