"""Threads: the sliced product's chunks on a pool give the same results as on one thread, and the
BLAS thread count is restored after a run."""

import numpy as np
import pytest

from cimxdsl.device import Device, preset
from cimxdsl.device.crossbar import exact_matmul
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


def test_exact_products_on_threads_equal_one_thread():
    rng = np.random.default_rng(1)
    x, w = rng.normal(size=(1500, 300)).astype(np.float32), rng.normal(size=(300, 70)).astype(np.float32)
    with using_threads(1):
        alone = exact_matmul(x, w)
    with using_threads(3):
        np.testing.assert_array_equal(exact_matmul(x, w), alone)
        ints = rng.integers(-128, 128, (1500, 300))
        np.testing.assert_array_equal(exact_matmul(ints, ints[:300, :70]), ints @ ints[:300, :70])
    np.testing.assert_allclose(alone, x.astype(np.float64) @ w, rtol=1e-4, atol=1e-4)


def test_blas_keeps_one_thread_in_a_run_and_is_restored():
    before = blas_threads()
    with using_threads(2):
        assert blas_threads() in (1, None)
        with using_threads(None):
            assert blas_threads() in (1, None)
    assert blas_threads() == before
    for bad in (0, -2, 1.5):
        with pytest.raises(ValueError, match="threads must be a positive integer"):
            check_threads(bad)
