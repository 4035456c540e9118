"""IR drop, conductance drift with compensation, and correlated and converter-referred read noise,
each against a NumPy reference written out here."""

import itertools

import numpy as np
import pytest

from cimxdsl.device import (
    Device,
    DeviceConfig,
    DeviceConfigError,
    calibrate_tile,
    crossbar_matmul,
    preset,
    program_tile,
    tile_mvm,
)
from cimxdsl.device.drift import pcm_drift_tables
from cimxdsl.device.parasitics import Wires, approximate_conductance, effective_conductance, exact_conductance


def one_pass(bits=4, **changes):
    """A small differential device with one cell per weight and one input pass, lossless."""
    config = DeviceConfig(
        rows=32, cols=16, weight_bits=bits, cell_bits=bits, input_bits=bits, dac_bits=bits, adc_bits=0
    )
    return config.replace(**changes)


# ---- IR drop --------------------------------------------------------------------------------------
def kirchhoff(g, v, r_row, r_col, r_source, r_sink):
    """The column currents of a crossbar with resistive wires, by Kirchhoff's current law at every
    row node and column node, written out one node at a time and solved densely. Row i is driven
    with v[i] through r_source and a segment; cells of a row and of a column are joined by
    segments; a column reaches its ADC (0 V) after its last row through a segment and r_sink.
    Rows (columns) with no resistance at all are held at v[i] (0 V). The output is the current
    through each ADC's input (for held columns: the sum of the cell currents)."""
    k, c = g.shape
    a, b = np.zeros((2 * k * c, 2 * k * c)), np.zeros(2 * k * c)

    def row(i, j):
        return i * c + j

    def col(i, j):
        return k * c + i * c + j

    def join(p, q, conductance):
        a[p, p] += conductance
        a[q, q] += conductance
        a[p, q] -= conductance
        a[q, p] -= conductance

    for i in range(k):
        if r_source + r_row:
            a[row(i, 0), row(i, 0)] += 1 / (r_source + r_row)
            b[row(i, 0)] += v[i] / (r_source + r_row)
        for j in range(c):
            if j and r_row:
                join(row(i, j - 1), row(i, j), 1 / r_row)
            if i and r_col:
                join(col(i - 1, j), col(i, j), 1 / r_col)
            join(row(i, j), col(i, j), g[i, j])
    for j in range(c):
        if r_col + r_sink:
            a[col(k - 1, j), col(k - 1, j)] += 1 / (r_col + r_sink)
    held = {}
    if r_row == r_source == 0:
        held.update({row(i, j): v[i] for i in range(k) for j in range(c)})
    if r_col == r_sink == 0:
        held.update({col(i, j): 0.0 for i in range(k) for j in range(c)})
    for node, volts in held.items():  # a held node's equation: V = volts
        a[node] = 0.0
        a[node, node] = 1.0
        b[node] = volts
    x = np.linalg.solve(a, b)
    if r_col == r_sink == 0:
        return np.array([sum(g[i, j] * (x[row(i, j)] - x[col(i, j)]) for i in range(k)) for j in range(c)])
    return np.array([x[col(k - 1, j)] / (r_col + r_sink) for j in range(c)])


WIRES = [
    (0.02, 0.03, 0.05, 0.04),
    (0.1, 0.1, 0.0, 0.0),
    (0.05, 0.01, 0.2, 0.3),
    (0.05, 0.0, 0.1, 0.0),  # rows only: the columns at 0 V
    (0.01, 0.3, 0.0, 1.0),
    (0.0, 0.1, 0.0, 0.05),  # columns only: the rows at their drive
]


@pytest.mark.parametrize("wires", WIRES)
def test_exact_solve_matches_kirchhoff_by_hand(wires):
    rng = np.random.default_rng(1)
    g = rng.integers(0, 4, (4, 4)).astype(float)
    g[0, 0] = 0  # an empty cell
    v = rng.random((3, 4))
    effective = exact_conductance(g, Wires(*wires))
    for volts in v:
        np.testing.assert_allclose(volts @ effective, kirchhoff(g, volts, *wires), rtol=1e-10, atol=1e-12)


def test_wires_without_resistance_merge_their_nodes():
    """A row (column) without segment resistance is one node: the limit of vanishing segments."""
    g = np.random.default_rng(9).integers(0, 4, (6, 5)).astype(float)
    for merged, limit in (
        (Wires(0, 0.05, 0.2, 0), Wires(1e-9, 0.05, 0.2, 0)),
        (Wires(0.05, 0, 0, 0.3), Wires(0.05, 1e-9, 0, 0.3)),
    ):
        np.testing.assert_allclose(exact_conductance(g, merged), exact_conductance(g, limit), rtol=1e-6)
        assert np.abs(exact_conductance(g, merged) - g).max() > 0.01


@pytest.mark.parametrize("shape", [(32, 32), (48, 24), (64, 64)])
def test_fast_method_against_the_exact_solve(shape):
    """The approximation is exact with ideal columns (each row a ladder); otherwise its error is of
    second order in the drop: below 5 % of drop², for drops of 7 to 55 % of the current."""
    rng = np.random.default_rng(sum(shape))
    g = rng.integers(0, 4, shape).astype(float)
    x = rng.integers(0, 2, (16, shape[0])).astype(float)
    rows_only = Wires(3e-3, 0.0, 1e-2, 0.0)
    np.testing.assert_allclose(approximate_conductance(g, rows_only), exact_conductance(g, rows_only), rtol=1e-9)
    for wires in (
        Wires(1e-4, 1e-4, 0, 0),
        Wires(1e-4, 1e-4, 0, 1e-3),
        Wires(3e-5, 1e-4, 1e-4, 1e-4),
        Wires(3e-4, 3e-4, 0, 0),
    ):
        exact, fast = x @ exact_conductance(g, wires), x @ approximate_conductance(g, wires)
        drop = np.abs(x @ g - exact).mean() / np.abs(x @ g).mean()
        assert 0.07 < drop < 0.55
        assert np.abs(fast - exact).mean() / np.abs(exact).mean() < 0.05 * drop**2


def test_solver_choice():
    g = np.random.default_rng(2).integers(0, 4, (70, 70)).astype(float)
    wires = Wires(1e-3, 1e-3, 0, 0)
    np.testing.assert_array_equal(effective_conductance(g, wires, "fast"), approximate_conductance(g, wires))
    np.testing.assert_array_equal(effective_conductance(g, wires, "auto"), approximate_conductance(g, wires))
    np.testing.assert_array_equal(effective_conductance(g[:8, :8], wires, "auto"), exact_conductance(g[:8, :8], wires))
    assert effective_conductance(g, Wires(0, 0, 0, 0)) is g


@pytest.mark.parametrize("subtraction", ["digital", "analog"])
def test_ir_drop_on_the_device_matches_the_circuit(subtraction):
    """A 4×4 differential pair of 2-bit cells, inputs in one unsigned pass, lossless ADC: each array's
    column currents are its circuit's (resistances in units of 1 / G_max = 1/3 cell step)."""
    r_row, r_col, r_source, r_sink = 0.03, 0.06, 0.1, 0.2
    wires = dict(
        row_wire_resistance=r_row, col_wire_resistance=r_col, source_resistance=r_source, sink_resistance=r_sink
    )
    config = one_pass(2, rows=4, cols=4, subtraction=subtraction, ir_drop_solver="exact", **wires)
    rng = np.random.default_rng(3)
    w, x = rng.integers(-3, 4, (4, 4)), rng.integers(0, 4, (5, 4))
    resistances = [r / 3 for r in (r_row, r_col, r_source, r_sink)]
    expected = [
        kirchhoff(np.maximum(w, 0).astype(float), row, *resistances)
        - kirchhoff(np.maximum(-w, 0).astype(float), row, *resistances)
        for row in x
    ]
    np.testing.assert_array_equal(crossbar_matmul(x, w, config), np.rint(expected))
    assert np.abs(crossbar_matmul(x, w, config) - x @ w).max() > 0


@pytest.mark.parametrize("encoding", ["differential", "offset"])
def test_ir_drop_grows_with_wire_resistance(encoding):
    rng = np.random.default_rng(4)
    w, x = rng.integers(-127, 128, (64, 16)), rng.integers(-128, 128, (8, 64))
    base = preset("cinnamon").replace(weight_bits=8, input_bits=8, rows=64, cols=64, encoding=encoding)
    errors = [
        np.abs(crossbar_matmul(x, w, base.replace(wire_resistance=r)) - x @ w).mean() for r in (0, 1e-5, 1e-4, 1e-3)
    ]
    assert errors[0] == 0 and all(a < b for a, b in itertools.pairwise(errors))


# ---- drift ------------------------------------------------------------------------------------------
def test_uniform_drift_and_its_global_compensation():
    rng = np.random.default_rng(5)
    w, x = rng.integers(-15, 16, (32, 16)), rng.integers(0, 16, (6, 32))
    config = one_pass(drift_nu=0.06, drift_t0_s=20.0, drift_time_s=20.0 * 3600)
    np.testing.assert_array_equal(crossbar_matmul(x, w, config), np.rint(3600**-0.06 * (x @ w)))
    for compensation in ("global", "column"):
        np.testing.assert_array_equal(crossbar_matmul(x, w, config.replace(drift_compensation=compensation)), x @ w)
    assert one_pass(drift_nu=0.06, drift_t0_s=20.0, drift_time_s=20.0).noiseless


@pytest.mark.parametrize("compensation", ["none", "global", "column"])
def test_drift_by_conductance_level_with_compensation(compensation):
    """ν per level (no spread): every cell drifts by its level's factor; the compensation factors
    are the reference reads' (all rows at 1) ratios, per column or summed over the tile."""
    table = (0.0, 0.1, 0.05, 0.02)
    config = one_pass(2, rows=16, cols=8, input_bits=3, dac_bits=3, drift_nu_table=table, drift_time_s=1e5)
    config = config.replace(drift_compensation=compensation)
    rng = np.random.default_rng(6)
    w, x = rng.integers(-3, 4, (16, 8)), rng.integers(0, 8, (5, 16))
    factor = 1e5 ** -np.asarray(table)
    p, m = np.maximum(w, 0), np.maximum(-w, 0)
    pt, mt = p * factor[p], m * factor[m]
    analog = x @ (pt - mt)
    gain = {
        "none": 1.0,
        "global": (p + m).sum() / (pt + mt).sum(),
        "column": (p + m).sum(axis=0) / (pt + mt).sum(axis=0),
    }[compensation]
    np.testing.assert_array_equal(crossbar_matmul(x, w, config), np.rint(analog * gain))


def test_drift_exponent_spread_per_cell():
    mean, std, t = 0.05, 0.02, 1e6
    config = DeviceConfig(
        rows=128, cols=128, weight_bits=2, cell_bits=2, drift_nu=mean, drift_nu_std=std, drift_time_s=t, seed=3
    )
    w = np.full((128, 128), 3)
    g = program_tile(w, config, np.random.default_rng(0)).conductance.reshape(128, 128, 2)[:, :, 0]
    nu = -np.log(g / 3) / np.log(t)
    assert nu.mean() == pytest.approx(mean, abs=4 * std / 128)
    assert nu.std() == pytest.approx(std, rel=0.05)
    assert nu.min() >= 0


def drifted_exponents(means, stds, t=1e6, seed=3):
    """ν of every cell of a 128×128 array of 2-bit cells holding levels 1, 2, 3 in turn, measured
    back from its conductance at t: -ln(g / level) / ln t. (levels, ν), one entry per cell."""
    config = DeviceConfig(
        rows=128,
        cols=128,
        weight_bits=2,
        cell_bits=2,
        drift_nu_table=means,
        drift_nu_std_table=stds,
        drift_time_s=t,
        seed=seed,
    )
    w = np.tile(np.arange(1, 4), (128, 43))[:, :128]
    g = program_tile(w, config, np.random.default_rng(seed)).conductance.reshape(128, 128, 2)[:, :, 0]
    return w.ravel(), (-np.log(g / w) / np.log(t)).ravel()


def test_drift_exponent_statistics_per_level():
    """Mean and spread of ν per conductance level (`drift_nu_table`, `drift_nu_std_table`): each
    level's sample mean within 4 standard errors (σ / √n) of its configured mean, its sample σ
    within 4 standard errors of σ (σ / √(2n)); means ≥ 5σ, so the clip at 0 is negligible."""
    means, stds = (0.0, 0.2, 0.1, 0.03), (0.0, 0.04, 0.02, 0.006)
    levels, nu = drifted_exponents(means, stds)
    for level in (1, 2, 3):
        sample = nu[levels == level]
        n = sample.size
        assert n > 5000
        assert sample.mean() == pytest.approx(means[level], abs=4 * stds[level] / np.sqrt(n))
        assert sample.std() == pytest.approx(stds[level], abs=4 * stds[level] / np.sqrt(2 * n))
    levels, nu = drifted_exponents(means, ())  # means by level, no spread
    np.testing.assert_allclose(nu, np.asarray(means)[levels], rtol=1e-9)


def test_pcm_drift_tables_follow_the_published_fit():
    """Nandakumar et al. 2019's fit of ν against the target conductance g_T = level / G_max,
    evaluated here by hand: μ = clip(-0.0155 ln g_T + 0.0244, 0.049, 0.1), σ = clip(-0.0125 ln g_T
    - 0.0059, 0.008, 0.045)."""
    means, stds = pcm_drift_tables(4)
    assert len(means) == len(stds) == 16
    assert (means[0], stds[0]) == (0.1, 0.045)  # g_T -> 0: both at their upper clips
    ln = np.log(1 / 15)  # level 1 of 15
    assert means[1] == pytest.approx(-0.0155 * ln + 0.0244) and stds[1] == pytest.approx(-0.0125 * ln - 0.0059)
    assert means[15] == 0.049 and stds[15] == 0.008  # g_T = 1: both at their lower clips
    assert pcm_drift_tables(2) == ((0.1, 0.049, 0.049, 0.049), (0.045, 0.008, 0.008, 0.008))


def static_column_device(**changes):
    lossy = dict(rows=32, cols=16, input_bits=4, dac_bits=2, adc_bits=4, adc_range="static_column")
    return one_pass(2, **{**lossy, **changes})


@pytest.mark.parametrize("compensation", ["global", "column"])
def test_compensation_rescales_the_static_adc_spans(compensation):
    """Drift that halves every conductance exactly (ν = 1 from t₀ = 1 s to 2 s): compensated with
    the spans rescaled by the reference read, a lossy static ADC converts the halved sums to the
    same levels as the undrifted ones, so the outputs are the undrifted device's bit for bit; with
    the spans fixed at t₀ the ADC loses a bit and the outputs differ."""
    rng = np.random.default_rng(7)
    w, x = rng.integers(-3, 4, (32, 16)), rng.integers(0, 16, (40, 32))
    fresh = static_column_device()
    spans = calibrate_tile(fresh, w, x)[next(iter(calibrate_tile(fresh, w, x)))]
    expected = tile_mvm(program_tile(w, fresh), x, fresh, spans=spans)
    drifted = fresh.replace(drift_nu=1.0, drift_time_s=2.0, drift_compensation=compensation)
    rescaled = tile_mvm(program_tile(w, drifted), x, drifted, spans=spans)
    np.testing.assert_array_equal(rescaled, expected)
    fixed = drifted.replace(drift_adc_spans="fixed")
    outputs = tile_mvm(program_tile(w, fixed), x, fixed, spans=spans)
    assert np.abs(outputs - x @ w).mean() > np.abs(expected - x @ w).mean()


@pytest.mark.parametrize("compensation", ["global", "column"])
def test_the_compensation_reference_read_sees_the_wires(compensation):
    """A 4×4 differential pair with resistive wires, uniform drift: the reference read (all rows
    at 1 V, at t₀ and at t) goes through the same circuit (the hand-written Kirchhoff solve) as the
    inputs, so the factor is the ratio of the effective conductances' sums, not 1 / drift."""
    r_row, r_col, r_source, r_sink = 0.05, 0.1, 0.1, 0.2
    wires = dict(
        row_wire_resistance=r_row, col_wire_resistance=r_col, source_resistance=r_source, sink_resistance=r_sink
    )
    factor = 1e4**-0.1
    config = one_pass(2, rows=4, cols=4, ir_drop_solver="exact", drift_nu=0.1, drift_time_s=1e4, **wires)
    config = config.replace(drift_compensation=compensation)
    rng = np.random.default_rng(8)
    w, x = rng.integers(-3, 4, (4, 4)), rng.integers(0, 4, (6, 4))
    resistances = [r / 3 for r in (r_row, r_col, r_source, r_sink)]

    def effective(g):  # row i of G_eff: the column currents with row i alone at 1 V
        return np.array([kirchhoff(g.astype(float), row, *resistances) for row in np.eye(4)])

    p, m = np.maximum(w, 0), np.maximum(-w, 0)
    before, after = effective(p) + effective(m), effective(p * factor) + effective(m * factor)
    gain = before.sum() / after.sum() if compensation == "global" else before.sum(axis=0) / after.sum(axis=0)
    analog = x @ (effective(p * factor) - effective(m * factor))
    outputs = crossbar_matmul(x, w, config)
    np.testing.assert_array_equal(outputs, np.rint(analog * gain))
    assert np.abs(gain - 1 / factor).max() > 0.01 / factor  # the wires change the factor


def test_static_spans_are_calibrated_through_the_wires():
    """The calibration device keeps the wires (they do not change over time), so the static spans
    are the largest column currents of the circuit's effective conductances, and devices that
    differ in their wires do not share a calibration."""
    r = 0.1
    config = static_column_device(rows=4, cols=4, wire_resistance=r, ir_drop_solver="exact", prog_noise=0.05)
    assert config.nominal.wires == config.wires and config.nominal.prog_noise == 0
    assert config.calibration_key != config.without_wires.calibration_key
    rng = np.random.default_rng(9)
    w, x = rng.integers(-3, 4, (4, 4)), rng.integers(0, 16, (10, 4))
    spans = next(iter(calibrate_tile(config, w, x).values()))  # (N, arrays, J)
    digits = np.concatenate([x & 3, x >> 2])  # the two 2-bit input passes

    def effective(g):
        return np.array([kirchhoff(g.astype(float), row, r / 3, r / 3, 0.0, 0.0) for row in np.eye(4)])

    expected = [np.abs(digits @ effective(np.maximum(s * w, 0))).max(axis=0) for s in (1, -1)]
    np.testing.assert_allclose(spans[:, :, 0], np.stack(expected, axis=-1), rtol=1e-9)


def test_drift_bad_input():
    with pytest.raises(DeviceConfigError, match=r"^device config: 'drift_time_s' must be at least 'drift_t0_s'"):
        one_pass(drift_nu=0.05, drift_t0_s=10.0, drift_time_s=5.0)
    with pytest.raises(DeviceConfigError, match=r"^device config: 'drift_nu' must be a non-negative number"):
        one_pass(drift_nu=-0.1)
    with pytest.raises(DeviceConfigError, match=r"'drift_nu_std'"):
        one_pass(drift_nu_std=-0.1)
    with pytest.raises(DeviceConfigError, match=r"'drift_nu_table' must be a list of non-negative numbers"):
        one_pass(drift_nu_table=[0.1] * 15 + [-0.1])
    with pytest.raises(DeviceConfigError, match=r"'drift_nu_table' must list one value per conductance level \(16"):
        one_pass(drift_nu_table=[0.1, 0.2])
    with pytest.raises(DeviceConfigError, match=r"'drift_nu_std_table' must list one value per conductance level"):
        one_pass(drift_nu_std_table=[0.01])
    with pytest.raises(DeviceConfigError, match=r"'drift_nu_std_table' must be a list of non-negative numbers"):
        one_pass(drift_nu_std_table=[0.01] * 15 + [-0.01])
    with pytest.raises(
        DeviceConfigError, match=r"^device config: 'drift_adc_spans' must be one of 'rescaled', 'fixed'"
    ):
        one_pass(drift_adc_spans="tracking")
    with pytest.raises(
        DeviceConfigError, match=r"^device config: 'drift_compensation' must be one of 'none', 'global', 'column'"
    ):
        one_pass(drift_compensation="per_row")


def test_wire_bad_input():
    for key in (
        "wire_resistance",
        "row_wire_resistance",
        "col_wire_resistance",
        "source_resistance",
        "sink_resistance",
    ):
        with pytest.raises(
            DeviceConfigError, match=rf"^device config: '{key}' must be a non-negative number, got -0.1$"
        ):
            one_pass(**{key: -0.1})


# ---- read noise -------------------------------------------------------------------------------------
def test_input_noise_is_shared_by_the_cells_of_a_row():
    """The DAC noise e_k of row k reaches both arrays and every column: the error of column n is
    Σ_k W_kn e_k, with covariance (σ D)² W_n·W_m between columns."""
    sigma, reads = 0.05, 6000
    config = one_pass(input_noise=sigma, seed=4)
    rng = np.random.default_rng(7)
    w = rng.integers(-15, 16, (32, 3))
    x = np.repeat(rng.integers(0, 16, (1, 32)), reads, axis=0)
    error = crossbar_matmul(x, w, config) - x @ w
    expected = (sigma * 15) ** 2 * (w.T @ w)
    np.testing.assert_allclose(np.cov(error.T), expected, rtol=0.1, atol=0.05 * expected.max())
    assert np.abs(error.mean(axis=0)).max() < 5 * np.sqrt(expected.diagonal().max() / reads)


@pytest.mark.parametrize(("subtraction", "conversions"), [("digital", 2), ("analog", 1)])
def test_output_noise_per_conversion(subtraction, conversions):
    """σ top-level cells at the top DAC level per conversion: a pair converted apart adds two."""
    sigma, reads = 0.2, 6000
    config = one_pass(output_noise=sigma, subtraction=subtraction, seed=5)
    rng = np.random.default_rng(8)
    w, x = rng.integers(-15, 16, (32, 4)), np.repeat(rng.integers(0, 16, (1, 32)), reads, axis=0)
    error = crossbar_matmul(x, w, config) - x @ w
    expected = sigma * 15 * 15 * np.sqrt(conversions)
    np.testing.assert_allclose(error.std(axis=0), expected, rtol=0.06)
    assert abs(np.corrcoef(error.T)[0, 1]) < 0.1  # independent per column


def test_one_over_f_noise_is_frozen_over_the_reads():
    q, t, t_read = 0.03, 3600.0, 250e-9
    config = one_pass(read_noise_1f=q, drift_time_s=t, seed=6)
    w = np.full((32, 16), 15)
    g = program_tile(w, config, np.random.default_rng(1)).conductance.reshape(32, 16, 2)[:, :, 0]
    expected = q * np.sqrt(np.log((t + t_read) / (2 * t_read)))
    assert (g / 15 - 1).std() == pytest.approx(expected, rel=0.1)
    device = Device(config)
    x = np.random.default_rng(2).integers(0, 16, (4, 32))
    device.write(0, w)
    first = device.mvm(0, x)
    np.testing.assert_array_equal(device.mvm(0, x), first)  # the same noise for every read
    assert np.any(first != x @ w)


def test_converter_noise_differs_between_reads():
    device = Device(one_pass(input_noise=0.02, output_noise=0.05, seed=1))
    w = np.random.default_rng(3).integers(-15, 16, (32, 16))
    x = np.random.default_rng(4).integers(0, 16, (4, 32))
    device.write(0, w)
    first = device.mvm(0, x)
    assert np.any(device.mvm(0, x) != first)
    again = Device(one_pass(input_noise=0.02, output_noise=0.05, seed=1))
    again.write(0, w)
    np.testing.assert_array_equal(again.mvm(0, x), first)  # seeded
