"""The ADC conventions, each with values worked out by hand (docs/device-model.md)."""

import numpy as np
import pytest

from cimxdsl.device import Device, DeviceConfig, adc_convert, crossbar_matmul, preset
from cimxdsl.device.crossbar import signed_adc_convert


def column(values):
    """Sums of one read per value: shape (S=1, B, N=1, arrays=1, J=1)."""
    return np.array(values, np.float64).reshape(1, -1, 1, 1, 1)


def test_full_range_spans_the_true_largest_column_sum():
    # cinnamon: F = 128 rows x 3 (2-bit DAC) x 3 (2-bit cell) = 1152; 8 bits: L = 255 steps of 1152/255.
    # 2 -> 0.44 -> 0; 3 -> 0.66 -> 1; 192 -> 42.5 -> 42 (tie, to even); 576 -> 127.5 -> 128 (tie, to
    # even); 1000 -> 221.35 -> 221; 1152 -> 255; 5000 saturates at 255.
    config = preset("cinnamon").replace(adc_bits=8)
    got = adc_convert(column([0, 2, 3, 192, 576, 1000, 1152, 5000]), config).ravel()
    step = 1152 / 255
    expected = [0, 0, step, 42 * step, 128 * step, 221 * step, 1152, 1152]
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_full_pow2_range_has_a_power_of_two_step():
    # F = 1152 < 2**11: 8 bits give a step of 2**3 = 8. 4 -> 0.5 -> 0 and 20 -> 2.5 -> 2 (ties to
    # even), 12 -> 1.5 -> 2; saturation at 255 x 8 = 2040.
    config = preset("cinnamon").replace(adc_bits=8, adc_range="full_pow2")
    got = adc_convert(column([0, 3, 4, 12, 20, 1000, 1152, 5000]), config).ravel()
    np.testing.assert_array_equal(got, [0, 0, 0, 16, 16, 1000, 1152, 2040])


def test_signed_adc_of_the_pair_difference():
    # Signed 8 bits: L = 127 steps of 1152/127 on each side of 0, codes -128..127.
    # 576 -> 63.5 -> 64 and -576 -> -64 (ties to even); 9 -> 0.99 -> 1; -5000 saturates at -128.
    config = preset("cinnamon").replace(adc_bits=8, subtraction="analog")
    sums = np.array([0, 9, 576, -576, 1152, -5000], np.float64).reshape(1, -1, 1, 1)
    step = 1152 / 127
    np.testing.assert_allclose(
        signed_adc_convert(sums, config).ravel(), [0, step, 64 * step, -64 * step, 1152, -128 * step], rtol=1e-12
    )


def test_calibrated_range_is_per_read():
    # 4 bits, L = 15. Each row is one read of 4 columns; the span is that read's largest sum.
    # [30, 7, 0, 16]: step 2 -> levels 15, 3.5 -> 4, 0, 8.   [10, 3, 1, 5]: largest 10 < 15, step 1.
    # [45, 44, 23, 1]: step 3 -> 15, 14.67 -> 15, 7.67 -> 8, 0.33 -> 0.
    # (One span over the whole batch, 45, would read the second row as [9, 3, 0, 6].)
    config = DeviceConfig(rows=4, cols=4, weight_bits=1, cell_bits=1, adc_bits=4, adc_range="calibrated")
    sums = np.array([[30, 7, 0, 16], [10, 3, 1, 5], [45, 44, 23, 1]], np.float64).reshape(1, 3, 4, 1, 1)
    got = adc_convert(sums, config).reshape(3, 4)
    np.testing.assert_array_equal(got, [[30, 8, 0, 16], [10, 3, 1, 5], [45, 45, 24, 0]])


# One 1-bit cell per weight, offset encoding of non-negative weights and one 2-bit DAC digit per
# input: every column sum is simply x . w, converted by a 2-bit ADC (L = 3).
TINY = DeviceConfig(
    rows=4, cols=2, weight_bits=1, cell_bits=1, input_bits=2, dac_bits=2, encoding="offset", adc_bits=2
)
TINY_W = np.array([[1, 1], [1, 0], [1, 0], [1, 0]])


def test_calibrated_mvm_end_to_end():
    # Row [3, 3, 1, 0]: sums [7, 3], span 7 -> levels rint(3), rint(9/7 = 1.29) = 1 -> [7, 7/3] -> [7, 2].
    # Row [1, 0, 0, 0]: sums [1, 1], largest 1 < L: exact [1, 1] (a batch-wide span 7 would give [0, 0]).
    x = np.array([[3, 3, 1, 0], [1, 0, 0, 0]])
    got = crossbar_matmul(x, TINY_W, TINY.replace(adc_range="calibrated"))
    np.testing.assert_array_equal(got, [[7, 2], [1, 1]])


@pytest.mark.parametrize(
    "adc_range, expected",
    [
        # calibration rows [3, 3, 1, 0] and [1, 1, 1, 1]: column sums [7, 3] and [4, 1], so the
        # column maxima are [7, 3] and the array's is 7.
        # test row [1, 0, 0, 0], sums [1, 1]: per array, span 7: rint(3/7) = 0 in both columns;
        # per column, column 1 spans 3 = L: exact. Row [2, 2, 2, 2], sums [8, 2]: column 0
        # saturates at 3 -> 7 either way; column 1: rint(2·3/7 = 0.86) = 1 -> 7/3 -> 2 per array,
        # exact per column.
        ("static_array", [[0, 0], [7, 2]]),
        ("static_column", [[0, 1], [7, 2]]),
    ],
)
def test_static_ranges_come_from_the_calibration_set(adc_range, expected):
    config = TINY.replace(adc_range=adc_range)
    recorder = Device(config, calibrating=True)
    recorder.write(0, TINY_W)
    calibration = np.array([[3, 3, 1, 0], [1, 1, 1, 1]])
    np.testing.assert_array_equal(recorder.mvm(0, calibration), calibration @ TINY_W)  # exact meanwhile
    (spans,) = recorder.adc_spans.values()
    np.testing.assert_array_equal(spans.ravel(), [7, 3])
    device = Device(config, adc_spans=recorder.adc_spans)
    device.write(5, TINY_W)  # the spans follow the weights, not the crossbar
    np.testing.assert_array_equal(device.mvm(5, np.array([[1, 0, 0, 0], [2, 2, 2, 2]])), expected)


def test_static_range_without_calibration_is_a_clear_error():
    device = Device(TINY.replace(adc_range="static_array"))
    device.write(0, TINY_W)
    with pytest.raises(ValueError, match="crossbar 0: the 'static_array' ADC range has no calibration"):
        device.mvm(0, np.ones((1, 4), np.int64))


def test_rounding_is_unbiased():
    """128x64 int8 weights in four 2-bit slices on a differential pair, bit-serial int8 inputs, and a
    9-bit signed ADC of the pair's difference: the errors of many conversions do not add up. (Rounding
    ties up, floor(x + 1/2), makes the mean signed error as large as the mean |error|.)"""
    config = DeviceConfig(
        rows=128, cols=256, weight_bits=8, input_bits=8, cell_bits=2, dac_bits=1, adc_bits=9, subtraction="analog"
    )
    rng = np.random.default_rng(0)
    errors = np.array(
        [
            crossbar_matmul(x, w, config) - x @ w
            for w, x in ((rng.integers(-127, 128, (128, 64)), rng.integers(-128, 128, (16, 128))) for _ in range(20))
        ]
    )
    assert np.abs(errors).mean() > 1000  # lossy enough for the test to say something
    assert abs(errors.mean()) < 0.05 * np.abs(errors).mean()
