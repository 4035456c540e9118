"""A noiseless device reuses the tiles it programmed from read-only weights; the metrics count every write
and every operation, however often they are read."""

import numpy as np
import pytest

from cimxdsl.device import Device, preset
from cimxdsl.device.metrics import digital_events, energy_pj, mvm_events, write_events

CONFIG = preset("cinnamon").replace(weight_bits=8, input_bits=8, adc_bits=8)


def read_only(array: np.ndarray) -> np.ndarray:
    array = array.copy()
    array.flags.writeable = False
    return array


def test_read_only_weights_are_programmed_once_and_written_every_time():
    rng = np.random.default_rng(0)
    w, x = read_only(rng.integers(-127, 128, (128, 32))), rng.integers(0, 256, (3, 128))
    device, fresh = Device(CONFIG), Device(CONFIG)
    device.write(0, w)
    first = device.tile(0)
    device.write(1, w)
    device.write(0, w)
    assert device.tile(0) is first and device.tile(1) is first
    for i in (0, 1, 0):
        fresh.write(i, w.copy())
    assert device.report() == fresh.report()  # three writes each
    np.testing.assert_array_equal(device.mvm(1, x), fresh.mvm(1, x))


def test_writable_or_noisy_weights_are_programmed_every_time():
    rng = np.random.default_rng(1)
    w = rng.integers(-127, 128, (128, 32))
    device = Device(CONFIG)
    device.write(0, w)
    w[0, 0] = -w[0, 0] - 1  # changed in place: a writable array may hold other weights next time
    device.write(0, w)
    np.testing.assert_array_equal(device.tile(0).weights, w)
    noisy = Device(CONFIG.replace(prog_noise=0.1))
    frozen = read_only(w)
    noisy.write(0, frozen)
    first = noisy.tile(0)
    noisy.write(0, frozen)
    assert noisy.tile(0) is not first
    assert not np.array_equal(noisy.tile(0).conductance, first.conductance)  # the next write's own error


def test_metrics_read_at_any_point_sum_every_operation_in_order():
    """Operations are summed into the metrics when they are read: reading between operations or
    only at the end gives the counts and energy of the events added op by op."""
    rng = np.random.default_rng(2)
    w = [read_only(rng.integers(-127, 128, (128, 32))) for _ in range(3)]
    x = rng.integers(0, 256, (5, 128))
    eager, lazy = Device(CONFIG), Device(CONFIG)
    expected_counts = dict.fromkeys(("writes", "cells_written", "mvms", "adc_conversions", "digital_macs"), 0)
    expected_energy = 0.0
    for step in range(6):
        xbar = step % 2
        for device in (eager, lazy):
            device.write(xbar, w[step % 3])
            device.mvm(xbar, x)
            device.digital(4, 8, step + 1)
        eager.report()
        events = [write_events(CONFIG, 128, 32), mvm_events(CONFIG, 5, 128, 32), digital_events(4, 8, step + 1)]
        for each in events:
            for key in expected_counts:
                expected_counts[key] += each.get(key, 0)
            expected_energy += sum(energy_pj(CONFIG, each).values())
    assert eager.report() == lazy.report()
    total = lazy.report()["total"]
    assert {key: total[key] for key in expected_counts} == expected_counts
    assert total["energy_pj"]["total"] == pytest.approx(expected_energy, rel=1e-12)


def test_a_crossbar_holds_the_weights_it_was_written_with():
    rng = np.random.default_rng(3)
    w = read_only(rng.integers(-127, 128, (128, 32)))
    device = Device(CONFIG)
    assert not device.holds(0, w)
    device.write(0, w)
    assert device.holds(0, w) and device.holds(0, w.copy())  # the same array, or equal values
    later = w.copy()
    later[-1, -1] = -later[-1, -1] - 1  # differs after the first element
    assert not device.holds(0, later) and not device.holds(0, w[:, :16]) and not device.holds(1, w)
