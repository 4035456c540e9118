"""Threads: the sliced product's chunks on a pool give the same results as on one thread, and the
BLAS thread count is restored after a run."""

import numpy as np
import pytest

from cimxdsl.device import Device, preset
from cimxdsl.device.threads import blas_threads, check_threads, using_threads


@pytest.mark.parametrize(
    "config",
    [
        preset("cinnamon").replace(weight_bits=8, input_bits=8, adc_bits=8),
        preset("cinnamon").replace(weight_bits=8, input_bits=8, adc_bits=6, prog_noise=0.2, seed=4),
        preset("isaac").replace(adc_range="calibrated"),
    ],
)
def test_chunks_on_threads_equal_one_thread(config):
    rng = np.random.default_rng(0)
    k, n = config.tile_shape
    w, x = rng.integers(-127, 128, (k, n)), rng.integers(-128, 128, (3000, k))  # several chunks
    results = []
    for threads in (1, 2, 3):
        device = Device(config)
        device.write(0, w)
        with using_threads(threads):
            results.append(device.mvm(0, x))
        assert device.report()["total"]["mvms"] == 1
    for other in results[1:]:
        np.testing.assert_array_equal(other, results[0])


def test_blas_threads_are_restored_and_bad_counts_rejected():
    before = blas_threads()
    with using_threads(1):
        assert blas_threads() in (1, None)
        with using_threads(None):  # inherits the enclosing count
            assert blas_threads() in (1, None)
    assert blas_threads() == before
    for bad in (0, -2, 1.5):
        with pytest.raises(ValueError, match="threads must be a positive integer"):
            check_threads(bad)
