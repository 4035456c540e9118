"""What time does to programmed cells: conductance drift, its compensation, and 1/f read noise
(docs/device-model.md).

- Drift: a cell programmed to g at t₀ reads g·(t / t₀)^(−ν) at t (the power law of phase-change
  and resistive memories: Ielmini et al., "Recovery and drift dynamics of resistance and threshold
  voltages in phase-change memories", IEEE Trans. Electron Devices 54(2), 2007). ν is drawn per
  cell as N(ν̄, σ_ν) clipped at 0, with ν̄ and σ_ν each one value or one per conductance level
  (the dependence on the programmed state that Nandakumar et al. fit, "Phase-change memory models
  for deep learning training and inference", ICECS 2019; IBM aihwkit's PCM model uses it:
  `pcm_drift_tables`).
- Compensation: a reference read with every row on, at t₀ and at t, gives the factor that scales
  the outputs back (global: one factor per crossbar; column: one per output column), as in Joshi et
  al., "Accurate deep neural network inference using computational phase-change memory", Nat.
  Commun. 11, 2020 (global drift compensation) and aihwkit's `GlobalDriftCompensation` /
  `PerColumnDriftCompensation`. The reference read goes through the wires (IR drop) like every
  read, and a static ADC range's spans follow the same factor (`drift_adc_spans`).
- 1/f read noise: integrated from the read pulse t_r to t, its variance grows as
  ln((t + t_r) / (2 t_r)) (Joshi et al. 2020, Methods); over the reads of one run it barely
  changes, so it is drawn once per programmed tile at t, relative to the drifted conductance.
"""

from __future__ import annotations

import numpy as np

from cimxdsl.device.config import DeviceConfig


def drift(g: np.ndarray, config: DeviceConfig, rng: np.random.Generator) -> None:
    """Drift the cell levels `g` in place from `drift_t0_s` to `drift_time_s` (ν per cell, its
    mean and spread by the level each cell holds, rounded, where they are tables)."""
    if not config.drifts:
        return
    levels = None
    if config.drift_nu_table or config.drift_nu_std_table:
        levels = np.clip(np.rint(g), 0, 2**config.cell_bits - 1).astype(np.int64)
    nu = _by_level(config.drift_nu, config.drift_nu_table, levels)
    std = _by_level(config.drift_nu_std, config.drift_nu_std_table, levels)
    if np.any(std):
        nu = np.maximum(nu + std * rng.standard_normal(g.shape), 0)
    g *= np.power(config.drift_time_s / config.drift_t0_s, -nu)


def _by_level(value: float, table: tuple[float, ...], levels: np.ndarray | None) -> np.ndarray:
    """`value`, or `table`'s entry for each cell's level where the table is given."""
    return np.asarray(table)[levels] if table else np.float64(value)


def pcm_drift_tables(cell_bits: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The mean and spread of ν per conductance level (`drift_nu_table`, `drift_nu_std_table`)
    of the phase-change memory fit of Nandakumar et al., ICECS 2019 (the fit IBM aihwkit's
    PCM model documents): for a target conductance g_T = level / G_max,
    μ_ν = clip(−0.0155 ln g_T + 0.0244, 0.049, 0.1) and σ_ν = clip(−0.0125 ln g_T − 0.0059,
    0.008, 0.045); level 0 takes the limits of g_T → 0 (0.1 and 0.045)."""
    top = 2**cell_bits - 1
    with np.errstate(divide="ignore"):
        log_g = np.log(np.arange(top + 1) / top)
    mean = np.clip(-0.0155 * log_g + 0.0244, 0.049, 0.1)
    std = np.clip(-0.0125 * log_g - 0.0059, 0.008, 0.045)
    return tuple(mean.tolist()), tuple(std.tolist())


def one_over_f_noise(g: np.ndarray, config: DeviceConfig, rng: np.random.Generator) -> None:
    """Add the 1/f read noise at `drift_time_s` to the levels `g` in place (clipped at 0)."""
    if not config.read_noise_1f:
        return
    t, t_read = config.drift_time_s, config.read_pulse_s
    sigma = config.read_noise_1f * np.sqrt(max(np.log((t + t_read) / (2 * t_read)), 0.0))
    g += g * sigma * rng.standard_normal(g.shape)
    np.maximum(g, 0, out=g)


def compensation_gain(programmed: np.ndarray, drifted: np.ndarray, config: DeviceConfig) -> np.ndarray | None:
    """The factors (N,) that scale a tile's analog outputs back from `drifted` levels to the
    `programmed` ones (K, N, arrays, J): the reference read drives every row at 1 and weighs
    each cell slice by its place value, summing the magnitudes of a weight's reads; None
    without compensation."""
    if config.drift_compensation == "none" or not config.drifts:
        return None
    place = 2.0 ** (config.cell_bits * np.arange(config.cells_per_weight))
    before, after = (np.einsum("knaj,j->n", levels, place) for levels in (programmed, drifted))
    if config.drift_compensation == "global":
        before, after = before.sum(keepdims=True), after.sum(keepdims=True)
    gain = np.divide(before, after, out=np.ones_like(before), where=after > 0)
    return np.broadcast_to(gain, programmed.shape[1:2]).copy()
