"""Per-layer precision on the device model: a tile written at its layer's (weight bits, input bits)
is sliced, read and counted with those bits, checked against an independent NumPy model of the
bit-sliced product (integer arithmetic per weight slice and input digit, shift-and-add)."""

import numpy as np
import pytest

from cimxdsl.device import Device, DeviceConfig

K, N, B = 16, 12, 5


def device(cell_bits: int, dac_bits: int, adc_bits: int = 0, **more) -> DeviceConfig:
    """A small noiseless differential device with offset-encoded inputs, 8-bit by default."""
    return DeviceConfig(
        name="layers", rows=K, cols=128, crossbars=4, weight_bits=8, input_bits=8, cell_bits=cell_bits,
        dac_bits=dac_bits, adc_bits=adc_bits, adc_range="full", encoding="differential",
        input_encoding="offset", **more,
    )


def operands(w_bits: int, a_bits: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric `w_bits`-bit weight codes (a ternary sign for one bit) and unsigned `a_bits`-bit inputs."""
    rng = np.random.default_rng(seed)
    limit = max(2 ** (w_bits - 1) - 1, 1)
    w = rng.integers(-limit, limit + 1, (K, N))
    w[0, 0], w[1, 1] = limit, -limit  # the extremes
    x = rng.integers(0, 2**a_bits, (B, K))
    x[0, :] = 2**a_bits - 1
    return x, w


def sliced_reference(x, w, w_bits, a_bits, cell_bits, dac_bits, adc_bits=0, rows=K):
    """x @ w as a differential crossbar computes it: |w| in ⌈w_bits/cell_bits⌉ cell slices per array,
    x in ⌈a_bits/dac_bits⌉ DAC digits, each (digit, slice) column sum through an ADC of `adc_bits`
    (0: lossless) whose span is the layer's largest column sum, then shift-and-add."""
    slices, digits = -(-w_bits // cell_bits), -(-a_bits // dac_bits)
    cell_top, dac_top = 2 ** min(cell_bits, w_bits) - 1, 2 ** min(dac_bits, a_bits) - 1
    span = rows * dac_top * cell_top
    steps = 2**adc_bits - 1
    total = np.zeros((x.shape[0], w.shape[1]))
    for p in range(digits):
        digit = (x >> (p * dac_bits)) & (2**dac_bits - 1)
        for j in range(slices):
            for sign, part in ((1, np.maximum(w, 0)), (-1, np.maximum(-w, 0))):
                sums = digit @ ((part >> (j * cell_bits)) & (2**cell_bits - 1))
                if adc_bits and span > steps:
                    sums = np.clip(np.rint(sums * steps / span), 0, steps) * span / steps
                total += sign * 2.0 ** (p * dac_bits + j * cell_bits) * sums
    return np.rint(total).astype(np.int64)


@pytest.mark.parametrize("cell_bits", [1, 2, 4])
@pytest.mark.parametrize("dac_bits", [1, 2])
@pytest.mark.parametrize(("w_bits", "a_bits"), [(1, 1), (2, 3), (4, 4), (3, 8), (8, 2)])
def test_exact_layer_precision_is_the_sliced_integer_product(cell_bits, dac_bits, w_bits, a_bits):
    """An ADC wide enough for the layer's span: the sliced product equals the reference bit for bit,
    and both equal x @ w."""
    x, w = operands(w_bits, a_bits, seed=cell_bits * 10 + dac_bits)
    dev = Device(device(cell_bits, dac_bits, adc_bits=16))
    dev.write(0, w, (w_bits, a_bits))
    got = dev.mvm(0, x)
    np.testing.assert_array_equal(got, sliced_reference(x, w, w_bits, a_bits, cell_bits, dac_bits))
    np.testing.assert_array_equal(got, x @ w)


@pytest.mark.parametrize(("cell_bits", "dac_bits"), [(1, 1), (2, 2), (4, 1)])
@pytest.mark.parametrize(("w_bits", "a_bits"), [(2, 2), (4, 4), (8, 8)])
def test_lossy_adc_span_follows_the_layer_bits(cell_bits, dac_bits, w_bits, a_bits):
    """A 3-bit ADC whose full-scale span is the layer's largest column sum (its bits' cell and DAC
    levels): the device rounds as the reference does (ties of the final rounding may differ by one)."""
    x, w = operands(w_bits, a_bits, seed=7)
    dev = Device(device(cell_bits, dac_bits, adc_bits=3))
    dev.write(1, w, (w_bits, a_bits))
    got = dev.mvm(1, x)
    want = sliced_reference(x, w, w_bits, a_bits, cell_bits, dac_bits, adc_bits=3)
    assert np.abs(got - want).max() <= 1
    assert np.mean(got == want) > 0.95


@pytest.mark.parametrize(("cell_bits", "dac_bits"), [(1, 1), (2, 1), (4, 2)])
def test_metrics_follow_each_layers_bits(cell_bits, dac_bits):
    """Two layers of different bits on one device: each write and MVM counts its own cells
    (⌈w/c⌉ per weight and array), input slices (⌈a/d⌉ per row) and ADC conversions."""
    dev = Device(device(cell_bits, dac_bits, adc_bits=16, adc_pj=1.0, write_pj_per_cell=1.0))
    layers = {0: (8, 8), 1: (3, 2)}
    for xbar, (w_bits, a_bits) in layers.items():
        x, w = operands(w_bits, a_bits, seed=xbar)
        dev.write(xbar, w, (w_bits, a_bits))
        np.testing.assert_array_equal(dev.mvm(xbar, x), x @ w)
    report = dev.report()["crossbars"]
    for xbar, (w_bits, a_bits) in layers.items():
        slices, digits = -(-w_bits // cell_bits), -(-a_bits // dac_bits)
        assert report[xbar]["cells_written"] == K * N * slices * 2
        assert report[xbar]["input_slices"] == digits * B
        assert report[xbar]["adc_conversions"] == digits * B * 2 * N * slices
        assert report[xbar]["busy_cycles"] == dev.config.pipeline_fill_cycles + digits * B - 1
    assert report[1]["energy_pj"]["total"] < report[0]["energy_pj"]["total"]


def test_a_tile_held_at_another_precision_is_written_again():
    dev = Device(device(2, 1, adc_bits=16))
    x, w = operands(4, 4, seed=3)
    dev.write(0, w, (8, 8))
    assert dev.holds(0, w, (8, 8)) and not dev.holds(0, w, (4, 4))
    assert dev.config_of(0).cells_per_weight == 4
    dev.write(0, w, (4, 4))
    assert dev.config_of(0).cells_per_weight == 2 and dev.holds(0, w, (4, 4))


def test_a_weight_beyond_the_layers_bits_is_an_error():
    dev = Device(device(2, 1))
    with pytest.raises(ValueError, match=r"crossbar 0: weight 5 does not fit 2-bit differential encoding"):
        dev.write(0, np.full((2, 2), 5), (2, 2))
    dev.write(0, np.ones((2, 2), np.int64), (2, 2))
    with pytest.raises(ValueError, match=r"input 4 \(row 0\) does not fit 2-bit inputs"):
        dev.mvm(0, np.full((1, 2), 4))
