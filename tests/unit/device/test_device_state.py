"""The stateful Device: the seeds' benchmark, energy, timeline, metrics and errors."""

import json

import numpy as np
import pytest

from cimxdsl.device import COMPONENTS, Device, DeviceConfig, preset


def cinnamon_benchmark():
    """Reißmann 2024, §6.3: a 40×128 by 128×64 product of 4-bit unsigned values on one crossbar."""
    rng = np.random.default_rng(0)
    x, w = rng.integers(0, 16, (40, 128)), rng.integers(0, 16, (128, 64))
    dev = Device(preset("cinnamon"))
    dev.write(0, w)
    return dev, dev.mvm(0, x), x @ w


def test_seeds_benchmark_cells_cycles_and_result():
    dev, result, expected = cinnamon_benchmark()
    np.testing.assert_array_equal(result, expected)
    total = dev.report()["total"]
    # 128 rows × 64 weights × 2 cells (4 bits in 2-bit cells) × 2 arrays (differential)
    assert total["cells_written"] == 128 * 64 * 2 * 2 == 32768
    # 6 fill cycles, then one per further input slice: 40 rows × 2 slices (4 bits, 2-bit DACs)
    assert total["busy_cycles"] == 6 + 40 * 2 - 1 == 85
    assert total["input_slices"] == 80
    # every input slice reads both arrays of the pair: 40 rows × 2 slices × 2 arrays (the preset's
    # crossbar_read_pj is §6.3's "about 1750 pJ" spread over these reads, so the energy itself is
    # not evidence: the counts are)
    assert total["array_reads"] == 40 * 2 * 2 == 160
    assert total["dac_activations"] == 160 * 128
    assert total["adc_conversions"] == 160 * 64 * 2  # × the 2 cells of each of the 64 weights
    assert total["energy_pj"]["crossbar"] == 160 * dev.config.crossbar_read_pj


def test_seeds_benchmark_latency_is_write_then_85_cycles():
    dev, _, _ = cinnamon_benchmark()
    config = dev.config
    assert dev.sync() == pytest.approx(128 * config.write_ns_per_row + 85 * config.cycle_ns)
    assert dev.report()["latency_ns"] == dev.latency_ns == dev.now_ns


def test_isaac_array_cycle_energy():
    # ISAAC's component table (Shafiee et al., ISCA 2016, Table 6): one 128-row array read with 1-bit inputs = crossbar 30 + 128 DACs 50 + ADC 200
    # (128 conversions) + shift-and-add 5 = 285 pJ, the ADC about 70 %.
    config = preset("isaac").replace(input_bits=1)
    rng = np.random.default_rng(1)
    k, n = config.tile_shape
    assert (k, n * config.cells_per_weight) == (128, 128)
    dev = Device(config)
    dev.write(0, rng.integers(-(2**15), 2**15, (k, n)))
    dev.reset_metrics()
    dev.mvm(0, rng.integers(0, 2, k))
    energy = dev.report()["total"]["energy_pj"]
    assert energy["total"] == pytest.approx(285, rel=0.01)
    for part, value in {"crossbar": 30, "dac": 50, "adc": 200, "shift_add": 5}.items():
        assert energy[part] == pytest.approx(value, rel=0.01)
    assert energy["adc"] / energy["total"] == pytest.approx(0.70, abs=0.01)
    assert dev.report()["total"]["busy_cycles"] == 1


def test_energy_counts_scale_with_encoding():
    # The differential pair reads two arrays: twice the events of the offset encoding.
    rng = np.random.default_rng(2)
    w, x = rng.integers(0, 16, (100, 30)), rng.integers(0, 16, (7, 100))
    reports = {}
    for encoding in ("differential", "offset"):
        dev = Device(preset("cinnamon").replace(encoding=encoding))
        dev.write(0, w)
        np.testing.assert_array_equal(dev.mvm(0, x), x @ w)
        reports[encoding] = dev.report()["total"]
    diff, offs = reports["differential"], reports["offset"]
    assert offs["array_reads"] == 7 * 2  # rows × input slices
    assert offs["dac_activations"] == 7 * 2 * 100
    assert offs["adc_conversions"] == 7 * 2 * 30 * 2  # × columns used (2 cells per weight)
    for key in ("cells_written", "array_reads", "dac_activations", "adc_conversions"):
        assert diff[key] == 2 * offs[key]
    assert diff["energy_pj"]["total"] == pytest.approx(2 * offs["energy_pj"]["total"])


# ---- timeline -----------------------------------------------------------------------------------
TIMED = DeviceConfig(
    weight_bits=4,
    input_bits=4,
    cell_bits=2,
    dac_bits=2,
    crossbars=4,
    cycle_ns=2.0,
    pipeline_fill_cycles=6,
    write_ns_per_row=10.0,
)


def mvm_ns(rows):
    return (6 + 2 * rows - 1) * 2.0


def test_crossbars_run_in_parallel_and_one_crossbar_serialises():
    w, x = np.ones((16, 8), int), np.ones((5, 16), int)
    dev = Device(TIMED)
    dev.write(0, w)
    dev.write(1, w)
    dev.mvm(0, x)
    dev.mvm(1, x)
    assert dev.latency_ns == 16 * 10 + mvm_ns(5)  # both crossbars overlap
    dev.mvm(0, x)
    assert dev.busy_until(0) == 16 * 10 + 2 * mvm_ns(5)  # the second MVM waits for the first
    assert dev.busy_until(1) == 16 * 10 + mvm_ns(5)
    assert dev.latency_ns == dev.busy_until(0)


def test_barrier_waits_for_its_crossbar_only():
    w, x = np.ones((16, 8), int), np.ones((3, 16), int)
    dev = Device(TIMED)
    dev.write(0, w)
    dev.mvm(0, x)
    dev.write(1, np.ones((4, 8), int))
    assert dev.barrier(1) == 4 * 10  # crossbar 1's write ended; crossbar 0 still busy
    assert dev.barrier(0) == 16 * 10 + mvm_ns(3)
    dev.mvm(1, np.ones(4, int))  # issued after the barrier: starts at the host time
    assert dev.busy_until(1) == 16 * 10 + mvm_ns(3) + mvm_ns(1)
    assert dev.sync() == dev.busy_until(1)


def test_metrics_per_crossbar_and_reset():
    rng = np.random.default_rng(3)
    w, x = rng.integers(-15, 16, (16, 8)), rng.integers(-8, 8, (3, 16))
    dev = Device(TIMED)
    dev.write(2, w)
    dev.mvm(2, x)
    dev.mvm(2, x[0])
    report = dev.report()
    json.dumps(report)  # plain data
    assert list(report["crossbars"]) == [2]
    xbar = report["crossbars"][2]
    assert (xbar["writes"], xbar["mvms"], xbar["input_slices"]) == (1, 2, (3 + 1) * 2)
    assert xbar["busy_cycles"] == (6 + 3 * 2 - 1) + (6 + 1 * 2 - 1)
    assert set(xbar["energy_pj"]) == {*COMPONENTS, "total"}
    assert dev.metrics == report
    dev.reset_metrics()
    after = dev.report()
    assert after["latency_ns"] == 0 and after["crossbars"] == {}
    assert all(v == 0 for k, v in after["total"].items() if k != "energy_pj")
    np.testing.assert_array_equal(dev.mvm(2, x), x @ w)  # the weights stay programmed


def test_empty_batch_takes_no_cycles():
    dev = Device(TIMED)
    dev.write(0, np.ones((16, 8), int))
    assert dev.mvm(0, np.zeros((0, 16), int)).shape == (0, 8)
    assert dev.report()["total"]["busy_cycles"] == 0


def test_write_copies_the_weights():
    w = np.arange(16 * 8).reshape(16, 8) % 16
    dev = Device(TIMED)
    dev.write(0, w)
    expected = np.ones(16, int) @ w
    w[:] = 0
    np.testing.assert_array_equal(dev.mvm(0, np.ones(16, int)), expected)


def test_device_accepts_preset_names_and_toml(tmp_path):
    path = tmp_path / "d.toml"
    path.write_text('preset = "cinnamon"\ncrossbars = 2\n')
    assert Device(str(path)).config.crossbars == 2
    assert Device("prime").config.rows == 256


# ---- errors -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "xbar, weights, message",
    [
        (0, np.zeros((129, 64), int), "does not fit a 128×128 crossbar: at most 128×64"),
        (0, np.zeros((128, 65), int), "does not fit a 128×128 crossbar: at most 128×64"),
        (16, np.zeros((4, 4), int), "crossbar 16 does not exist: the device has 16"),
        (-1, np.zeros((4, 4), int), "crossbar -1 does not exist"),
        ("a", np.zeros((4, 4), int), "crossbar index must be an integer"),
        (0, np.zeros((2, 3, 4), int), "K×N matrix"),
        (0, np.zeros((0, 4), int), "K×N matrix"),
        (0, np.full((4, 4), 16), "weight 16 does not fit 4-bit differential encoding (range -15..15)"),
        (0, np.full((4, 4), 0.5), "float weights need an exact device"),
    ],
)
def test_bad_writes(xbar, weights, message):
    dev = Device(preset("cinnamon").replace(prog_noise=0.01) if "float" in message else "cinnamon")
    with pytest.raises(ValueError) as err:
        dev.write(xbar, weights)
    assert message in str(err.value)
    assert dev.report()["total"]["writes"] == 0


def test_offset_encoding_weight_range():
    dev = Device(preset("cinnamon").replace(encoding="offset"))
    dev.write(0, np.full((2, 2), 15))  # non-negative tiles are stored unsigned
    dev.write(0, np.array([[-8, 7]]))  # signed tiles as offset binary
    with pytest.raises(ValueError, match="weight 8 does not fit 4-bit offset encoding"):
        dev.write(0, np.array([[-8, 8]]))


@pytest.mark.parametrize(
    "x, message",
    [
        (np.zeros((2, 10), int), "has 10 elements per row but the tile has 16 rows"),
        (np.full((2, 16), 16), "input 16 (row 0) does not fit 4-bit inputs"),
        (np.array([[-1] + [15] * 15]), "input 15 (row 0) does not fit 4-bit inputs"),
        (np.full(16, -9), "input -9 (row 0) does not fit"),
        (np.zeros((2, 2, 16), int), "vector or a matrix"),
        (np.full(16, 0.5), "float inputs need an exact device"),
    ],
)
def test_bad_mvms(x, message):
    dev = Device(preset("cinnamon").replace(adc_bits=8))
    dev.write(1, np.ones((16, 4), int))
    with pytest.raises(ValueError) as err:
        dev.mvm(1, x)
    assert message in str(err.value) and str(err.value).startswith("crossbar 1: ")


def test_mvm_on_unwritten_crossbar():
    with pytest.raises(ValueError, match="crossbar 3 has not been written"):
        Device("cinnamon").mvm(3, np.ones(4, int))
