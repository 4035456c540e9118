"""Threads: products (sliced, and exact in float) and the host's element-wise passes give bitwise
the same results on a pool as on one thread; a product of some rows gives those rows of the whole
product, bitwise for integer values and within float rounding otherwise; the BLAS thread count is
restored after a run."""

from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from cimxdsl.device import Device, preset
from cimxdsl.device.crossbar import exact_matmul
from cimxdsl.device.threads import blas_threads, check_threads, using_threads
from cimxdsl.interpreters.values import in_parts


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


def rounding_bound(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """γ_K·(|x|·|w|) in float32 (γ_K = K·u / (1 - K·u), u = 2**-24): how far a float32 product of
    K-term reductions can be from the exact one, whatever the order of its sums (Higham 2002, §3.1)."""
    u, k = np.finfo(np.float32).eps / 2, x.shape[1]
    return k * u / (1 - k * u) * (np.abs(x).astype(np.float64) @ np.abs(w).astype(np.float64))


def test_exact_products_on_threads_equal_one_thread():
    """The chunks of rows are the same on any number of threads: the float product is bitwise the same."""
    rng = np.random.default_rng(1)
    x, w = rng.normal(size=(1500, 300)).astype(np.float32), rng.normal(size=(300, 70)).astype(np.float32)
    with using_threads(1):
        alone = exact_matmul(x, w)
    with using_threads(3):
        np.testing.assert_array_equal(exact_matmul(x, w), alone)
        ints = rng.integers(-128, 128, (1500, 300))
        np.testing.assert_array_equal(exact_matmul(ints, ints[:300, :70]), ints @ ints[:300, :70])
    assert np.all(np.abs(alone - x.astype(np.float64) @ w) <= rounding_bound(x, w))


@pytest.mark.parametrize("rows", [slice(0, 1), slice(0, 7), slice(37, 700), slice(1000, 1500)])
def test_products_of_some_rows_equal_those_rows_of_the_whole(rows):
    """A product of some rows is not bitwise those rows of the product of all (the BLAS picks its
    kernel by the shape): float products agree within twice the rounding bound of a K-term
    reduction; integer-valued ones, exact in float32 whatever the order, are bitwise the same."""
    rng = np.random.default_rng(2)
    x, w = rng.normal(size=(1500, 300)).astype(np.float32), rng.normal(size=(300, 70)).astype(np.float32)
    some = exact_matmul(x[rows], w)
    assert np.all(np.abs(some - exact_matmul(x, w)[rows]) <= 2 * rounding_bound(x[rows], w))
    ints, int_w = rng.integers(-128, 128, (1500, 300)), rng.integers(-127, 128, (300, 70))
    assert 128 * 127 * 300 < 2**24  # every partial sum is an integer float32 holds exactly
    floats, float_w = ints.astype(np.float32), int_w.astype(np.float32)
    np.testing.assert_array_equal(exact_matmul(floats[rows], float_w), exact_matmul(floats, float_w)[rows])
    np.testing.assert_array_equal(exact_matmul(floats[rows], float_w), ints[rows] @ int_w)
    np.testing.assert_array_equal(exact_matmul(ints[rows], int_w), (ints @ int_w)[rows])


def test_blas_keeps_one_thread_in_a_run_and_is_restored():
    # from two BLAS threads (the suite's processes keep one: tests/conftest.py), so that both the
    # limit and the restoring show
    with threadpool_limits(2, user_api="blas"):
        before = blas_threads()
        assert before in (2, None)
        with using_threads(2):
            assert blas_threads() in (1, None)
            with using_threads(None):
                assert blas_threads() in (1, None)
        assert blas_threads() == before
    for bad in (0, -2, 1.5):
        with pytest.raises(ValueError, match="threads must be a positive integer"):
            check_threads(bad)


@pytest.mark.parametrize(
    ("function", "shapes", "dtype"),
    [
        (np.add, [(64, 48, 40), (1, 1, 40)], np.float32),  # a per-channel bias, broadcast
        (lambda x, y, z: x * y - z, [(3, 70, 400), (400,), ()], np.float32),  # lower rank and a scalar
        (lambda x: x, [(300, 300)], np.int8),  # arith.trunci: wraps modulo 2**8
        (np.rint, [(5, 40000)], np.int32),  # arith.fptosi of large values, ±inf and NaN
    ],
)
def test_element_wise_ops_in_parts_equal_one_call(function, shapes, dtype):
    rng = np.random.default_rng(1)
    args = [rng.normal(scale=1e3, size=shape) for shape in shapes]
    if dtype == np.int32:
        for offset, value in enumerate((np.inf, -np.inf, np.nan, 3e12, -3e12)):
            args[0].flat[offset::997] = value
    with np.errstate(invalid="ignore"):  # (NaN and ±inf to integers: the cast of one call)
        expected = np.asarray(function(*args)).astype(dtype)
    for threads in (2, 3):
        with using_threads(threads):
            got = in_parts(function, args, expected.shape, np.dtype(dtype))
        assert got.dtype == dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)


def test_a_bit_sliced_cnn_on_threads_equals_one_thread(monkeypatch):
    """The host passes on the pool (element-wise ops, im2col's copy, the input planes) and the
    products' chunks: a convolutional network gives bitwise the same outputs on 1 and 3 threads."""
    import cimxdsl
    from cimxdsl.interpreters import values

    monkeypatch.setattr(values, "PARALLEL_ELEMENTS", 64)  # (the small network's ops in parts too)
    config = preset("cinnamon").replace(weight_bits=8, input_bits=8, adc_bits=8)
    x = np.random.default_rng(2).normal(size=(32, 1, 8, 8)).astype(np.float32)
    model = Path(__file__).resolve().parents[3] / "examples" / "digits_cnn.onnx"
    program = cimxdsl.compile(model, device=config, calibration=x[:1], batch=32)
    outputs = []
    for threads in (1, 3):
        with using_threads(threads):
            outputs.append(program.run(x).outputs[0])
    np.testing.assert_array_equal(outputs[1], outputs[0])
    assert np.abs(outputs[0]).max() > 0


def test_chunks_mapped_from_the_pools_own_threads_run_there():
    """Work on the pool that maps chunks itself (a host pass inside a product's chunk) runs them in
    place rather than waiting for threads that are all busy waiting."""
    import threading

    from cimxdsl.device.threads import map_chunks

    done = []

    def nested() -> None:
        with using_threads(2):
            map_chunks(lambda outer: map_chunks(lambda inner: done.append((outer, inner)), [(0,), (1,)]), [0, 1])

    runner = threading.Thread(target=nested, daemon=True)  # (a deadlock fails the test, not the suite)
    runner.start()
    runner.join(timeout=30)
    assert not runner.is_alive(), "map_chunks from the pool's own threads waited for itself"
    assert sorted(done) == [(o, (i,)) for o in (0, 1) for i in range(2)]
