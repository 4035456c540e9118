"""A noiseless device reuses the tiles it programmed from read-only weights; the metrics count every write."""

import numpy as np

from cimxdsl.device import Device, preset

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
