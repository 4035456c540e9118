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
  bytes per access, 8-byte links); it gives no powers (energies 0).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import numbers
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class ChipConfigError(ValueError):
    """A malformed chip configuration (one line naming the key)."""


@dataclass(frozen=True)
class ChipConfig:
    name: str = "custom"
    core_cnt: int = 64
    xbar_array_count: int = 64
    """Crossbars per core."""
    period: float = 1.0
    # matrix unit
    xbar_rows: int = 128
    xbar_cols: int = 128
    cell_precision: int = 2
    pipeline_mode: bool = True
    dac_resolution: int = 1
    dac_count: int = 128
    dac_latency_cycle: int = 1
    input_buffer_latency_cycle: int = 0
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
    noc_hop_latency_cycle: int = 1
    noc_energy_per_byte_hop: float = 0.0

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            check(f.name, getattr(self, f.name), f.type)

    def replace(self, **changes: Any) -> ChipConfig:
        return dataclasses.replace(self, **changes)


FIELDS = {f.name: f.type for f in dataclasses.fields(ChipConfig)}
ZERO_ALLOWED = {"input_buffer_latency_cycle", "noc_hop_latency_cycle"}


def check(key: str, value: Any, kind: Any) -> None:
    def bad(expected: str) -> ChipConfigError:
        return ChipConfigError(f"chip config: '{key}' must be {expected}, got {value!r}")

    if kind == "str":
        if not isinstance(value, str) or not value:
            raise bad("a non-empty string")
    elif kind == "bool":
        if not isinstance(value, bool):
            raise bad("true or false")
    elif kind == "int":
        if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < (key not in ZERO_ALLOWED):
            raise bad("a non-negative integer" if key in ZERO_ALLOWED else "a positive integer")
    elif not isinstance(value, numbers.Real) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
        raise bad("a non-negative number")
    elif key == "period" and value == 0:
        raise bad("a positive number")


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
        xbar_read_power=0.0,
        adc_dynamic_power=0.0,
        adc_static_power=0.0,
        vector_dynamic_power=0.0,
        local_memory_dynamic_power=0.0,
        global_memory_dynamic_power=0.0,
    ),
}


def unknown_key(key: str) -> ChipConfigError:
    close = difflib.get_close_matches(key, list(FIELDS), n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return ChipConfigError(f"chip config: unknown key '{key}'{hint}")


def chip_preset(name: str) -> ChipConfig:
    if name not in PRESETS:
        close = difflib.get_close_matches(name, list(PRESETS), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise ChipConfigError(f"chip: unknown preset '{name}'{hint} (presets: {', '.join(PRESETS)})")
    return PRESETS[name]


def chip_from_dict(data: dict[str, Any]) -> ChipConfig:
    """A chip from flat keys; `preset` names the one it starts from (default `pimcomp`)."""
    data = dict(data)
    base = chip_preset(str(data.pop("preset", "pimcomp")))
    for key in data:
        if key not in FIELDS:
            raise unknown_key(key)
    return base.replace(**data)


def load_chip_config(spec: str | Path | ChipConfig) -> ChipConfig:
    """A chip from a preset name or a `.toml`/`.json` file of flat keys (with an optional `preset`;
    the chip is named after the file unless it says `name`)."""
    if isinstance(spec, ChipConfig):
        return spec
    path = Path(spec)
    if path.suffix not in (".toml", ".json"):
        return chip_preset(str(spec))
    try:
        text = path.read_text()
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, json.JSONDecodeError) as e:
        raise ChipConfigError(f"chip config {path}: {e}") from None
    if not isinstance(data, dict):
        raise ChipConfigError(f"chip config {path}: must be a table of keys")
    return chip_from_dict({"name": path.stem, **data})
