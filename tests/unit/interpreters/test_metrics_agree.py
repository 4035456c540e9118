"""The metrics of a lowered program agree with the device model's own accounting."""

import numpy as np
import pytest

from cimxdsl.device import Device, preset
from cimxdsl.interpreters import run
from tests.unit.helpers import apply, parse

GEMM = """
func.func @main(%a: tensor<40x128xi32>, %b: tensor<128x64xi32>) -> tensor<40x64xi32> {
  %r = cinm.compute -> tensor<40x64xi32> {
    %0 = cinm.op.gemm %a, %b : (tensor<40x128xi32>, tensor<128x64xi32>) -> tensor<40x64xi32>
    cinm.yield %0 : tensor<40x64xi32>
  }
  func.return %r : tensor<40x64xi32>
}
"""

COUNTERS = ("writes", "cells_written", "mvms", "input_slices", "adc_conversions", "busy_cycles")


def test_seeds_benchmark_through_the_lowered_program():
    """Reißmann 2024, §6.3: a 40×128 by 128×64 product of 4-bit unsigned values on the Cinnamon device
    writes 32768 cells, and its MVM takes 6 fill cycles + one per further input slice = 85."""
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 16, (40, 128)), rng.integers(0, 16, (128, 64))
    module = apply(parse(GEMM), "cinm-to-cim,schedule-asap,cim-to-memristor,memristor-to-func")
    result = run(module, [a, b], "cinnamon")
    np.testing.assert_array_equal(result.outputs[0], a @ b)
    total = result.device.report()["total"]
    assert total["cells_written"] == 32768
    assert total["mvms"] == 1 and total["busy_cycles"] == 85
    config = preset("cinnamon")
    mvm_cycles = config.pipeline_fill_cycles + 40 * config.input_slices - 1
    assert mvm_cycles == 85
    write_ns = 128 * config.write_ns_per_row
    assert result.device.latency_ns == pytest.approx(write_ns + mvm_cycles * config.cycle_ns)


@pytest.mark.parametrize(
    "stage_passes",
    [
        "cinm-to-cim{crossbars=4},schedule-list",
        "cinm-to-cim{crossbars=4},schedule-list,cim-to-memristor,memristor-to-func",
    ],
)
def test_levels_report_the_same_metrics_as_the_device(stage_passes):
    """The cim level (runtime write reuse) and the func level (writes decided by the compiler) count
    exactly what the same device operations count when issued by hand."""
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 16, (40, 300)), rng.integers(0, 16, (300, 100))
    text = GEMM.replace("128x64", "300x100").replace("40x128", "40x300").replace("40x64", "40x100")
    module = apply(parse(text), f"tile{{device=cinnamon}},{stage_passes}")
    lowered = run(module, [a, b], "cinnamon").device.report()["total"]
    by_hand = Device("cinnamon")
    rows, cols = preset("cinnamon").tile_shape
    for k0 in range(0, 300, rows):
        for n0 in range(0, 100, cols):
            by_hand.write(0, b[k0 : k0 + rows, n0 : n0 + cols])
            by_hand.mvm(0, a[:, k0 : k0 + rows])
    expected = by_hand.report()["total"]
    for counter in COUNTERS[:-1]:
        assert lowered[counter] == expected[counter], counter
    assert lowered["energy_pj"]["total"] == pytest.approx(expected["energy_pj"]["total"])
