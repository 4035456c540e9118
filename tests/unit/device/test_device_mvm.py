"""Bit-sliced MVM: exactness, ADC effects and seeded noise."""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cimxdsl.device.crossbar as crossbar
from cimxdsl.device import Device, DeviceConfig, calibrate_tile, crossbar_matmul, kernels, preset, program_tile
from cimxdsl.device.config import ENCODINGS, INPUT_ENCODINGS, PROG_NOISE_CLIPS

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
    encoding = draw(st.sampled_from(ENCODINGS))
    binary = encoding == "reference"  # binary weights in 1-bit cells
    cell_bits = 1 if binary else draw(st.integers(1, 4))
    weight_bits = 1 if binary else draw(st.integers(1, 12))
    cells = -(-weight_bits // cell_bits)
    config = DeviceConfig(
        rows=draw(st.integers(1, 40)),
        cols=draw(st.integers(cells + binary, 6 * cells + binary)),
        weight_bits=weight_bits,
        input_bits=draw(st.integers(1, 12)),
        cell_bits=cell_bits,
        dac_bits=draw(st.integers(1, 4)),
        encoding=encoding,
        input_encoding=draw(st.sampled_from(INPUT_ENCODINGS)),
        # a finite on/off ratio: the pair or the reference column cancels the HRS current
        on_off_ratio=draw(st.sampled_from([0.0, 7.5])) if lossless and encoding != "offset" else 0.0,
    )
    if not lossless:  # an ADC with at least as many bits as the largest possible column sum (and a sign)
        config = config.replace(
            adc_bits=config.adc_full_scale.bit_length() + config.signed_adc + draw(st.integers(0, 2)),
            adc_range=draw(st.sampled_from(["full", "full_pow2", "calibrated"])),
        )
    max_k, max_n = config.tile_shape
    k, n, batch = draw(st.integers(1, max_k)), draw(st.integers(1, max_n)), draw(st.integers(0, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if binary:
        w = rng.choice([-1, 1], size=(k, n))
    elif config.encoding == "differential" and draw(st.booleans()):
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


def assert_fewer_bits_never_reduce_the_error(bits, errors, exceptions=()):
    """For widths b1 < b2, error(b1) >= error(b2), except for the (b1, b2) pairs in `exceptions`."""
    for i, j in zip(*np.triu_indices(len(bits), 1), strict=True):
        if (bits[i], bits[j]) not in exceptions:
            assert errors[i] >= errors[j], (bits[i], bits[j], errors)


# The known exceptions, all below the width where the ADC step outgrows the column sums' spread: each
# array of a signed pair is rounded on its own there, and the rounding error of the two arrays exceeds
# the product itself. With 4-bit values and a full-scale ADC, 1 bit reads every column sum as 0 (the
# sums stay below half the span, 576) and returns zeros, 2 bits does worse; with a power-of-two span,
# 3 bits does worse than 1 and 2.
EXCEPTIONS = {"full": {(1, 2)}, "full_pow2": {(1, 3), (2, 3)}, "calibrated": set()}


@pytest.mark.parametrize("subtraction", ["digital", "analog"])
@pytest.mark.parametrize("signed_inputs", [False, True])
@pytest.mark.parametrize("signed_weights", [False, True])
@pytest.mark.parametrize("adc_range", ["full", "full_pow2", "calibrated"])
def test_fewer_adc_bits_never_reduce_the_error(adc_range, signed_weights, signed_inputs, subtraction):
    bits = np.arange(1, 15)
    errors, signal = adc_errors(adc_range, bits, signed_inputs, signed_weights, subtraction=subtraction)
    pinned = signed_weights and subtraction == "digital"
    assert_fewer_bits_never_reduce_the_error(bits, errors, EXCEPTIONS[adc_range] if pinned else ())
    # the property is not vacuous: most widths give a result that carries signal
    assert np.count_nonzero(errors < signal) >= len(bits) // 2
    # cinnamon's largest column sum is 128 rows x 3 x 3 = 1152 < 2**11: 11 bits are lossless (12 for
    # the signed ADC that converts the pair subtracted before it)
    lossless = 11 + (subtraction == "analog")
    assert np.all(errors[bits >= lossless] == 0)
    assert np.all(errors[bits < 8] > 0)
    if adc_range != "calibrated":
        assert np.all(errors[bits < lossless] > 0)


@pytest.mark.parametrize("adc_range", ["full", "full_pow2"])
def test_the_exceptions_are_where_the_pair_is_rounded_apart(adc_range):
    bits = np.arange(1, 5)
    errors, signal = adc_errors(adc_range, bits, signed_inputs=False)
    for low, high in EXCEPTIONS[adc_range]:
        assert errors[high - 1] > max(errors[low - 1], signal)  # worse than zeros
    if adc_range == "full":
        assert errors[0] == signal  # zeros


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
    # 1-4 bits are all worse than zeros (the pair rounded apart), and 2 bits the least bad of them
    signal = np.mean([np.abs(x @ w).mean() for x, w in problems])
    assert np.all(errors[:4] > 2 * signal)
    assert_fewer_bits_never_reduce_the_error(bits, errors, {(2, 3), (2, 4), (3, 4)})


def round_half_even(numerator, denominator):
    """numerator / denominator rounded to the nearest integer, ties to even, in integers."""
    q, r = np.divmod(numerator, denominator)
    return q + ((2 * r > denominator) | ((2 * r == denominator) & (q % 2 == 1)))


def reference_planes(x, config):
    """(digits, shift-and-add weight) of every input pass, written out per encoding."""
    bits, dac = config.input_bits, config.dac_bits
    negative = (x < 0).any(axis=1)

    def digits(u, width, sign=1):
        return [((u >> s) & (2 ** min(dac, width - s) - 1), sign * 2**s) for s in range(0, width, dac)]

    if config.input_encoding == "offset":
        offsets = np.where(negative, 2 ** (bits - 1), 0)
        return digits(x + offsets[:, None], bits), offsets
    if config.input_encoding == "twos_complement":
        u = x % 2**bits
        # the sign bit alone, at its DAC level within its digit (2**p), weighs -2**(bits-1) (+ unsigned)
        p = (bits - 1) % dac
        sign_weight = np.where(negative, -(2 ** (bits - 1 - p)), 2 ** (bits - 1 - p))[:, None]
        return [*digits(u & (2 ** (bits - 1) - 1), bits - 1), ((u >> (bits - 1)) * 2**p, sign_weight)], 0
    if config.input_encoding == "bipolar":  # the digits of |x|, each driven with the sign of its entry
        return [(np.sign(x) * digit, weight) for digit, weight in digits(np.abs(x), bits)], 0
    return [*digits(np.maximum(x, 0), bits), *digits(np.maximum(-x, 0), bits, -1)], 0


def reference_column_sums(planes, w, config):
    """Per input pass: its shift-and-add weight and the column sums [array or pair][weight slice]
    (a pair subtracted before the ADC gives one signed sum per slice), and the weight offset c."""
    if config.encoding == "differential":
        arrays, c = [np.maximum(w, 0), np.maximum(-w, 0)], 0
    else:
        c = 0 if w.min() >= 0 else 2 ** (config.weight_bits - 1)
        arrays = [w + c]
    cells = [
        [(m >> (j * config.cell_bits)) & (2**config.cell_bits - 1) for j in range(config.cells_per_weight)] for m in arrays
    ]
    passes = []
    for digit, weight in planes:
        sums = [[digit @ slice_ for slice_ in array] for array in cells]
        if config.subtraction == "analog" and len(arrays) == 2:
            sums = [[p - m for p, m in zip(*sums)]]
        passes.append((weight, np.array(sums)))  # (arrays or 1, J, rows, N)
    return passes, c


def reference_spans(calibration, w, config, steps):
    """The span of every (array, weight slice, column) of a static range: the largest |sum| the
    calibration rows give per column, per weight slice over all columns and arrays, or per array."""
    passes, _ = reference_column_sums(reference_planes(calibration, config)[0], w, config)
    top = np.max([np.abs(sums).max(axis=2) for _, sums in passes], axis=0)  # (arrays, J, N)
    axes = {"static_column": (), "static_slice": (0, 2), "static_array": (1, 2)}[config.adc_range]
    return np.maximum(top.max(axis=axes, keepdims=True), steps)[:, :, None, :]


def reference_sliced_product(x, w, config, calibration=None):
    """Reißmann 2024, §6.2 read by read, in integers: every (input pass, array, weight slice) column
    sum is converted on its own — level = round_half_even(sum · L / F) saturated to the codes, with
    L = 2**n - 1 (codes 0..L), or L = 2**(n-1) - 1 (codes -2**(n-1)..L) for the signed sums of bipolar
    inputs or a pair subtracted before the ADC; F = max(rows · (2**dac - 1) · (2**cell - 1), L)
    (`full`), L = 1 and F the power-of-two step (`full_pow2`), or F = max(span, L) from the
    `calibration` rows (static ranges) or from the read itself (`calibrated`: the largest |sum| of
    the pass, row and weight slice over the tile's columns and arrays) — then shift-and-add of level · F, the pair's difference,
    ÷ L rounded half to even (exact: L is odd, so no result is a tie) and the digital corrections.
    Slow and plain; the device's vectorised model must agree with it exactly."""
    planes, offsets = reference_planes(x, config)
    passes, c = reference_column_sums(planes, w, config)
    n = config.adc_bits
    signed = config.input_encoding == "bipolar" or (config.subtraction == "analog" and config.encoding == "differential")
    steps = 2 ** (n - 1) - 1 if signed else 2**n - 1
    low, high = (-(2 ** (n - 1)), steps) if signed else (0, steps)
    largest = config.rows * (2**config.dac_bits - 1) * (2**config.cell_bits - 1)
    if config.adc_range == "full":
        span = max(largest, steps)
    elif config.adc_range == "full_pow2":
        steps, span, low, high = 1, 2 ** max(0, len(bin(largest)) - 2 + signed - n), low, high
    elif config.adc_range != "calibrated":
        span = reference_spans(calibration, w, config, steps)
    total = np.zeros((x.shape[0], w.shape[1]), np.int64)
    for weight, sums in passes:
        if config.adc_range == "calibrated":
            span = np.maximum(np.abs(sums).max(axis=(0, 3), keepdims=True), steps)
        level = np.clip(round_half_even(sums * steps, span), low, high) * span
        for a in range(len(sums)):
            for j in range(config.cells_per_weight):
                total += (-1) ** a * weight * level[a, j] * 2 ** (j * config.cell_bits)
    y = round_half_even(total, steps)
    return y - c * x.sum(axis=1)[:, None] - np.reshape(offsets, (-1, 1)) * (w.sum(axis=0)[None, :] + c * w.shape[0])


@pytest.mark.parametrize("input_encoding", ["offset", "twos_complement", "sign_magnitude", "bipolar"])
@pytest.mark.parametrize("adc_range", ["full", "full_pow2"])
@pytest.mark.parametrize("encoding", ["differential", "offset"])
@pytest.mark.parametrize("adc_bits", [3, 6, 9, 12])
def test_vectorised_model_matches_the_plain_reference_with_a_lossy_adc(encoding, adc_bits, adc_range, input_encoding):
    config = preset("cinnamon").replace(
        weight_bits=8, input_bits=8, adc_bits=adc_bits, encoding=encoding, adc_range=adc_range, input_encoding=input_encoding
    )
    rng = np.random.default_rng(adc_bits)
    x = np.vstack([rng.integers(-128, 128, (5, 128)), rng.integers(0, 256, (5, 128))])
    w = rng.integers(-127, 128, (128, 16)) if encoding == "differential" else rng.integers(-128, 128, (128, 32))
    np.testing.assert_array_equal(crossbar_matmul(x, w, config), reference_sliced_product(x, w, config))


@pytest.mark.parametrize("input_encoding", ["offset", "twos_complement", "sign_magnitude"])
@pytest.mark.parametrize("dac_bits", [2, 3])
def test_two_input_planes_share_one_product_bitwise(input_encoding, dac_bits, monkeypatch):
    """Noiseless sums are integers: two planes' sums in one float32 product (`TileStack.pack`, an odd
    plane alone), split again, give what one product per plane gives, with the largest column sums
    (every weight and input at its largest magnitude) at the fields' limit, in one block of columns
    or one output column at a time; a config whose sums do not fit two fields in the mantissa keeps
    one product per plane."""
    config = preset("cinnamon").replace(weight_bits=8, input_bits=8, adc_bits=8, dac_bits=dac_bits)
    config = config.replace(input_encoding=input_encoding)
    rng = np.random.default_rng(dac_bits)
    w = rng.integers(-127, 128, (200, 40))
    w[:, :3] = [127, -127, 85]  # (column sums at the top: every cell at its top level)
    x = np.vstack([rng.integers(-128, 128, (6, 200)), rng.integers(0, 256, (6, 200)), np.full((1, 200), 255)])
    grid = [[program_tile(w[a : a + 128, b : b + 32], config) for b in (0, 32)] for a in (0, 128)]
    stack = crossbar.stack_tiles(grid, None, config)
    assert stack.pack == int(stack.max_sum).bit_length() > 0
    packed = crossbar.sliced_product(x, stack, config)
    np.testing.assert_array_equal(packed, crossbar.sliced_product(x, dataclasses.replace(stack, pack=0), config))
    monkeypatch.setattr(crossbar, "PACKED_CHUNK_BYTES", 1)  # (column blocks of one output column)
    np.testing.assert_array_equal(crossbar.sliced_product(x, stack, config), packed)
    lossless = config.replace(adc_bits=0)
    stack = crossbar.stack_tiles([[program_tile(t.weights, lossless) for t in row] for row in grid], None, lossless)
    np.testing.assert_array_equal(crossbar.sliced_product(x, stack, lossless), x @ w)
    wide = config.replace(cell_bits=4, dac_bits=4)  # 128 · 15 · 15 needs 15 bits: two fields need 30
    assert crossbar.stack_tiles([[program_tile(w[:128, :32], wide)]], None, wide).pack == 0


EPILOGUES = {"numpy passes": None, "python": kernels.one_pass_python}
if kernels.one_pass() is not None:
    EPILOGUES["numba"] = kernels.one_pass()


def with_epilogues(name: str, product, *args):
    """`product(*args)` with the epilogue `EPILOGUES[name]` (NumPy's passes, or one pass)."""
    original, kernels.one_pass = kernels.one_pass, lambda: EPILOGUES[name]
    try:
        return product(*args)
    finally:
        kernels.one_pass = original


def stacked(w: np.ndarray, config: DeviceConfig, rng=None) -> crossbar.TileStack:
    """The stack of `w`'s tiles (K-blocks of `config.rows`), programmed with `rng`'s noise if any."""
    rows, columns = config.tile_shape
    k, n = w.shape
    grid = [
        [program_tile(w[a : a + rows, b : b + columns], config, rng) for b in range(0, n, columns)]
        for a in range(0, k, rows)
    ]
    return crossbar.stack_tiles(grid, None, config)


@pytest.mark.parametrize("epilogue", sorted(EPILOGUES))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    weight_bits=st.integers(2, 8),
    input_bits=st.integers(2, 8),
    dac_bits=st.integers(1, 4),
    cell_bits=st.integers(1, 4),
    adc=st.sampled_from([(0, "full"), (3, "full"), (5, "full_pow2"), (8, "full"), (8, "full_pow2"), (11, "full")]),
    layout=st.sampled_from(["differential", "offset"]),
    input_encoding=st.sampled_from(["offset", "twos_complement", "sign_magnitude", "bipolar"]),
    k=st.sampled_from([1, 63, 64, 65, 127, 128, 129, 200]),
    n=st.integers(1, 12),
    batch=st.integers(1, 9),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_adc_and_shift_and_add_in_one_pass_equal_the_plain_reference(
    epilogue, weight_bits, input_bits, dac_bits, cell_bits, adc, layout, input_encoding, k, n, batch, seed
):
    """A sliced product's ADC and shift-and-add — as NumPy passes, or in one pass over a packed
    product's sums or over one product per plane (`kernels`, compiled by Numba where installed,
    and their Python source) — give bit for bit the plain read-by-read model's result, per K-block
    of 64 rows and column tile of a stack, with the largest weights and inputs present (sums at the
    top of the ADC's range); wide cells and DACs keep one product per plane. (DACs and cells no
    wider than the values: the reference's full scale takes their levels whole.)"""
    config = preset("cinnamon").replace(
        rows=64, weight_bits=weight_bits, input_bits=input_bits, dac_bits=min(dac_bits, input_bits),
        cell_bits=min(cell_bits, weight_bits),
        adc_bits=adc[0], adc_range=adc[1], encoding=layout, input_encoding=input_encoding,
    )  # fmt: skip
    rng = np.random.default_rng(seed)
    w = signed_or_unsigned(rng, (k, n), weight_bits, True)
    w[w == -(2 ** (weight_bits - 1))] += 1 if layout == "differential" else 0
    x = random_inputs(rng, batch, k, input_bits)
    result = with_epilogues(epilogue, crossbar.sliced_product, x, stacked(w, config), config)
    rows, columns = config.tile_shape
    tiles = [[(slice(a, a + rows), slice(b, b + columns)) for b in range(0, n, columns)] for a in range(0, k, rows)]
    reference = (lambda x, w, config: x @ w) if adc[0] == 0 else reference_sliced_product  # (0 bits: lossless)
    expected = sum(np.hstack([reference(x[:, r], w[r, c], config) for r, c in row]) for row in tiles)
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("epilogue", sorted(set(EPILOGUES) - {"numpy passes"}))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    noise=st.sampled_from(["prog_noise", "read_noise", "output_noise", "on_off_ratio"]),
    adc=st.sampled_from([(4, "full"), (6, "full_pow2"), (8, "full")]),
    input_encoding=st.sampled_from(["offset", "twos_complement"]),
    k=st.sampled_from([1, 64, 65, 128, 200]),
    n=st.integers(1, 40),
    batch=st.integers(1, 9),
    seed=st.integers(0, 2**32 - 1),
)
def test_one_pass_over_noisy_sums_equals_the_numpy_passes(epilogue, noise, adc, input_encoding, k, n, batch, seed):
    """With programming, read or ADC-referred noise or an HRS current (sums no integers: one
    product per plane), the one-pass ADC and shift-and-add give bit for bit the NumPy passes'
    result, from the same noise draws (read and ADC-referred noise: one tile, drawn per product)."""
    drawn = noise in ("read_noise", "output_noise")
    value = {"prog_noise": 0.05, "read_noise": 0.02, "output_noise": 0.3, "on_off_ratio": 50.0}[noise]
    config = preset("cinnamon").replace(
        rows=64, weight_bits=8, input_bits=8, adc_bits=adc[0], adc_range=adc[1], input_encoding=input_encoding,
        **{noise: value},
    )  # fmt: skip
    rng = np.random.default_rng(seed)
    k, n = (min(k, 64), min(n, config.tile_shape[1])) if drawn else (k, n)
    w, x = signed_or_unsigned(rng, (k, n), 8, True), random_inputs(rng, batch, k, 8)
    w[w == -128] = -127
    stack = stacked(w, config, np.random.default_rng(seed) if noise == "prog_noise" else None)
    assert not stack.pack

    def product(name):
        reads = np.random.default_rng(seed) if drawn else None
        return with_epilogues(name, crossbar.sliced_product, x, stack, config, reads)

    np.testing.assert_array_equal(product(epilogue), product("numpy passes"))


def test_numpy_passes_turn_the_compiled_pass_off_for_a_while():
    before = kernels.one_pass()
    with kernels.numpy_passes():
        assert kernels.one_pass() is None
    assert kernels.one_pass() is before


@pytest.mark.parametrize("adc_range", ["full", "full_pow2", "calibrated"])
@pytest.mark.parametrize("pack", [True, False])
def test_the_one_pass_runs_where_the_adc_step_is_one_scalar(adc_range, pack, monkeypatch):
    """A full-scale ADC (one step for every read) takes the one pass — over packed sums, or over
    one product per plane (an 8-bit DAC: one plane, no pair) — a calibrated one (a step per read)
    the NumPy passes; all give the plain model's result."""
    calls = []

    def counted(sums, packed, *args):
        calls.append("packed" if packed else "sliced")
        kernels.one_pass_python(sums, packed, *args)

    monkeypatch.setattr(kernels, "one_pass", lambda: counted)
    config = preset("cinnamon").replace(
        rows=32, weight_bits=8, input_bits=8, dac_bits=2 if pack else 8, adc_bits=6, adc_range=adc_range
    )
    rng = np.random.default_rng(1)
    w, x = rng.integers(-127, 128, (32, 8)), random_inputs(rng, 4, 32, 8)
    stack = stacked(w, config)
    assert bool(stack.pack) == pack
    np.testing.assert_array_equal(crossbar.sliced_product(x, stack, config), reference_sliced_product(x, w, config))
    expected = [] if adc_range == "calibrated" else ["packed" if pack else "sliced"]
    assert sorted(set(calls)) == expected


def test_inputs_that_fit_as_a_whole_fit_every_column_slice():
    """`inputs_fit` (one check of a layer's operand for all its tile products) holds only where
    every slice of the columns passes `check_inputs`; where it does not, rows are checked one by one."""
    config = preset("cinnamon").replace(weight_bits=8, input_bits=8)
    tile = program_tile(np.ones((2, 2), np.int64), config)
    fitting = np.array([[-128, 127, 0, 3], [0, 1, 2, 127]])
    per_row = np.array([[-1, 0, 0, 0], [0, 200, 0, 0]])  # a signed row and an unsigned one above 127
    bad = np.array([[-1, 200, 0, 0]])
    assert crossbar.inputs_fit(fitting, config)
    assert not crossbar.inputs_fit(per_row, config) and not crossbar.inputs_fit(bad, config)
    for x in (fitting, per_row):
        for k in (0, 2):
            crossbar.check_inputs(x[:, k : k + 2], tile, config)
    with pytest.raises(ValueError, match=r"input 200 \(row 0\) does not fit 8-bit inputs"):
        crossbar.check_inputs(bad[:, :2], tile, config)
    bipolar = config.replace(input_encoding="bipolar")
    assert crossbar.inputs_fit(np.array([[-255, 255]]), bipolar)
    assert not crossbar.inputs_fit(np.array([[-256, 0]]), bipolar)
    with pytest.raises(ValueError, match="input -256 does not fit 8-bit bipolar inputs"):
        crossbar.check_inputs(np.array([[-256, 0]]), tile, bipolar)
    assert not crossbar.inputs_fit(np.zeros((1, 2), np.float32), config)


SIGNED_BASES = {
    # 128×128, 2-bit cells and DACs, differential pairs
    "cinnamon-8bit": preset("cinnamon").replace(weight_bits=8, input_bits=8, adc_bits=5),
    # 256×256, 8-bit weights in 4-bit cells, 6-bit inputs through 3-bit DACs, 6-bit ADC
    "prime": preset("prime"),
    # bit-serial inputs, one offset-encoded array of 64 rows
    "bit-serial-offset": DeviceConfig(
        rows=64, cols=128, weight_bits=8, input_bits=8, cell_bits=2, dac_bits=1, adc_bits=4, encoding="offset"
    ),
}


@pytest.mark.parametrize("base", sorted(SIGNED_BASES))
@pytest.mark.parametrize("subtraction", ["digital", "analog"])
@pytest.mark.parametrize("adc_range", ["full", "calibrated", "static_array", "static_slice", "static_column"])
@pytest.mark.parametrize("input_encoding", INPUT_ENCODINGS)
def test_signed_adcs_and_static_spans_match_the_plain_reference(base, subtraction, adc_range, input_encoding):
    """Bipolar inputs and pairs subtracted before the ADC (signed converters), and spans per read,
    or per array, weight slice or column from calibration rows, on three devices."""
    config = SIGNED_BASES[base].replace(subtraction=subtraction, adc_range=adc_range, input_encoding=input_encoding)
    rng = np.random.default_rng(len(base) + 7 * len(adc_range))
    k, n = config.rows, config.tile_shape[1] // 2

    def rows(count):
        return np.vstack([random_inputs(rng, count, k, config.input_bits), np.full((1, k), -(2 ** (config.input_bits - 1)))])

    x, calibration = rows(6), rows(12)
    w = signed_or_unsigned(rng, (k, n), config.weight_bits, True)
    device = Device(config, adc_spans=calibrate_tile(config, w, calibration) if config.static_adc else None)
    device.write(0, w)
    got = device.mvm(0, x)
    np.testing.assert_array_equal(got, reference_sliced_product(x, w, config, calibration))
    assert np.any(got != x @ w)  # lossy: the conversions matter


def test_calibrated_range_is_at_least_as_accurate_as_full_scale():
    bits = [3, 5, 7]
    assert np.all(adc_errors("calibrated", bits)[0] <= adc_errors("full", bits)[0])


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


@pytest.mark.parametrize("noise", [{"prog_noise": 0.05}, {"read_noise": 0.02}, {"output_noise": 0.3}])
def test_float32_analog_sums_follow_the_float64_ones(noise):
    """`analog_dtype = "float32"` holds a noisy device's conductances and sums in float32, from the
    same noise draws as float64: an output moves only where a sum rounded to 24 bits crosses an ADC
    level's boundary — at most a few of 2048 outputs, each by a level or two of its largest plane
    and cell slice (F / L · 64 · 64)."""
    config = preset("cinnamon").replace(weight_bits=8, input_bits=8, adc_bits=8, **noise)
    rng = np.random.default_rng(0)
    x, w = random_inputs(rng, 64, 128, 8), rng.integers(-127, 128, (128, 32))
    results = {}
    for dtype in ("float64", "float32"):
        device = config.replace(analog_dtype=dtype)
        assert program_tile(w, device, np.random.default_rng(1)).conductance.dtype == np.dtype(dtype)
        results[dtype] = crossbar_matmul(x, w, device, np.random.default_rng(1), fast_path=False)
    assert np.any(results["float64"] != x @ w)  # (the noise is there)
    differ = np.abs(results["float32"] - results["float64"])
    level = config.adc_full_scale / (2**config.adc_bits - 1) * 64 * 64
    assert np.count_nonzero(differ) <= 20 and differ.max() <= 2 * level


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


# ---- programming-noise models -----------------------------------------------------------------
def programmed_levels(config, w):
    """Cell levels of an offset-encoded non-negative tile after programming (one array)."""
    return program_tile(w, config, np.random.default_rng(0)).conductance


def test_independent_noise_has_sigma_times_g_max_on_every_level():
    # 2-bit cells, G_max = 3, sigma = 0.02: every cell gets N(0, 0.06), clipped to [0, 3]. Weight 5 is
    # cells (1, 1): mean 1, std 0.06. Weight 0 is cells (0, 0): clipped at 0, so the mean is
    # 0.06 / sqrt(2 pi) = 0.02394 and half the cells stay at exactly 0. Weight 15 = (3, 3) mirrors it.
    config = DeviceConfig(rows=128, cols=128, weight_bits=4, cell_bits=2, encoding="offset")
    noisy = config.replace(prog_noise=0.02, prog_noise_model="independent")
    g = programmed_levels(noisy, np.full((128, 64), 5))
    assert g.mean() == pytest.approx(1, abs=0.002) and g.std() == pytest.approx(0.06, rel=0.03)
    half_normal_mean = 0.06 / np.sqrt(2 * np.pi)
    for weight, level, mean in ((0, 0, half_normal_mean), (15, 3, 3 - half_normal_mean)):
        g = programmed_levels(noisy, np.full((128, 64), weight))
        assert g.mean() == pytest.approx(mean, abs=0.002)
        assert np.mean(g == level) == pytest.approx(0.5, abs=0.02)  # the clipped half
        assert g.min() >= 0 and g.max() <= 3
    # the proportional model leaves zero cells at zero and scales the error with the level
    proportional = config.replace(prog_noise=0.02)
    assert np.all(programmed_levels(proportional, np.zeros((128, 64), np.int64)) == 0)
    assert programmed_levels(proportional, np.full((128, 64), 10)).std() == pytest.approx(0.04, rel=0.03)  # cells (2, 2)


@pytest.mark.parametrize("model", ["independent", "proportional", "table"])
def test_prog_noise_clip_selects_where_conductances_are_clipped(model):
    # weight 15 is cells (3, 3), at G_max = 3: with σ·G_max = 0.3 half of them are pushed above 3.
    # "both" clips them to 3; "zero" keeps them, a half-normal above 3 (mean 3 + 0.3 / sqrt(2π) of
    # that half); "auto" is "both" for the independent and table models and "zero" for proportional
    noise = {"prog_noise_table": (0.1,) * 4} if model == "table" else {"prog_noise": 0.1}
    config = DeviceConfig(rows=128, cols=128, weight_bits=4, cell_bits=2, encoding="offset", prog_noise_model=model, **noise)
    top = {clip: programmed_levels(config.replace(prog_noise_clip=clip), np.full((128, 64), 15)) for clip in PROG_NOISE_CLIPS}
    assert top["both"].max() == 3 and np.mean(top["both"] == 3) == pytest.approx(0.5, abs=0.02)
    above = top["zero"][top["zero"] > 3]
    assert above.size / top["zero"].size == pytest.approx(0.5, abs=0.02)
    assert above.mean() == pytest.approx(3 + 0.3 * np.sqrt(2 / np.pi), abs=0.01)
    np.testing.assert_array_equal(top["auto"], top["zero" if model == "proportional" else "both"])
    np.testing.assert_array_equal(np.minimum(top["zero"], 3), top["both"])  # the same draw, clipped apart
    # both conventions clip at 0: weight 0 is cells (0, 0), half of them pushed below 0
    assert all(programmed_levels(config.replace(prog_noise_clip=c), np.zeros((128, 64), np.int64)).min() == 0 for c in PROG_NOISE_CLIPS)


def test_noise_table_gives_each_level_its_sigma():
    # sigma per level [0, 0.01, 0.03, 0] (in units of G_max = 3): level 0 and 3 exact, level 1 std
    # 0.03, level 2 std 0.09. Weight 9 = cells (1, 2); weight 12 = cells (0, 3).
    config = DeviceConfig(
        rows=128, cols=128, weight_bits=4, cell_bits=2, encoding="offset", prog_noise_model="table",
        prog_noise_table=[0, 0.01, 0.03, 0],
    )
    g = programmed_levels(config, np.full((128, 64), 9)).reshape(128, 64, 2)
    assert g[..., 0].std() == pytest.approx(0.03, rel=0.03) and g[..., 0].mean() == pytest.approx(1, abs=0.002)
    assert g[..., 1].std() == pytest.approx(0.09, rel=0.03) and g[..., 1].mean() == pytest.approx(2, abs=0.005)
    assert np.all(programmed_levels(config, np.full((128, 64), 12)).reshape(128, 64, 2) == [0, 3])


# ---- input encodings --------------------------------------------------------------------------
@pytest.mark.parametrize("input_encoding", ["twos_complement", "sign_magnitude", "bipolar"])
@pytest.mark.parametrize("dac_bits", [1, 2, 3, 8])
def test_input_encodings_are_exact_without_adc_loss(input_encoding, dac_bits):
    config = preset("cinnamon").replace(weight_bits=8, input_bits=8, dac_bits=dac_bits, input_encoding=input_encoding)
    rng = np.random.default_rng(dac_bits)
    x = np.vstack([rng.integers(-128, 128, (4, 128)), rng.integers(0, 256, (4, 128)), np.full((1, 128), -128)])
    w = rng.integers(-255, 256, (128, 32))
    np.testing.assert_array_equal(crossbar_matmul(x, w, config, fast_path=False), x @ w)
    small = x[:4].astype(np.int8)  # the interpreter's int8 operands, -128 included
    small[0, 0] = -128
    np.testing.assert_array_equal(crossbar_matmul(small, w, config, fast_path=False), small.astype(np.int64) @ w)


@pytest.mark.parametrize(
    "input_encoding, dac_bits, slices",
    [
        # 3 rows with a negative entry, 2 without; int8 inputs. offset: 8 / D passes per row;
        # twos_complement: 7 bits in D-bit digits + the sign bit; sign_magnitude: 8 / D per pass,
        # two passes for the 3 signed rows.
        ("offset", 1, 5 * 8),
        ("offset", 2, 5 * 4),
        ("twos_complement", 1, 5 * 8),
        ("twos_complement", 2, 5 * (4 + 1)),
        ("sign_magnitude", 1, 5 * 8 + 3 * 8),
        ("sign_magnitude", 2, 5 * 4 + 3 * 4),
        # bipolar: the digits of |x| (8 bits: |-128| included), signed rows in the same passes
        ("bipolar", 1, 5 * 8),
        ("bipolar", 3, 5 * 3),
        ("bipolar", 8, 5 * 1),
    ],
)
def test_input_encoding_costs(input_encoding, dac_bits, slices):
    config = preset("cinnamon").replace(weight_bits=8, input_bits=8, dac_bits=dac_bits, input_encoding=input_encoding)
    x = np.vstack([np.full((3, 128), -1), np.ones((2, 128), np.int64)])
    device = Device(config)
    device.write(0, np.ones((128, 16), np.int64))
    device.reset_metrics()
    np.testing.assert_array_equal(device.mvm(0, x), x @ np.ones((128, 16), np.int64))
    total = device.report()["total"]
    reads = slices * 2  # both arrays of the pair
    assert (total["input_slices"], total["array_reads"]) == (slices, reads)
    assert total["dac_activations"] == reads * 128
    assert total["adc_conversions"] == reads * 16 * 4  # 16 weights of 4 cells
    assert total["energy_pj"]["adc"] == pytest.approx(reads * 64 * config.adc_pj)
    assert total["busy_cycles"] == config.pipeline_fill_cycles + slices - 1
