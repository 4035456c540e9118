"""Bit-sliced MVM: exactness, ADC effects and seeded noise."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cimxdsl.device.crossbar as crossbar
from cimxdsl.device import Device, DeviceConfig, crossbar_matmul, preset
from cimxdsl.device.config import ENCODINGS

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def signed_or_unsigned(rng, shape, bits, signed, extremes=True):
    """Random values of a `bits`-bit signed or unsigned type, with both ends of the range present."""
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    a = rng.integers(low, high, size=shape, endpoint=True)
    if extremes and a.size >= 2:
        a.flat[0], a.flat[-1] = low, high
    return a


def random_inputs(rng, batch, k, bits):
    """Rows that are each signed or unsigned `bits`-bit values."""
    rows = [signed_or_unsigned(rng, k, bits, bool(rng.integers(2)), extremes=k > 1) for _ in range(batch)]
    return np.array(rows, dtype=np.int64).reshape(batch, k)


@st.composite
def sliced_problems(draw, lossless=True):
    cell_bits = draw(st.integers(1, 4))
    weight_bits = draw(st.integers(1, 12))
    cells = -(-weight_bits // cell_bits)
    config = DeviceConfig(
        rows=draw(st.integers(1, 40)),
        cols=draw(st.integers(cells, 6 * cells)),
        weight_bits=weight_bits,
        input_bits=draw(st.integers(1, 12)),
        cell_bits=cell_bits,
        dac_bits=draw(st.integers(1, 4)),
        encoding=draw(st.sampled_from(ENCODINGS)),
    )
    if not lossless:  # an ADC with at least as many bits as the largest possible column sum
        config = config.replace(
            adc_bits=config.adc_full_scale.bit_length() + draw(st.integers(0, 2)),
            adc_range=draw(st.sampled_from(["full", "calibrated"])),
        )
    max_k, max_n = config.tile_shape
    k, n, batch = draw(st.integers(1, max_k)), draw(st.integers(1, max_n)), draw(st.integers(0, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if config.encoding == "differential" and draw(st.booleans()):
        top = 2**weight_bits - 1  # the pair holds any magnitude below 2**weight_bits
        w = rng.integers(-top, top, size=(k, n), endpoint=True)
    else:
        w = signed_or_unsigned(rng, (k, n), weight_bits, draw(st.booleans()))
    return config, random_inputs(rng, batch, k, config.input_bits), w


@SETTINGS
@given(sliced_problems())
def test_lossless_noiseless_sliced_mvm_is_exact(problem):
    config, x, w = problem
    expected = x @ w
    result = crossbar_matmul(x, w, config, fast_path=False)
    assert result.dtype == np.int64
    np.testing.assert_array_equal(result, expected)
    np.testing.assert_array_equal(crossbar_matmul(x, w, config), expected)  # the fast path


def test_fast_path_false_runs_the_sliced_model(monkeypatch):
    def no_shortcut(*args):
        raise AssertionError("the exact shortcut was used")

    monkeypatch.setattr(crossbar, "_exact_product", no_shortcut)
    rng = np.random.default_rng(12)
    x, w = rng.integers(-8, 8, (3, 128)), rng.integers(-15, 16, (128, 64))
    np.testing.assert_array_equal(crossbar_matmul(x, w, preset("cinnamon"), fast_path=False), x @ w)
    with pytest.raises(AssertionError, match="shortcut"):
        crossbar_matmul(x, w, preset("cinnamon"))


def test_sliced_model_refuses_configs_that_overflow_int64():
    x, w = np.ones((1, 4), np.int64), np.ones((4, 4), np.int64)
    with pytest.raises(ValueError, match="too wide for the bit-sliced model"):
        crossbar_matmul(x, w, preset("ideal"), fast_path=False)


@SETTINGS
@given(sliced_problems(lossless=False))
def test_adc_with_enough_bits_is_exact(problem):
    config, x, w = problem
    np.testing.assert_array_equal(crossbar_matmul(x, w, config), x @ w)


@settings(max_examples=50, deadline=None)
@given(
    st.integers(1, 128),
    st.integers(1, 128),
    st.integers(1, 9),
    st.sampled_from([np.int8, np.int32]),
    st.integers(0, 2**32 - 1),
)
def test_ideal_device_is_exact(k, n, batch, dtype, seed):
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, size=(batch, k), endpoint=True, dtype=dtype)
    w = rng.integers(-128, 127, size=(k, n), endpoint=True, dtype=np.int8)
    dev = Device("ideal")
    dev.write(0, w)
    np.testing.assert_array_equal(dev.mvm(0, x), x.astype(np.int64) @ w.astype(np.int64))


def test_ideal_device_multiplies_floats_exactly():
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((7, 100)), rng.standard_normal((100, 90))
    dev = Device("ideal")
    dev.write(3, w)
    result = dev.mvm(3, x)
    assert result.dtype == np.float64
    np.testing.assert_allclose(result, x @ w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dev.mvm(3, x[0]), x[0] @ w, rtol=1e-12, atol=1e-12)


def test_vector_input_gives_vector_output():
    rng = np.random.default_rng(1)
    w, x = rng.integers(-15, 16, (128, 64)), rng.integers(0, 16, 128)
    dev = Device("cinnamon")
    dev.write(0, w)
    y = dev.mvm(0, x)
    assert y.shape == (64,)
    np.testing.assert_array_equal(y, x @ w)


def test_chunking_over_rows_does_not_change_results(monkeypatch):
    rng = np.random.default_rng(2)
    config = preset("cinnamon").replace(adc_bits=6, adc_range="calibrated")
    x, w = rng.integers(-8, 8, (50, 128)), rng.integers(-15, 16, (128, 64))
    whole = crossbar_matmul(x, w, config)
    monkeypatch.setattr(crossbar, "CHUNK_BYTES", 1)  # one row per chunk
    np.testing.assert_array_equal(crossbar_matmul(x, w, config), whole)


# ---- ADC ----------------------------------------------------------------------------------------
def adc_errors(adc_range, bits_list, signed_inputs=True, signed_weights=True, trials=20, subtraction="digital"):
    """Mean abs error and mean abs product of cinnamon MVMs (4-bit values) over the same random
    matrices, per ADC width."""
    rng = np.random.default_rng(11)
    problems = [
        (
            signed_or_unsigned(rng, (8, 128), 4, signed_inputs),
            rng.integers(-15, 16, (128, 64)) if signed_weights else rng.integers(0, 16, (128, 64)),
        )
        for _ in range(trials)
    ]
    errors = []
    for bits in bits_list:
        config = preset("cinnamon").replace(adc_bits=bits, adc_range=adc_range, subtraction=subtraction)
        errors.append(np.mean([np.abs(crossbar_matmul(x, w, config) - x @ w).mean() for x, w in problems]))
    return np.array(errors), np.mean([np.abs(x @ w).mean() for x, w in problems])


def assert_fewer_bits_never_reduce_the_error(bits, errors, signal):
    """For widths b1 < b2, error(b1) >= error(b2), unless both results are noise (mean error within 1 %
    of the mean |product| or above: returning zeros would do as well). Below the width where the ADC step outgrows the column sums' spread, each
    array of a differential pair is rounded on its own and the reads carry no signal at any width:
    there a finer step only moves the noise around (with signed weights and a full-scale ADC, 3 bits
    is worse than 2), so ordering those widths says nothing about the device."""
    noise = errors >= 0.99 * signal
    for i, j in zip(*np.triu_indices(len(bits), 1), strict=True):
        assert errors[i] >= errors[j] or (noise[i] and noise[j]), (bits[i], bits[j], errors)


@pytest.mark.parametrize("subtraction", ["digital", "analog"])
@pytest.mark.parametrize("signed_inputs", [False, True])
@pytest.mark.parametrize("signed_weights", [False, True])
@pytest.mark.parametrize("adc_range", ["full", "calibrated"])
def test_fewer_adc_bits_never_reduce_the_error(adc_range, signed_weights, signed_inputs, subtraction):
    bits = np.arange(1, 15)
    errors, signal = adc_errors(adc_range, bits, signed_inputs, signed_weights, subtraction=subtraction)
    assert_fewer_bits_never_reduce_the_error(bits, errors, signal)
    # the property is not vacuous: most widths give a result that carries signal
    assert np.count_nonzero(errors < signal) >= len(bits) // 2
    # cinnamon's largest column sum is 128 rows x 3 x 3 = 1152 < 2**11: 11 bits are lossless (12 for
    # the signed ADC that converts the pair subtracted before it)
    lossless = 11 + (subtraction == "analog")
    assert np.all(errors[bits >= lossless] == 0)
    assert np.all(errors[bits < 8] > 0)
    if adc_range == "full":
        assert np.all(errors[bits < lossless] > 0)


def test_the_noise_regime_is_where_the_pair_is_rounded_apart():
    # With signed weights and a full-scale ADC, 3 bits is worse than 2: the one place where the
    # ordering breaks, and both widths are noise there.
    errors, signal = adc_errors("full", [2, 3])
    assert errors[1] > errors[0] >= 0.99 * signal


def test_fewer_adc_bits_never_reduce_the_error_with_8_bit_values():
    rng = np.random.default_rng(5)
    problems = [(rng.integers(-128, 128, (4, 128)), rng.integers(-127, 128, (128, 16))) for _ in range(10)]
    bits = np.arange(1, 15)
    errors = np.array(
        [
            np.mean(
                [
                    np.abs(
                        crossbar_matmul(x, w, preset("cinnamon").replace(weight_bits=8, input_bits=8, adc_bits=b))
                        - x @ w
                    ).mean()
                    for x, w in problems
                ]
            )
            for b in bits
        ]
    )
    assert_fewer_bits_never_reduce_the_error(bits, errors, np.mean([np.abs(x @ w).mean() for x, w in problems]))


def reference_sliced_product(x, w, config):
    """seeds/001 §6.2 read by read, in integers: every (input slice, array, weight slice) column sum
    goes through `adc_convert` on its own, then shift-and-add, the pair's difference and the digital
    correction. Slow and plain; the device's vectorised model must agree with it."""
    offsets = np.where((x < 0).any(axis=1), 2 ** (config.input_bits - 1), 0)
    u = x + offsets[:, None]
    if config.encoding == "differential":
        arrays, c = [np.maximum(w, 0), np.maximum(-w, 0)], 0
    else:
        c = 0 if w.min() >= 0 else 2 ** (config.weight_bits - 1)
        arrays = [w + c]
    y = np.zeros((x.shape[0], w.shape[1]), np.int64)
    for s in range(config.input_slices):
        digit = (u >> (s * config.dac_bits)) & (2**config.dac_bits - 1)
        for a, magnitude in enumerate(arrays):
            for j in range(config.cells_per_weight):
                cells = (magnitude >> (j * config.cell_bits)) & (2**config.cell_bits - 1)
                sums = (digit @ cells).astype(np.float64).reshape(1, -1, 1, 1, 1)
                read = crossbar.adc_convert(sums, config).reshape(digit.shape[0], -1).astype(np.int64)
                y += (-1) ** a * read << (s * config.dac_bits + j * config.cell_bits)
    return y - c * x.sum(axis=1)[:, None] - offsets[:, None] * (w.sum(axis=0)[None, :] + c * w.shape[0])


@pytest.mark.parametrize("encoding", ["differential", "offset"])
@pytest.mark.parametrize("adc_bits", [3, 6, 9, 12])
def test_vectorised_model_matches_the_plain_reference_with_a_lossy_adc(encoding, adc_bits):
    config = preset("cinnamon").replace(weight_bits=8, input_bits=8, adc_bits=adc_bits, encoding=encoding)
    rng = np.random.default_rng(adc_bits)
    x = np.vstack([rng.integers(-128, 128, (5, 128)), rng.integers(0, 256, (5, 128))])
    w = rng.integers(-127, 128, (128, 16)) if encoding == "differential" else rng.integers(-128, 128, (128, 32))
    np.testing.assert_array_equal(crossbar_matmul(x, w, config), reference_sliced_product(x, w, config))


def test_calibrated_range_is_at_least_as_accurate_as_full_scale():
    bits = [3, 5, 7]
    assert np.all(adc_errors("calibrated", bits)[0] <= adc_errors("full", bits)[0])


def test_full_scale_adc_step_and_saturation():
    config = preset("cinnamon").replace(adc_bits=8)  # span 2**11, so the step is 2**3 = 8
    sums = np.array([0, 3, 4, 12, 1000, 1152, 5000], np.float64).reshape(-1, 1, 1, 1, 1)
    expected = np.array([0, 0, 8, 16, 1000, 1152, 255 * 8]).reshape(sums.shape)
    np.testing.assert_array_equal(crossbar.adc_convert(sums, config), expected)


# ---- noise --------------------------------------------------------------------------------------
NOISY = preset("cinnamon").replace(
    adc_bits=8, prog_noise=0.05, read_noise=0.05, stuck_on_rate=0.01, stuck_off_rate=0.01
)


def run_noisy(seed, repeats=2):
    rng = np.random.default_rng(0)
    w, x = rng.integers(-15, 16, (128, 64)), rng.integers(-8, 8, (16, 128))
    dev = Device(NOISY.replace(seed=seed))
    dev.write(0, w)
    dev.write(1, w)
    return [dev.mvm(xbar, x) for xbar in (0, 1) for _ in range(repeats)], x @ w


def test_fixed_seed_reproduces_noisy_results_and_other_seeds_differ():
    first, exact = run_noisy(7)
    again, _ = run_noisy(7)
    other, _ = run_noisy(8)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    assert all(np.any(a != b) for a, b in zip(first, other, strict=True))
    assert all(np.any(a != exact) for a in first)
    assert np.any(first[0] != first[2])  # two crossbars get different programming errors
    assert np.any(first[0] != first[1])  # read noise differs between MVMs


def test_stateless_matmul_is_reproducible_with_a_seeded_rng():
    rng = np.random.default_rng(3)
    x, w = rng.integers(0, 16, (4, 128)), rng.integers(-15, 16, (128, 64))
    a = crossbar_matmul(x, w, NOISY, np.random.default_rng(1))
    b = crossbar_matmul(x, w, NOISY, np.random.default_rng(1))
    c = crossbar_matmul(x, w, NOISY, np.random.default_rng(2))
    np.testing.assert_array_equal(a, b)
    assert np.any(a != c)


def test_programming_error_is_frozen_at_write():
    config = preset("cinnamon").replace(prog_noise=0.1, seed=4)
    rng = np.random.default_rng(4)
    x, w = rng.integers(0, 16, (8, 128)), rng.integers(-15, 16, (128, 64))
    dev = Device(config)
    dev.write(0, w)
    first = dev.mvm(0, x)
    np.testing.assert_array_equal(dev.mvm(0, x), first)  # no read noise: same cells, same result
    assert np.any(first != x @ w)
    dev.write(0, w)  # re-programming draws a new error
    assert np.any(dev.mvm(0, x) != first)


def test_read_noise_has_the_modelled_spread():
    # All weights 15 (cells 3, 3 on the positive array), all inputs 15 (digits 3, 3): each of the
    # 2x2 slice pairs sums 128 cells of d*g = 9, with std sigma*sqrt(128*81); shift-and-add weights
    # them by 4**s * 4**j, so the result's std is sigma*sqrt(128*81)*sqrt((1+16)*(1+16)).
    sigma = 0.01
    config = preset("cinnamon").replace(read_noise=sigma, seed=9)
    y = crossbar_matmul(np.full((4000, 128), 15), np.full((128, 1), 15), config)[:, 0]
    expected_std = sigma * np.sqrt(128 * 81) * 17
    assert abs(y.mean() - 128 * 225) < 4 * expected_std / np.sqrt(len(y))
    assert y.std() == pytest.approx(expected_std, rel=0.1)


def test_stuck_cells():
    rng = np.random.default_rng(6)
    x, w = rng.integers(0, 16, (5, 128)), rng.integers(-15, 16, (128, 64))
    all_on = preset("cinnamon").replace(stuck_on_rate=1.0)
    all_off = preset("cinnamon").replace(stuck_off_rate=1.0)
    # differential: both arrays read the same, so the pair cancels
    np.testing.assert_array_equal(crossbar_matmul(x, w, all_on), 0)
    np.testing.assert_array_equal(crossbar_matmul(x, w, all_off), 0)
    # offset, non-negative tile: every weight reads as the top level 2**4 - 1
    offset_on = all_on.replace(encoding="offset")
    np.testing.assert_array_equal(crossbar_matmul(x, np.abs(w), offset_on), x @ np.full(w.shape, 15))


def test_drift_scales_conductances():
    config = preset("cinnamon").replace(drift_nu=0.1, drift_time_s=10.0)
    rng = np.random.default_rng(8)
    x, w = rng.integers(0, 16, (6, 128)), rng.integers(-15, 16, (128, 64))
    expected = np.rint(10**-0.1 * (x @ w))
    assert np.abs(crossbar_matmul(x, w, config) - expected).max() <= 1


def test_isaac_preset_is_exact_on_int8_layers():
    """128 rows of 1-bit inputs on 2-bit cells sum to at most 384: a 9-bit ADC converts it exactly.

    (An 8-bit full-scale ADC rounds every conversion, and the high weight and input slices magnify
    the rounding into errors far larger than the products.)"""
    rng = np.random.default_rng(0)
    w, x = rng.integers(-128, 128, (128, 16)), rng.integers(-128, 128, (8, 128))
    device = Device("isaac")
    device.write(0, w)
    np.testing.assert_array_equal(device.mvm(0, x), x @ w)


@pytest.mark.parametrize("adc_bits", [0, 13])
def test_analog_subtraction_is_exact_with_enough_adc_bits(adc_bits):
    """A signed ADC of the pair's difference is exact once it has one bit more than the largest
    column sum needs (12 bits on 128 rows of 2-bit cells and 2-bit DACs: 128·3·3 < 2**11)."""
    config = preset("cinnamon").replace(weight_bits=8, input_bits=8, subtraction="analog", adc_bits=adc_bits)
    rng = np.random.default_rng(5)
    w, x = rng.integers(-128, 128, (128, 16)), rng.integers(-128, 128, (6, 128))
    np.testing.assert_array_equal(crossbar_matmul(x, w, config, fast_path=False), x @ w)


def test_analog_subtraction_converts_once_per_column_pair():
    digital = preset("cinnamon").replace(adc_bits=8)
    analog = digital.replace(subtraction="analog")
    counts = []
    for config in (digital, analog):
        device = Device(config)
        device.write(0, np.ones((128, 32), np.int64))
        device.mvm(0, np.ones((4, 128), np.int64))
        counts.append(device.report()["total"]["adc_conversions"])
    assert counts[0] == 2 * counts[1] > 0
