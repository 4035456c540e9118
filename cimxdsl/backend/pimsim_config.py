"""pimsim-nn's hardware configuration for an artifact directory, written from the chip
(`cimxdsl.device.chip.ChipConfig`) so that

    pimsim DIR DIR/pimsim_config.json --instruction-mode=directory

simulates the program on the chip of the estimate (pimsim-nn: Qi et al., "pimsim-nn: An ISA-based
Simulation Framework for Processing-in-Memory Accelerators", DATE 2024).

`pimsim_config.json` holds pimsim-nn's nested keys (`chip_config.core_config.matrix_config`, ...,
`sim_config`), each the value of the chip's flat key of the same meaning; `sim_mode` 1 simulates
one image (latency), 0 runs `sim_time` ms with every core repeating its program (throughput).
`pimsim_network.json` is its network table, read relative to the configuration's folder: per pair
of switches (the cores, and the global memory as switch `-10`) the latency of one flit of
`bus_width` bytes in ns, `hops × noc_hop_latency_cycle × period` on a mesh `mesh_columns` wide
with the global memory one hop beyond core 0 (the performance model's network), and its energy
(`bus_width × hops × noc_energy_per_byte_hop` pJ).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import numpy as np

from cimxdsl.device.chip import ChipConfig
from cimxdsl.device.latency import flit_latency, memory_hops, mesh_hops

CONFIG_FILE = "pimsim_config.json"
NETWORK_FILE = "pimsim_network.json"
GLOBAL_MEMORY_SWITCH = -10
SimMode = Literal["latency", "throughput"]
SIM_MODES: dict[str, int] = {"throughput": 0, "latency": 1}


def hardware_config(
    chip: ChipConfig, cores: int, mode: SimMode = "latency", sim_time_ms: float = 100.0, verbose: int = 0
) -> dict[str, Any]:
    """pimsim-nn's configuration of `chip` with `cores` cores (the program's, when more than the
    chip's `core_cnt`)."""
    if mode not in SIM_MODES:
        raise ValueError(f"pimsim mode must be one of {', '.join(SIM_MODES)}, got {mode!r}")
    cores = max(cores, chip.core_cnt)
    matrix = {
        "xbar_array_count": chip.xbar_array_count,
        "period": chip.period,
        "pipeline_mode": chip.pipeline_mode,
        "dac_resolution": chip.dac_resolution,
        "dac_latency_cycle": chip.dac_latency_cycle,
        "dac_dynamic_power": chip.dac_dynamic_power,
        "dac_count": chip.dac_count,
        "xbar_size": [chip.xbar_rows, chip.xbar_cols],
        "cell_precision": chip.cell_precision,
        "xbar_latency": chip.xbar_latency,
        "xbar_read_power": chip.xbar_read_power,
        "sample_hold_latency_cycle": chip.sample_hold_latency_cycle,
        "adc_latency_cycle": chip.adc_latency_cycle,
        "adc_static_power": chip.adc_static_power,
        "adc_dynamic_power": chip.adc_dynamic_power,
        "adc_count": chip.adc_count,
        "shift_adder_latency_cycle": chip.shift_adder_latency_cycle,
        "input_buffer_latency_cycle": chip.input_buffer_latency_cycle,
        "output_buffer_latency_cycle": chip.output_buffer_latency_cycle,
    }
    core = {
        "period": chip.period,
        "rob_size": 1,
        "matrix_config": matrix,
        "vector_width": chip.vector_width,
        "vector_latency_cycle": chip.vector_latency_cycle,
        "local_memory_config": memory(
            chip.local_memory_data_width,
            chip.local_memory_read_latency_cycle,
            chip.local_memory_write_latency_cycle,
            chip.period,
        ),
        "global_memory_switch_id": GLOBAL_MEMORY_SWITCH,
    }
    rows = -(-cores // chip.mesh_columns)
    return {
        "chip_config": {
            "core_config": core,
            "global_memory_config": memory(
                chip.global_memory_data_width,
                chip.global_memory_read_latency_cycle,
                chip.global_memory_write_latency_cycle,
                chip.period,
            ),
            "network_config": {
                "bus_topology": "mesh",
                "bus_width": chip.bus_width,
                "layout": [rows, chip.mesh_columns],
                "net_config_file_path": NETWORK_FILE,
            },
            "core_cnt": cores,
            "global_memory_switch_id": GLOBAL_MEMORY_SWITCH,
        },
        "sim_config": {"sim_mode": SIM_MODES[mode], "sim_time": sim_time_ms, "report_verbose_level": verbose},
    }


def memory(data_width: int, read_cycles: int, write_cycles: int, period: float) -> dict[str, Any]:
    return {
        "data_width": data_width,
        "period": period,
        "read_latency_cycle": read_cycles,
        "write_latency_cycle": write_cycles,
    }


def network_table(chip: ChipConfig, cores: int) -> dict[str, dict[str, dict[str, float]]]:
    """Flit latency (ns) and energy (pJ) between every pair of `cores` cores and the global memory."""
    ids = np.arange(max(cores, chip.core_cnt))
    hops = mesh_hops(chip, ids[:, None], ids[None, :])
    to_memory = memory_hops(chip, ids)
    flit_energy = chip.bus_width * chip.noc_energy_per_byte_hop

    def table(per_hop) -> dict[str, dict[str, float]]:
        pairs = per_hop(hops).tolist()
        memory_side = per_hop(to_memory).tolist()
        result = {str(GLOBAL_MEMORY_SWITCH): {str(c): m for c, m in zip(ids.tolist(), memory_side, strict=True)}}
        for c, row in zip(ids.tolist(), pairs, strict=True):
            result[str(c)] = {str(GLOBAL_MEMORY_SWITCH): memory_side[c]}
            result[str(c)].update((str(d), value) for d, value in enumerate(row) if d != c)
        return result

    return {
        "latency": table(lambda h: flit_latency(chip, h).astype(float)),
        "energy": table(lambda h: np.maximum(h, 1) * flit_energy),
    }


def write_pimsim_config(
    directory: str | Path, chip: ChipConfig, cores: int, mode: SimMode = "latency", sim_time_ms: float = 100.0
) -> Path:
    """Write `pimsim_config.json` and its network table into `directory`; the configuration's path."""
    out = Path(directory)
    config = hardware_config(chip, cores, mode, sim_time_ms)
    (out / NETWORK_FILE).write_text(json.dumps(network_table(chip, cores), separators=(",", ":")) + "\n")
    path = out / CONFIG_FILE
    path.write_text(json.dumps(config, indent=1) + "\n")
    return path
