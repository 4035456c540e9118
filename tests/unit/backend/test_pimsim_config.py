"""pimsim-nn's hardware configuration written beside the PIM artifacts: pimsim-nn's keys, each
holding the chip's value (checked against the `ChipConfig`'s fields, not against the writer)."""

import json

import pytest

import cimxdsl
from cimxdsl.api import CompileError
from cimxdsl.backend.pimsim_config import hardware_config, network_table
from cimxdsl.device.chip import chip_preset
from tests.unit.tools.test_compile_pim import DIGITS

# pimsim-nn's key (path in its configuration) -> the chip's flat key
MATRIX = {
    "xbar_array_count": "xbar_array_count",
    "pipeline_mode": "pipeline_mode",
    "dac_resolution": "dac_resolution",
    "dac_count": "dac_count",
    "dac_latency_cycle": "dac_latency_cycle",
    "cell_precision": "cell_precision",
    "xbar_latency": "xbar_latency",
    "sample_hold_latency_cycle": "sample_hold_latency_cycle",
    "adc_count": "adc_count",
    "adc_latency_cycle": "adc_latency_cycle",
    "shift_adder_latency_cycle": "shift_adder_latency_cycle",
    "output_buffer_latency_cycle": "output_buffer_latency_cycle",
    "input_buffer_latency_cycle": "input_buffer_latency_cycle",
    "period": "period",
}


@pytest.mark.parametrize("preset", ["pimcomp", "pimsim-nn"])
def test_the_config_holds_the_chip(preset):
    chip = chip_preset(preset)
    config = hardware_config(chip, cores=3, mode="throughput", sim_time_ms=7.5)
    core = config["chip_config"]["core_config"]
    matrix = core["matrix_config"]
    for key, field in MATRIX.items():
        assert matrix[key] == getattr(chip, field), key
    assert matrix["xbar_size"] == [chip.xbar_rows, chip.xbar_cols]
    assert (core["vector_width"], core["vector_latency_cycle"]) == (chip.vector_width, chip.vector_latency_cycle)
    assert core["rob_size"] == 1  # the performance model's in-order core
    local, memory = core["local_memory_config"], config["chip_config"]["global_memory_config"]
    assert (local["data_width"], local["read_latency_cycle"], local["write_latency_cycle"]) == (
        chip.local_memory_data_width,
        chip.local_memory_read_latency_cycle,
        chip.local_memory_write_latency_cycle,
    )
    assert (memory["data_width"], memory["read_latency_cycle"], memory["write_latency_cycle"]) == (
        chip.global_memory_data_width,
        chip.global_memory_read_latency_cycle,
        chip.global_memory_write_latency_cycle,
    )
    network = config["chip_config"]["network_config"]
    assert network["bus_width"] == chip.bus_width and network["layout"] == [8, 8]  # 64 cores, 8 columns
    assert config["chip_config"]["core_cnt"] == chip.core_cnt  # the program's 3 cores run on the chip's
    assert config["sim_config"] == {"sim_mode": 0, "sim_time": 7.5, "report_verbose_level": 0}
    assert hardware_config(chip, cores=3)["sim_config"]["sim_mode"] == 1


def test_the_network_table_counts_mesh_hops():
    chip = chip_preset("pimcomp").replace(noc_hop_latency_cycle=3, period=2.0, noc_energy_per_byte_hop=0.5)
    table = network_table(chip, cores=4)
    latency, energy = table["latency"], table["energy"]
    per_hop = 3 * 2.0
    assert latency["0"]["9"] == 2 * per_hop  # core 9: row 1, column 1 of the 8-wide mesh
    assert latency["63"]["0"] == 14 * per_hop
    assert latency["1"]["-10"] == latency["-10"]["1"] == 2 * per_hop  # memory: one hop beyond core 0
    assert "0" not in latency["0"] and len(latency) == 65  # the chip's 64 cores and the memory
    assert energy["0"]["9"] == 2 * chip.bus_width * 0.5


def test_compile_writes_the_config_beside_the_artifacts(tmp_path):
    out = tmp_path / "artifacts"
    cimxdsl.compile(DIGITS, target="pim", chip="pimsim-nn", out_dir=out, pimsim_mode="throughput", pimsim_time=3.0)
    config = json.loads((out / "pimsim_config.json").read_text())
    network = config["chip_config"]["network_config"]
    assert json.loads((out / network["net_config_file_path"]).read_text())["latency"]["0"]["1"] > 0
    assert config["chip_config"]["core_config"]["matrix_config"]["cell_precision"] == 8  # pimsim-nn's chip
    assert config["sim_config"]["sim_mode"] == 0 and config["sim_config"]["sim_time"] == 3.0
    cores = json.loads((out / "config.json").read_text())["core_cnt"]
    assert cores <= config["chip_config"]["core_cnt"]


def test_a_bad_pimsim_mode_is_refused():
    with pytest.raises(CompileError, match="pimsim_mode must be one of throughput, latency, got 'fast'"):
        cimxdsl.compile(DIGITS, target="pim", pimsim_mode="fast")
