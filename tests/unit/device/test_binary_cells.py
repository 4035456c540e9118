"""Binary cells (LRS/HRS with a finite on/off ratio) and the weight mappings of binary and ternary
networks, against a NumPy model of the currents written from the conductances."""

import numpy as np
import pytest

from cimxdsl.device import DeviceConfig, crossbar_matmul

ROWS, COLS, K, N = 32, 16, 30, 10


def binary_device(mapping: str, adc_bits: int, ratio: float, **changes) -> DeviceConfig:
    encoding, subtraction = {
        "pair": ("differential", "digital"),
        "pair_analog": ("differential", "analog"),
        "reference": ("reference", "digital"),
    }[mapping]
    return DeviceConfig(
        rows=ROWS, cols=COLS, weight_bits=1, input_bits=1, cell_bits=1, dac_bits=1, adc_bits=adc_bits,
        encoding=encoding, subtraction=subtraction, input_encoding="bipolar", on_off_ratio=ratio, **changes,
    )  # fmt: skip


def adc(s: np.ndarray, bits: int) -> np.ndarray:
    """A signed `bits`-bit ADC over ±ROWS level steps (bipolar inputs make every sum signed)."""
    if bits == 0:
        return s
    steps = 2 ** (bits - 1) - 1
    span = max(ROWS, steps)
    return np.clip(np.rint(s * steps / span), -steps - 1, steps) * span / steps


def reference_product(x, w, mapping, bits, ratio):
    """x @ w as the currents of the mapped cells, in units of G_LRS - G_HRS, through the ADC."""
    g_lrs = 1.0
    g_hrs = 0.0 if ratio == 0 else 1.0 / ratio
    unit = g_lrs - g_hrs
    x = x.astype(np.float64)
    if mapping == "reference":  # one cell per weight against a column of (G_LRS + G_HRS) / 2 cells
        cell = np.where(w > 0, g_lrs, g_hrs)
        difference = (x @ cell - x.sum(axis=1, keepdims=True) * (g_lrs + g_hrs) / 2) / (unit / 2)
        return np.rint(adc(difference, bits)).astype(np.int64)
    plus = x @ np.where(w > 0, g_lrs, g_hrs) / unit  # +1: LRS/HRS, -1: HRS/LRS, 0: HRS/HRS
    minus = x @ np.where(w < 0, g_lrs, g_hrs) / unit
    if mapping == "pair_analog":
        return np.rint(adc(plus - minus, bits)).astype(np.int64)
    return np.rint(adc(plus, bits) - adc(minus, bits)).astype(np.int64)


@pytest.mark.parametrize("mapping", ["pair", "pair_analog", "reference"])
@pytest.mark.parametrize("bits", [0, 3, 5])
@pytest.mark.parametrize("ratio", [0.0, 1 + np.pi])  # an irrational HRS current: no sum on an ADC tie
def test_mappings_match_the_conductance_model(mapping, bits, ratio):
    rng = np.random.default_rng(bits)
    ternary = mapping != "reference"
    w = rng.choice([-1, 0, 1] if ternary else [-1, 1], size=(K, N))
    x = rng.choice([-1, 0, 1], size=(7, K))
    config = binary_device(mapping, bits, ratio)
    got = crossbar_matmul(x, w, config, fast_path=False)
    np.testing.assert_array_equal(got, reference_product(x, w, mapping, bits, ratio))
    if bits == 0:  # lossless: the HRS current cancels, the product is exact
        np.testing.assert_array_equal(got, x @ w)


@pytest.mark.parametrize("mapping", ["pair", "pair_analog", "reference"])
@pytest.mark.parametrize("bits", [3, 5])
@pytest.mark.parametrize("ratio", [10.0, 3.0])  # rational HRS currents: ±1 inputs put sums on ADC ties
def test_a_row_reads_the_same_alone_as_in_a_batch(mapping, bits, ratio):
    # The HRS current enters as h·Σx beside the exact integer sums of the levels, so a row's result
    # does not depend on the order in which a batched product adds its cells.
    rng = np.random.default_rng(int(ratio) + bits)
    w = rng.choice([-1, 0, 1] if mapping != "reference" else [-1, 1], size=(ROWS, N))
    x = rng.choice([-1, 0, 1], size=(301, ROWS))
    config = binary_device(mapping, bits, ratio)
    batch = crossbar_matmul(x, w, config, fast_path=False)
    alone = np.concatenate([crossbar_matmul(x[i : i + 1], w, config, fast_path=False) for i in range(len(x))])
    np.testing.assert_array_equal(batch, alone)


@pytest.mark.parametrize("mapping", ["pair", "pair_analog", "reference"])
def test_the_smallest_lossless_adc_is_exact_and_one_bit_fewer_is_not(mapping):
    config = binary_device(mapping, 0, 0.0)
    bits = config.lossless_adc_bits
    assert bits == (ROWS).bit_length() + 1  # signed sums of up to ±ROWS
    x = np.ones((1, ROWS), np.int64)
    w = np.ones((ROWS, 2), np.int64)
    w[: ROWS // 4, 1] = -1  # a column sum of ROWS / 2, besides the full-scale one
    np.testing.assert_array_equal(crossbar_matmul(x, w, config.replace(adc_bits=bits), fast_path=False), x @ w)
    fewer = crossbar_matmul(x, w, config.replace(adc_bits=bits - 1), fast_path=False)
    assert not np.array_equal(fewer, x @ w)


def test_lrs_variability_spreads_the_pair_as_sigma_times_root_k():
    # Only the LRS cells vary (σ in units of G_LRS - G_HRS): every weight has one LRS cell in the
    # pair, so with inputs of all ones each column's error has variance K σ².
    sigma = 0.2
    config = binary_device(
        "pair", 0, 0.0, prog_noise_model="table", prog_noise_table=(0.0, sigma), prog_noise_clip="zero"
    )
    rng = np.random.default_rng(0)
    w = rng.choice([-1, 1], size=(ROWS, 8))
    x = np.ones((1, ROWS), np.int64)
    errors = np.concatenate(
        [
            crossbar_matmul(x, w, config.replace(seed=seed, adc_bits=0), np.random.default_rng(seed), fast_path=False)[
                0
            ]
            - (x @ w)[0]
            for seed in range(50)
        ]
    )
    # the sliced model rounds each result to an integer: a uniform error of variance 1/12 on top
    expected = np.sqrt(ROWS * sigma**2 + 1 / 12)
    assert abs(errors.std() - expected) < 0.2 * expected


def test_reference_noise_is_one_draw_per_row_shared_by_the_columns():
    config = binary_device("reference", 0, 0.0, reference_noise=0.3)
    w = np.ones((ROWS, 6), np.int64)
    x = np.ones((1, ROWS), np.int64)
    y = crossbar_matmul(x, w, config, np.random.default_rng(0), fast_path=False)
    assert len(set(y[0].tolist())) == 1  # every column sees the same reference column
    assert y[0, 0] != ROWS  # and its error


def test_a_non_binary_weight_on_the_reference_mapping_is_one_line():
    config = binary_device("reference", 0, 0.0)
    with pytest.raises(
        ValueError, match=r"^weight 0 is not binary: the 'reference' encoding holds weights -1 and \+1 only$"
    ):
        crossbar_matmul(np.ones((1, 2), np.int64), np.array([[1, 0], [-1, 1]]), config)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"on_off_ratio": 0.5}, "'on_off_ratio' must be 0 (ideal) or above 1, got 0.5"),
        ({"on_off_ratio": 10.0, "encoding": "offset"}, "'on_off_ratio' needs an encoding that cancels"),
        ({"encoding": "reference", "cell_bits": 2}, "'encoding'='reference' holds binary weights in 1-bit cells"),
        ({"encoding": "reference", "wire_resistance": 1e-4}, "'encoding'='reference' is not modelled with wire"),
    ],
)
def test_binary_mode_config_errors_name_the_key(changes, message):
    with pytest.raises(ValueError, match="^device config: " + message.replace("(", r"\(").replace(")", r"\)")):
        DeviceConfig(**{"weight_bits": 1, "cell_bits": 1, **changes})


@pytest.mark.parametrize(("fault", "shift"), [(1, -1), (-1, 1)], ids=["stuck-on", "stuck-off"])
def test_a_stuck_reference_cell_shifts_every_column_by_its_row_input(fault, shift):
    # The reference column is the crossbar's last column, one cell per row. Stuck on (LRS) its row
    # r reads x_r (w - 1) instead of x_r w, stuck off (HRS) x_r (w + 1): every column moves by ∓x_r.
    from cimxdsl.device.crossbar import draw_stuck_cells, program_tile, tile_mvm

    config = binary_device("reference", 0, 10.0, stuck_on_rate=1e-12)  # faults from the map below
    rng = np.random.default_rng(1)
    w = rng.choice([-1, 1], (K, N))
    x = rng.choice([-1, 0, 1], (4, K))
    stuck = np.zeros_like(draw_stuck_cells(config.replace(stuck_on_rate=0.5), rng))
    row = 7
    stuck[row, 0, COLS - 1] = fault
    got = tile_mvm(program_tile(w, config, rng, stuck), x, config, rng, fast_path=False)
    np.testing.assert_array_equal(got, x @ w + shift * x[:, [row]])


def test_the_reference_column_is_counted_in_the_cells_written():
    from cimxdsl.device import Device

    for mapping, cells in (("reference", K * N + K), ("pair", 2 * K * N)):
        device = Device(binary_device(mapping, 0, 10.0))
        device.write(0, np.ones((K, N), np.int64))
        assert device.report(per_crossbar=False)["total"]["cells_written"] == cells
