"""Bit-sliced crossbar MVM, vectorised with NumPy (conventions and sources: docs/device-model.md).

For a K×N integer weight tile W and input rows x:

- Weights. `differential`: the two arrays of the pair hold P = max(W, 0) and M = max(-W, 0).
  `offset`: one array holds V = W + c, with c = 0 for a tile without negative weights and
  c = 2**(weight_bits-1) otherwise. Each stored magnitude is cut into J = cells_per_weight slices of
  cell_bits bits on neighbouring columns (column n*J + j holds slice j of weight n).
- Inputs (`input_encoding`) are sent as dac_bits-bit digits, one per cycle ("planes"), each with a
  signed shift-and-add weight; the digits are unsigned but for a bipolar DAC. `offset`: a row with a negative entry is sent as
  u = x + o, o = 2**(input_bits-1), a non-negative row as u = x, and o·Σ_k W_k is subtracted
  digitally with the nominal weights. `twos_complement`: the low input_bits-1 bits of the pattern in
  digits, then the sign bit alone in a pass of its own, sent at the DAC level it has within its digit
  (2**p, p = (input_bits-1) mod dac_bits) and weighted -2**(input_bits-1-p) (+ for an unsigned row).
  `sign_magnitude`: the digits of max(x, 0), then those of max(-x, 0) subtracted (the second pass
  only for rows with a negative entry). `bipolar`: a signed DAC drives each row at sign(x) times
  the digit of |x|, one pass per digit, and signed ADCs convert the sums.
- Per (plane p, weight slice j) each array's column sums go through the ADC, then shift-and-add:
  y = Σ_p Σ_j scale_p 2**(j*cell_bits) ADC(d_p · G_j); the pair is subtracted (with `subtraction =
  "analog"` the pair's sums are subtracted first and one signed ADC converts the difference). The
  weight offset is corrected digitally: x @ W = y - c·Σ_k x_k.

ADC: an n-bit converter with L = 2**n - 1 steps above zero (signed, for a pair's difference or
bipolar inputs: L = 2**(n-1) - 1 each side) over a span F: level = round_half_even(sum · L / F),
saturated, read back as level · F / L. F is the largest possible column sum (`full`), that rounded
up to a power of two (`full_pow2`, then F / L is the power-of-two step 2**max(0, m - n)), the
largest sum of the read (`calibrated`, idealised), or a span per array, per weight slice or per
column measured on a calibration set (`static_array`, `static_slice`, `static_column`). A span
below L is widened to L (step 1): noiseless sums are integers, so such an ADC is exact. n = 0
means lossless.

Noise: programming error per cell, frozen in the `Tile` (`prog_noise_model`: proportional,
independent of the level, or a σ per level; clipped at 0, or to [0, G_max], by
`prog_noise_clip`), stuck cells (highest / lowest level), power-law drift, and read noise: every
cell's current gets an independent relative error at every read; the column's summed error is
drawn exactly as N(0, read_noise² Σ_k d_k² g_k²).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from itertools import pairwise

import numpy as np

from cimxdsl.device import kernels
from cimxdsl.device.backend import NUMPY, ArrayBackend, namespace_of, numpy_dtype_of, on_backend
from cimxdsl.device.config import DeviceConfig
from cimxdsl.device.drift import compensation_gain, drift, one_over_f_noise
from cimxdsl.device.parasitics import effective_conductance
from cimxdsl.device.threads import map_chunks, map_rows, matmul, pool_threads

CHUNK_BYTES = 1 << 20  # bound on the per-chunk analog intermediates of one MVM (about an L2 cache); the
# chunks read noise is drawn in, so their size fixes a noisy product's noise stream
NOISELESS_CHUNK_BYTES = 1 << 23  # the same for a noiseless sliced product on NumPy: its passes over the
# sums run faster in fewer, larger chunks (larger BLAS calls, less dispatch) than within an L2 cache
PACKED_CHUNK_BYTES = 1 << 20  # the same for a packed product (`TileStack.pack`), per thread of the pool: its
# buffers are reused; with more threads larger chunks keep the Python between NumPy calls (which holds
# the interpreter lock) from serialising them
PACKED_MIN_ROWS = 128  # the fewest rows of a packed product's chunk (the columns then go in blocks)
_EXACT_FLOAT = 2**53
_INT64_LIMIT = 2**62


@dataclass(frozen=True, eq=False)
class Tile:
    """A weight tile as programmed on one logical crossbar."""

    weights: np.ndarray  # nominal K×N weights: int64, or float on an exact config
    conductance: np.ndarray | None  # K × (N·arrays·J) effective cell levels; None for float weights
    weight_offset: int  # c of the offset encoding (0 for differential)
    col_sums: np.ndarray  # Σ_k W[k, :], for the input-offset correction
    max_abs: int | float  # max |W|, bounds the exact product
    reads: np.ndarray | None = None
    """The matrix the input digits multiply: the conductances, times a noiseless full-scale ADC's
    integer step count L when that is exact (`_fold_adc`)."""
    max_sum: float = np.inf
    """The largest column sum a read can produce (inf with noise): bounds the ADC's input."""
    gain: np.ndarray | None = None
    """Drift compensation: the factor of each output column's analog part (`compensation_gain`)."""

    @property
    def shape(self) -> tuple[int, int]:
        return self.weights.shape


def draw_stuck_cells(config: DeviceConfig, rng: np.random.Generator) -> np.ndarray | None:
    """A rows × arrays × cols map of stuck cells: +1 stuck on, -1 stuck off, 0 healthy."""
    if config.stuck_on_rate == 0 and config.stuck_off_rate == 0:
        return None
    draw = rng.random((config.rows, config.read_arrays, config.cols))
    stuck = np.zeros(draw.shape, np.int8)
    stuck[draw < config.stuck_on_rate] = 1
    stuck[(draw >= config.stuck_on_rate) & (draw < config.stuck_on_rate + config.stuck_off_rate)] = -1
    return stuck


def encode_weights(w: np.ndarray, config: DeviceConfig, dtype: type) -> tuple[np.ndarray, int]:
    """Cell levels (K, N, arrays, J) of a validated tile, as `dtype`, and the offset c."""
    if config.encoding == "differential":
        magnitudes, offset = np.stack([np.maximum(w, 0), np.maximum(-w, 0)], axis=-1), 0
    elif config.encoding == "reference":  # the weight's cell (LRS for +1), its reference column's set later
        magnitudes, offset = np.stack([(w + 1) // 2, np.zeros_like(w)], axis=-1), 0
    else:
        offset = 0 if w.min() >= 0 else 2 ** (config.weight_bits - 1)
        magnitudes = (w + offset)[..., None]
    magnitudes = magnitudes.astype(np.min_scalar_type(2**config.weight_bits))
    levels = np.empty((*magnitudes.shape, config.cells_per_weight), dtype)
    for j in range(config.cells_per_weight):  # one cell slice at a time, over the whole tile
        shifted = magnitudes >> (config.cell_bits * j)
        np.bitwise_and(shifted, 2**config.cell_bits - 1, out=levels[..., j], casting="unsafe")
    return levels, offset


def program_tile(
    weights: np.ndarray,
    config: DeviceConfig,
    rng: np.random.Generator | None = None,
    stuck: np.ndarray | None = None,
) -> Tile:
    """Validate and program a K×N tile (copied): cell levels with programming error, faults and drift.

    Stuck cells come from `stuck` (a `draw_stuck_cells` map) or, if None, are drawn from `rng`.
    The conductance columns are in (N, arrays, J) order: the reads of one weight are neighbours.
    """
    w = _weight_array(weights, config)
    if w.dtype.kind == "f":
        return Tile(w, None, 0, w.sum(axis=0), float(np.abs(w).max()))
    g, offset = encode_weights(w, config, _analog_dtype(config))
    if not config.noiseless:
        rng = rng if rng is not None else np.random.default_rng(config.seed)
        if stuck is None:
            stuck = draw_stuck_cells(config, rng)
        _programming_error(g, config, rng)
        if stuck is not None:
            k, n, arrays, j = g.shape
            cells = stuck[:k, :, : n * j].reshape(k, arrays, n, j).transpose(0, 2, 1, 3)
            g[cells == 1] = 2**config.cell_bits - 1
            g[cells == -1] = 0
        programmed = g.copy() if config.drift_compensation != "none" else g
        drift(g, config, rng)
        one_over_f_noise(g, config, rng)
        gain = None
        if config.drift_compensation != "none":  # the reference read goes through the wires too
            gain = compensation_gain(_ir_drop(programmed, config), _ir_drop(g, config), config)
    else:
        gain = None
    if config.encoding == "reference":
        _reference_column(g, config, rng, None if stuck is None else stuck[: w.shape[0], 0, config.cols - 1])
    elif config.on_off_ratio and not config.hrs_apart:
        g += g.dtype.type(config.hrs_level)
    g = _ir_drop(g, config).reshape(w.shape[0], -1)
    max_sum = float(g.sum(axis=0).max()) * (2**config.dac_bits - 1) if config.integral else np.inf
    return Tile(w, g, offset, w.sum(axis=0), int(np.abs(w).max()), _fold_adc(g, config), max_sum, gain)


def _ir_drop(g: np.ndarray, config: DeviceConfig) -> np.ndarray:
    """The effective levels (K, N, arrays, J) of each physical array of `g` under the wire
    resistances (`cimxdsl.device.parasitics`); `g` itself without them."""
    wires = config.wires
    if wires.ideal:
        return g
    k, n, arrays, j = g.shape
    effective = np.empty(g.shape, np.float64)
    for a in range(arrays):  # the arrays of a pair are separate networks
        array = g[:, :, a, :].reshape(k, n * j)
        effective[:, :, a, :] = effective_conductance(array, wires, config.ir_drop_solver).reshape(k, n, j)
    return effective.astype(g.dtype, copy=False)


def _reference_column(
    g: np.ndarray, config: DeviceConfig, rng: np.random.Generator | None, stuck: np.ndarray | None = None
) -> None:
    """Complete a `reference` tile's levels g (K, N, 2, 1) in place, in units of half the LRS-HRS
    step so that noiseless sums stay integers: the weight's cell 2·level + 2h (h the HRS current,
    `hrs_level`), its reference column's cell (G_LRS + G_HRS) / 2 = 1 + 2h plus `reference_noise`,
    one draw per row shared by every column it serves; a reference cell `stuck` (+1 on, -1 off: the
    crossbar's last column, one per row) is at 2 + 2h (LRS) or 2h (HRS). The difference is then
    Σ_k x_k w_k."""
    g[..., 0, :] *= 2
    reference = np.ones(g.shape[0])
    if config.reference_noise:
        reference += 2 * config.reference_noise * rng.standard_normal(g.shape[0])
        np.maximum(reference, 0, out=reference)
    if stuck is not None:
        reference[stuck == 1], reference[stuck == -1] = 2, 0
    g[..., 1, :] = reference[:, None, None]
    if not config.hrs_apart:
        g += g.dtype.type(2 * config.hrs_level)


def _programming_error(g: np.ndarray, config: DeviceConfig, rng: np.random.Generator) -> None:
    """Add the programming error of `prog_noise_model` to nominal cell levels `g` in place:
    proportional g·(1 + σN); independent g + σ·G_max·N; table g + σ[level]·G_max·N
    (G_max = 2**cell_bits - 1, the top level). Then clipped at zero conductance, and at G_max by
    `prog_noise_clip` ("auto": all but proportional)."""
    model, top = config.prog_noise_model, 2**config.cell_bits - 1
    if model == "proportional":
        if not config.prog_noise:
            return
        g *= 1 + config.prog_noise * rng.standard_normal(g.shape)
    else:
        if model == "independent" and not config.prog_noise:
            return
        sigma = config.prog_noise if model == "independent" else np.asarray(config.prog_noise_table)[g.astype(np.int64)]
        g += sigma * top * rng.standard_normal(g.shape)
    clip = config.prog_noise_clip
    # at zero conductance: -hrs_level, the HRS current's level (0 for an ideal HRS)
    high = top if clip == "both" or (clip == "auto" and model != "proportional") else None
    np.clip(g, -config.hrs_level, high, out=g)


def _fold_adc(g: np.ndarray, config: DeviceConfig) -> np.ndarray:
    """`g`, or — for a noiseless full-scale ADC with a step above 1 and without analog subtraction —
    `g` scaled so that the product yields what the ADC rounds (`_adc_fold`)."""
    factor = _adc_fold(config, g.dtype)
    return g if factor is None else g * g.dtype.type(factor)


def _adc_fold(config: DeviceConfig, dtype) -> float | None:
    """The factor a noiseless full-scale ADC with a step above 1 (without analog subtraction) takes
    into the column sums so that it only divides and rounds: 1 / step for `full_pow2` (exact: a
    power of two), L for `full` (exact while below the mantissa; the ADC then divides by F); None
    where there is none."""
    num, den = _full_scale_ratio(config, config.signed_adc)
    full = config.adc_bits and config.adc_range in ("full", "full_pow2")
    if not (config.integral and full and not config.analog_subtraction and den > num):
        return None
    if num == 1:
        return 1 / den
    return float(num) if _ties_exact(config, dtype, num) else None


def _pack_bits(config: DeviceConfig, max_sum: float, dtype) -> int:
    """The bits w of a field that holds one input plane's column sums when two planes share one
    float product (`TileStack.pack`): 2**w above the largest sum, and both fields exact in `dtype`.
    0 where the sums are no non-negative integers (noise, HRS current, signed DACs, analog pairs)."""
    if not config.integral or config.analog_subtraction or config.input_encoding == "bipolar":
        return 0
    if not math.isfinite(max_sum) or config.input_slices * (1 + (config.input_encoding == "sign_magnitude")) < 2:
        return 0
    top = int(max_sum)
    bits = top.bit_length()
    return bits if top * (2**bits + 1) < 2 ** (np.finfo(dtype).nmant + 1) else 0


def tile_mvm(
    tile: Tile,
    x: np.ndarray,
    config: DeviceConfig,
    rng: np.random.Generator | None = None,
    *,
    fast_path: bool = True,
    out: np.ndarray | None = None,
    spans: np.ndarray | None = None,
    stack: TileStack | None = None,
    backend: ArrayBackend = NUMPY,
) -> np.ndarray:
    """x @ W on a programmed tile for x of shape (B, K) or (K,); int64 for integer operands, or
    cast into `out` (of the result's shape) when given. `spans`: the static ADC spans of the tile
    (`observed_spans` over a calibration set), needed by a `static_*` ADC range. `stack`: the tile
    already stacked (`stack_tiles`, with `spans`) on `backend`, where the product runs.

    With `fast_path` an exact config computes the product directly (same result, much faster).
    """
    x = np.asarray(x)
    if x.ndim not in (1, 2):
        raise ValueError(f"crossbar input must be a vector or a matrix, got shape {x.shape}")
    rows = x[None] if x.ndim == 1 else x
    out_rows = out[None] if out is not None and x.ndim == 1 else out
    check_inputs(rows, tile, config)
    if rows.dtype.kind == "f" or tile.conductance is None or (fast_path and config.exact):
        y = _exact_product(rows, tile, out_rows, backend)
    else:
        if rng is None and config.read_noisy:
            rng = np.random.default_rng(config.seed)
        y = sliced_product(rows, stack or stack_tiles([[tile]], [[spans]], config, backend), config, rng)
    if out is not None:
        if y is not out_rows:
            out_rows[...] = y
        return out
    return y[0] if x.ndim == 1 else y


def crossbar_matmul(
    x: np.ndarray,
    w: np.ndarray,
    config: DeviceConfig,
    rng: np.random.Generator | None = None,
    *,
    fast_path: bool = True,
) -> np.ndarray:
    """Program `w` on a fresh crossbar and compute x @ w (stateless; no metrics)."""
    if rng is None and not config.noiseless:
        rng = np.random.default_rng(config.seed)
    return tile_mvm(program_tile(w, config, rng), x, config, rng, fast_path=fast_path)


def adc_convert(sums: np.ndarray, config: DeviceConfig, spans: np.ndarray | None = None) -> np.ndarray:
    """ADC of column sums shaped (S, B, N, arrays, J) (see the module docstring; signed for
    bipolar inputs); `spans` of a static range are per column, shaped (N, arrays, J)."""
    levels, den, num = _adc_levels(sums.copy(), config, False, spans=_resolved(spans, config))
    return levels * den / num


def signed_adc_convert(differences: np.ndarray, config: DeviceConfig, spans: np.ndarray | None = None) -> np.ndarray:
    """ADC of a pair's column-sum differences shaped (S, B, N, J): a signed converter with
    2**(n-1) - 1 levels each side of zero over [-F, F]; `spans` per column shaped (N, J)."""
    levels, den, num = _adc_levels(differences.copy(), config, True, spans=_resolved(spans, config))
    return levels * den / num


def _resolved(spans: np.ndarray | None, config: DeviceConfig) -> np.ndarray | None:
    return None if spans is None else static_spans(spans, config)


def _adc_levels(
    sums,
    config: DeviceConfig,
    paired: bool,
    folded: bool = False,
    max_sum: float = np.inf,
    spans=None,
    tiles: np.ndarray | None = None,
) -> tuple[object, object, int]:
    """The ADC levels of `sums` (converted in place where the dtype allows), F' and L: a level reads
    back as level · F' / L, F' a scalar for a full-scale ADC, per read or per column otherwise.
    `paired` sums are a pair's differences, shaped (…, N, J), others (…, N, arrays, J); both paired
    and bipolar sums are signed. `folded` sums hold sum · L
    (or sum ÷ step when L = 1) already (`_fold_adc`). Rounds half to even. A clamp that no sum up to
    `max_sum` (in magnitude) can reach is skipped. `spans`: a static range's, per column
    (`static_spans`); `tiles`: the first weight column of each tile side by side in `sums`. Any
    array API namespace (that of `sums`)."""
    bits = config.adc_bits
    if bits == 0:
        return sums, 1.0, 1
    xp = namespace_of(sums)
    signed = paired or config.signed_adc
    num, den = _adc_ratio(sums, config, signed, paired, spans, tiles)
    scalar = isinstance(den, float)
    if scalar and den == num and config.integral:
        return sums, 1.0, 1  # step 1: noiseless sums are integers the ADC holds exactly
    wide, multiply, divide, low, high = _adc_arithmetic(config, sums.dtype, signed, folded, num, den, max_sum, xp)
    if wide:
        sums = xp.astype(sums, xp.float64)
    if multiply:
        sums *= num
    if divide:
        if scalar or isinstance(sums, np.ndarray) or den.dtype == sums.dtype:
            sums /= den
        else:  # (in the wider dtype, then rounded back as an in-place division does)
            sums = xp.astype(sums / den, sums.dtype)
    sums = _rint(sums, xp)
    if low is not None or high is not None:
        sums = _clip(sums, low, high, xp)
    return sums, den, num


def _adc_arithmetic(config: DeviceConfig, dtype, signed: bool, folded: bool, num: int, den, max_sum: float, xp=np):
    """How `_adc_levels` converts sums of `dtype`: (in float64, times L, divided by F', the lowest
    level or None, the highest or None — None where no sum up to `max_sum` reaches it)."""
    bits = config.adc_bits
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    reachable = np.rint(max_sum * num / den) if isinstance(den, float) else np.inf
    clamp_high = reachable > high
    clamp_low = (signed and -reachable < low) or not config.integral
    return (
        not _ties_exact(config, dtype, num, xp),
        not folded and num != 1,
        not folded or num != 1,
        low if clamp_low else None,
        high if clamp_high else None,
    )


def _rint(a, xp):
    """Round half to even, in place for NumPy."""
    if isinstance(a, np.ndarray):
        return np.rint(a, out=a)
    return xp.round(a)


def _clip(a, low, high, xp):
    """`a` clipped to [low, high] (None: unbounded), in place for NumPy."""
    if isinstance(a, np.ndarray):
        if high is not None:
            np.minimum(a, high, out=a)
        if low is not None:
            np.maximum(a, low, out=a)
        return a
    return xp.clip(a, min=low, max=high)


def _adc_ratio(
    sums,
    config: DeviceConfig,
    signed: bool,
    paired: bool,
    spans,
    tiles: np.ndarray | None,
) -> tuple[int, object]:
    """(L, F'): level = rint(sum · L / F'), with F' = max(F, L) the span (see the module docstring).
    `sums` are shaped (…, N, arrays, J), or (…, N, J) `paired`."""
    if config.adc_range in ("full", "full_pow2"):
        return _full_scale_ratio(config, signed)
    xp = namespace_of(sums)
    num = _adc_steps(config, signed)
    if config.adc_range == "calibrated":  # per read: per (plane, row, weight slice) of each tile
        top = xp.abs(sums) if signed else xp.maximum(sums, 0)
        top = top if paired else xp.max(top, axis=-2)
        span = xp.max(top, axis=-2, keepdims=True) if tiles is None else _tile_maxima(top, tiles, xp)
        span = span if paired else xp.expand_dims(span, axis=-2)
        return num, xp.astype(xp.maximum(span, num), xp.float64)
    if spans is None:
        raise ValueError(
            f"the '{config.adc_range}' ADC range has no calibration for this weight tile: compile "
            "with calibration data, or record spans with Device(calibrating=True)"
        )
    return num, xp.astype(spans, xp.float64, copy=False)  # widened to L by `static_spans`


def _tile_maxima(top, tiles: np.ndarray, xp):
    """The maximum of `top` (…, N, J) over each tile's columns (starting at `tiles`), per column."""
    if isinstance(top, np.ndarray):
        counts = np.diff(np.append(tiles, top.shape[-2]))
        return np.repeat(np.maximum.reduceat(top, tiles, axis=-2), counts, axis=-2)
    ends = [*tiles.tolist()[1:], top.shape[-2]]
    parts = []
    for first, end in zip(tiles.tolist(), ends):
        part = xp.max(top[..., first:end, :], axis=-2, keepdims=True)
        parts.append(xp.broadcast_to(part, (*part.shape[:-2], end - first, part.shape[-1])))
    return xp.concat(parts, axis=-2)


def static_spans(observed: np.ndarray, config: DeviceConfig) -> np.ndarray:
    """The spans a static ADC uses from per-column maxima `observed` ((N, arrays, J), or (N, J) for
    a pair subtracted before the ADC): each column's own (`static_column`), the largest of its
    weight slice over the tile's columns and both arrays of a pair (`static_slice`), or the largest
    of its physical array (`static_array`; a pair subtracted in analog shares one); each widened
    to at least L (step 1)."""
    if config.adc_range == "static_slice":
        observed = observed.max(axis=tuple(range(observed.ndim - 1)), keepdims=True)
    elif config.adc_range == "static_array":
        observed = observed.max(axis=(0, 1) if observed.ndim == 2 else (0, 2), keepdims=True)
    return np.maximum(observed, _adc_steps(config, config.signed_adc))


def _adc_steps(config: DeviceConfig, signed: bool) -> int:
    """L: the levels above zero of an n-bit ADC (signed: on each side)."""
    return max(2 ** (config.adc_bits - 1) - 1, 1) if signed else 2**config.adc_bits - 1


def _full_scale_ratio(config: DeviceConfig, signed: bool) -> tuple[int, float]:
    """(L, F') of a `full` ADC (F the largest column sum) or a `full_pow2` one (L = 1 and F' the
    power-of-two step 2**max(0, m - n), m the bit width of F, plus one when signed)."""
    if config.adc_range == "full_pow2":
        return 1, float(2 ** max(config.adc_full_scale.bit_length() + signed - config.adc_bits, 0))
    num = _adc_steps(config, signed)
    return num, float(max(config.adc_full_scale, num))


def _ties_exact(config: DeviceConfig, dtype, num: int, xp=np) -> bool:
    """Whether rint(sum · L / F) decides its ties exactly in `dtype` (of namespace `xp`) for
    noiseless integer sums: the quotient's rounding error stays below half the gap 1 / (2F) to a tie."""
    return 4 * num * max(config.adc_full_scale, num) < 2 ** (_mantissa(dtype, xp) + 1)


def _mantissa(dtype, xp=np) -> int:
    """The explicit mantissa bits of a float dtype of namespace `xp` (23 for float32)."""
    return round(-math.log2(float(xp.finfo(dtype).eps)))


# ---- helpers ----------------------------------------------------------------------------------
def _analog_dtype(config: DeviceConfig) -> type:
    """float32 where it is exact (noiseless sums below 2**24); else float64, or float32 where the
    config asks for it (`analog_dtype`)."""
    if config.integral:
        return np.float32 if config.adc_full_scale < 2**24 else np.float64
    return np.dtype(config.analog_dtype).type


def _weight_array(weights: np.ndarray, config: DeviceConfig) -> np.ndarray:
    w = np.asarray(weights)
    if w.ndim != 2 or 0 in w.shape:
        raise ValueError(f"crossbar weights must be a non-empty K×N matrix, got shape {w.shape}")
    max_k, max_n = config.tile_shape
    if w.shape[0] > max_k or w.shape[1] > max_n:
        raise ValueError(
            f"a {w.shape[0]}×{w.shape[1]} weight tile does not fit a {config.rows}×{config.cols} "
            f"crossbar: at most {max_k}×{max_n} ({config.cells_per_weight} cells per "
            f"{config.weight_bits}-bit weight)"
        )
    if w.dtype.kind == "f":
        if not config.exact:
            raise ValueError(
                f"float weights need an exact device (lossless ADC, no noise); '{config.name}' is "
                "not: quantize to integers first"
            )
        return np.array(w, dtype=np.result_type(w.dtype, np.float32))
    if w.dtype.kind not in "biu":
        raise ValueError(f"crossbar weights must be integers, got dtype {w.dtype}")
    if config.encoding == "reference" and not np.isin(w, (-1, 1)).all():
        bad = w[~np.isin(w, (-1, 1))].flat[0]
        raise ValueError(f"weight {bad} is not binary: the 'reference' encoding holds weights -1 and +1 only")
    low, high = _weight_range(w, config)
    if w.min() < low or w.max() > high:
        bad = w.min() if w.min() < low else w.max()
        raise ValueError(
            f"weight {bad} does not fit {config.weight_bits}-bit {config.encoding} encoding (range {low}..{high})"
        )
    return np.array(w, dtype=np.int64)


def _weight_range(w: np.ndarray, config: DeviceConfig) -> tuple[int, int]:
    bits = config.weight_bits
    if config.encoding != "offset":
        return -(2**bits - 1), 2**bits - 1
    if w.min() >= 0:
        return 0, 2**bits - 1
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def inputs_fit(x: np.ndarray, config: DeviceConfig) -> bool:
    """Whether the integer rows `x` fit `config`'s inputs as a whole (their least and largest
    value), so that every slice of their columns passes `check_inputs` (which checks row by row
    only where the whole does not fit); False for float inputs."""
    backend = on_backend(x)
    if backend is not None:  # (its least and largest value brought to the host, in one move)
        if numpy_dtype_of(x).kind not in "biu":
            return False
        if math.prod(x.shape) == 0:
            return True
        x = backend.to_numpy(backend.xp.stack([backend.xp.min(x), backend.xp.max(x)]))
    if x.dtype.kind not in "biu":
        return False
    if x.size == 0:
        return True
    bits, low, high = config.input_bits, x.min(), x.max()
    if config.input_encoding == "bipolar":  # the DAC drives a sign and bits of magnitude
        return max(-int(low), int(high)) <= 2**bits - 1
    return bool(low >= -(2 ** (bits - 1)) and high <= (2 ** (bits - 1) - 1 if low < 0 else 2**bits - 1))


def check_inputs(x: np.ndarray, tile: Tile, config: DeviceConfig) -> None:
    k = tile.shape[0]
    if x.shape[-1] != k:
        raise ValueError(f"crossbar input has {x.shape[-1]} elements per row but the tile has {k} rows")
    if x.dtype.kind == "f":
        if not config.exact:
            raise ValueError(
                f"float inputs need an exact device (lossless ADC, no noise); '{config.name}' is "
                "not: quantize to integers first"
            )
        return
    if x.dtype.kind not in "biu":
        raise ValueError(f"crossbar inputs must be numbers, got dtype {x.dtype}")
    if inputs_fit(x, config):
        return  # every row fits, signed or not
    bits = config.input_bits
    if config.input_encoding == "bipolar":
        low, high = x.min(), x.max()
        value = low if -int(low) > int(high) else high
        raise ValueError(f"input {value} does not fit {bits}-bit bipolar inputs (magnitude at most {2**bits - 1})")
    row_min, row_max = x.min(axis=1), x.max(axis=1)
    signed = row_min < 0
    high = np.where(signed, 2 ** (bits - 1) - 1, 2**bits - 1)
    bad = (row_max > high) | (row_min < -(2 ** (bits - 1)))
    if bad.any():
        r = int(np.argmax(bad))
        value = row_max[r] if row_max[r] > high[r] else row_min[r]
        ranges = f"{-(2 ** (bits - 1))}..{2 ** (bits - 1) - 1} signed or 0..{2**bits - 1} unsigned"
        raise ValueError(f"input {value} (row {r}) does not fit {bits}-bit inputs ({ranges})")


def _exact_product(
    x: np.ndarray, tile: Tile, out: np.ndarray | None = None, backend: ArrayBackend = NUMPY
) -> np.ndarray:
    """x @ W, into `out` when it has the product's dtype."""
    return exact_matmul(x, tile.weights, out, tile.max_abs, backend)


def exact_matmul(
    x: np.ndarray,
    w: np.ndarray,
    out: np.ndarray | None = None,
    w_max: int | None = None,
    backend: ArrayBackend = NUMPY,
) -> np.ndarray:
    """x @ w exactly: float operands in their own precision (into `out` when it has the product's
    dtype), integers as int64 through float64 BLAS while every partial sum is exact there.
    `w_max`: max |w| when known. On `backend` (NumPy's result) with `w` resident there."""
    if x.dtype.kind == "f" or w.dtype.kind == "f":
        if not backend.is_numpy:
            dtype = np.result_type(x, w)
            with backend.running():
                product = backend.xp.matmul(backend.asarray(x.astype(dtype, copy=False)), backend.resident(w, dtype))
            return backend.to_numpy(product)
        if out is not None and out.dtype == np.result_type(x, w):
            return matmul(x, w, out=out)
        return matmul(x, w)
    x_max = int(np.abs(x.astype(np.int64)).max()) if x.size else 0
    w_max = int(np.abs(w.astype(np.int64)).max()) if w_max is None else int(w_max)
    bound = x_max * w_max * w.shape[0]
    if bound < _EXACT_FLOAT:
        if not backend.is_numpy:
            with backend.running():
                product = backend.xp.matmul(backend.asarray(x.astype(np.float64)), backend.resident(w, np.float64))
            return backend.to_numpy(product).astype(np.int64)
        return matmul(x.astype(np.float64), w.astype(np.float64)).astype(np.int64)
    if bound < 2**63:
        return x.astype(np.int64) @ w
    raise ValueError("the crossbar product may overflow int64")


@dataclass(frozen=True)
class InputPlanes:
    """Input rows as DAC digits: plane p is (source[p] >> shift[p]) & mask[p], times `signs` per
    entry for a bipolar DAC, weighted by scale[p] in the shift-and-add (and by -1 on
    `negative_rows` for the last plane when `flip_last`); `offsets` o per row are corrected
    digitally with the nominal weights."""

    sources: tuple[np.ndarray, ...]
    planes: tuple[tuple[int, int, int], ...]  # (source, shift, mask)
    scale: np.ndarray
    negative_rows: np.ndarray
    offsets: np.ndarray
    flip_last: bool = False
    signs: np.ndarray | None = None

    def digits(self, p: int, rows: tuple[slice, ...], out: np.ndarray) -> None:
        """Plane `p` of the input rows `rows` selects, into `out`."""
        source, shift, mask = self.planes[p]
        np.bitwise_and(self.sources[source][rows] >> shift, mask, out=out, casting="unsafe")
        if self.signs is not None:
            out *= self.signs[rows]


def input_planes(x: np.ndarray, config: DeviceConfig) -> InputPlanes:
    """The digits `input_encoding` sends for integer rows `x` (module docstring), shaped (…, K)."""
    bits, dac = config.input_bits, config.dac_bits

    def rows_of(work) -> None:  # `work(rows, row entries)` on slices of the rows (axis -2 of x)
        if x.ndim < 2:
            work((...,), (...,))
        else:
            map_rows(lambda r: work((..., r), (..., r, slice(None))), x.shape[-2])

    negative = np.zeros(x.shape[:-1], bool)
    if x.size:  # (element-wise passes over the rows: on the threads of `using_threads`)
        rows_of(lambda r, e: np.any(x[e] < 0, axis=-1, out=negative[r]))
    utype = np.min_scalar_type(2**bits - 1)
    none = np.zeros(x.shape[:-1], np.int64)
    signs = None

    if config.input_encoding == "offset":
        offsets = np.where(negative, 2 ** (bits - 1), 0)
        u = np.empty(x.shape, utype)  # u = x + o (in 0 … 2**bits - 1: u holds it)
        rows_of(lambda r, e: np.add(x[e], offsets[r][..., None], out=u[e], casting="unsafe"))
        planes, sources, flip = _digits(0, bits, dac), (u,), False
    elif config.input_encoding == "twos_complement":
        u = np.empty(x.shape, utype)  # the two's complement pattern of a signed row, the value of an unsigned one
        rows_of(lambda _, e: np.copyto(u[e], x[e], casting="unsafe"))
        p = (bits - 1) % dac  # the sign bit's place within its digit
        sign_bit = ((0, bits - 1 - p, 2**p), 2.0 ** (bits - 1 - p))
        planes, sources, flip, offsets = [*_digits(0, bits - 1, dac), sign_bit], (u,), True, none
    elif config.input_encoding == "bipolar":
        magnitudes = np.abs(x.astype(np.int64)).astype(utype)  # |-2**(bits-1)| fits `bits` bits
        planes, sources, flip, offsets = _digits(0, bits, dac), (magnitudes,), False, none
        signs = np.sign(x).astype(np.int8) if negative.any() else None
    else:
        positive = np.empty(x.shape, utype)
        rows_of(lambda _, e: np.maximum(x[e], 0, out=positive[e], casting="unsafe"))
        planes, sources, flip, offsets = _digits(0, bits, dac), (positive,), False, none
        if negative.any():
            magnitudes = np.empty(x.shape, utype)  # (-x in a wider type: -(-128) overflows int8)
            rows_of(lambda _, e: np.maximum(-x[e].astype(np.int64), 0, out=magnitudes[e], casting="unsafe"))
            sources = (positive, magnitudes)
            planes += _digits(1, bits, dac, -1.0)
    return InputPlanes(
        sources, tuple(p for p, _ in planes), np.array([c for _, c in planes]), negative, offsets, flip, signs
    )


def _digits(source: int, width: int, dac: int, sign: float = 1.0) -> list[tuple[tuple[int, int, int], float]]:
    """The DAC digits of a `width`-bit source: ((source, shift, mask), shift-and-add weight) each."""
    return [((source, s, 2 ** min(dac, width - s) - 1), sign * 2.0**s) for s in range(0, width, dac)]


def _output_noise(sums, config: DeviceConfig, rng: np.random.Generator | None, backend: ArrayBackend = NUMPY):
    """`sums` with the ADC-referred noise (σ = `output_noise` top-level cells at the top DAC
    level) added to the column sums of every conversion (in place), drawn on the host."""
    if config.output_noise:
        top = (2**config.dac_bits - 1) * (2**config.cell_bits - 1)
        draws = (config.output_noise * top) * rng.standard_normal(sums.shape)
        sums += backend.asarray(draws.astype(numpy_dtype_of(sums), copy=False))
    return sums


def _row_chunks(rows: int, g: np.ndarray, k: int, planes: InputPlanes) -> list[tuple[int, int]]:
    """(first row, rows) of the chunks whose analog intermediates stay within `CHUNK_BYTES`."""
    chunk = max(1, CHUNK_BYTES // (4 * len(planes.planes) * (k + g.shape[1])))
    return [(start, min(chunk, rows - start)) for start in range(0, rows, chunk)]


def _chunk_sums(g: np.ndarray, k: int, planes: InputPlanes, config: DeviceConfig, rng, start: int, b: int):
    """The analog column sums (P, b, N·arrays·J) of rows [start, start + b) against `g`, with read noise."""
    count = len(planes.planes)
    digits = np.empty((count, b, g.shape[0]), g.dtype)
    for i in range(count):
        planes.digits(i, (slice(start, start + b),), digits[i])
    sums = digits.reshape(count * b, -1) @ g
    if config.hrs_apart and not config.analog_subtraction:
        sums += config.hrs_level * digits.reshape(count * b, -1).sum(axis=1, keepdims=True)
    if config.read_noise:
        sigma = config.read_noise * np.sqrt((digits * digits).reshape(count * b, k) @ (g * g))
        sums += sigma * rng.standard_normal(sums.shape)
    return sums.reshape(count, b, -1)


def _column_sums(x: np.ndarray, g: np.ndarray, k: int, planes: InputPlanes, config: DeviceConfig, rng):
    """The analog column sums of `x` against `g` chunk by chunk: yields (first row, sums)."""
    for start, b in _row_chunks(x.shape[0], g, k, planes):
        yield start, _chunk_sums(g, k, planes, config, rng, start, b)


def observed_spans(tile: Tile, x: np.ndarray, config: DeviceConfig) -> np.ndarray:
    """The largest magnitude each column's ADC sees for rows `x` (lossless, no read noise): per
    (N, arrays, J), or per (N, J) for a pair subtracted before the ADC — what a static ADC range
    is calibrated from."""
    k, n = tile.shape
    x = np.asarray(x).reshape(-1, k)
    check_inputs(x, tile, config)
    top = np.zeros((n, config.read_arrays, config.cells_per_weight))
    if config.analog_subtraction:
        top = top[:, 0]
    for _, sums in _column_sums(x, tile.conductance, k, input_planes(x, config), config.replace(read_noise=0), None):
        sums = sums.reshape(*sums.shape[:2], n, config.read_arrays, -1)
        if config.analog_subtraction:
            sums = sums[:, :, :, 0] - sums[:, :, :, 1]
        np.maximum(top, np.abs(sums).max(axis=(0, 1)), out=top)
    return top


@dataclass(frozen=True, eq=False)
class TileStack:
    """Programmed tiles that partition a K×N weight matrix, stacked for one sliced product: K-block a
    holds rows edges[a]:edges[a+1], and every K-block is split alike along the columns."""

    reads: np.ndarray
    """(blocks, K, C): each K-block's tiles' `Tile.reads` (their conductances where `pack`) side by
    side, padded with zero rows."""
    edges: tuple[int, ...]
    col_sums: np.ndarray
    """(blocks, N): Σ_k W[k, n] of each K-block."""
    weight_offset: np.ndarray
    """(blocks, N): the weight offset c of the tile holding each column."""
    spans: np.ndarray | None
    """(blocks, N, arrays, J), or (blocks, N, J) for a pair subtracted before the ADC: the spans of a
    static ADC range per column (`static_spans`); None if a tile has none."""
    tiles: np.ndarray | None
    """The first column of each tile along N, if a K-block has several."""
    max_sum: float
    folded: bool
    gains: np.ndarray | None = None
    """(blocks, N): each column's drift-compensation factor (`Tile.gain`); None if no tile has one."""
    backend: ArrayBackend = NUMPY
    """Where `reads`, `spans` and `gains` are held and the product runs (`cimxdsl.device.backend`)."""
    pack: int = 0
    """On NumPy, for noiseless integer sums: the bits w of a field (`_pack_bits`). Two input planes
    then share one product — the digits d + d'·2**-w, whose sums s' + s·2**-w give both planes'
    exact sums back (integer part and fraction) — so the sliced product does half the float
    work; `reads` are then the tiles' unscaled conductances (the ADC's factor is applied after the
    split). 0: one product per plane."""
    moved: dict = field(default_factory=dict, init=False, repr=False)
    """The small host arrays a product reads (its shift-and-add weights, its digital corrections)
    on `backend`, by name: moved once (a move from host memory waits for the kernels queued)."""

    def held(self, name: tuple, make) -> object:
        """The array `make()` on the stack's backend, moved once per `name`."""
        found = self.moved.get(name)
        if found is None:
            found = self.moved[name] = self.backend.asarray(make())
        return found

    def block(self, a: int) -> TileStack:
        """K-block `a` alone."""
        part = slice(a, a + 1)
        spans = None if self.spans is None else self.spans[part]
        edges = (0, self.edges[a + 1] - self.edges[a])
        return replace(
            self,
            reads=self.reads[part],
            edges=edges,
            col_sums=self.col_sums[part],
            weight_offset=self.weight_offset[part],
            spans=spans,
            gains=None if self.gains is None else self.gains[part],
        )


def stack_tiles(
    grid: list[list[Tile]],
    spans: list[list[np.ndarray | None]] | None,
    config: DeviceConfig,
    backend: ArrayBackend = NUMPY,
) -> TileStack:
    """The `TileStack` of programmed tiles `grid[a][b]` (K-block a, column block b; every K-block
    split alike along the columns), with their static ADC spans (`observed_spans`) if any, moved
    to `backend`'s device (after a check of its free memory) to stay there while the stack is kept."""
    widths = [t.shape[1] for t in grid[0]]
    heights = [row[0].shape[0] for row in grid]
    if any([t.shape for t in row] != [(k, w) for w in widths] for k, row in zip(heights, grid, strict=True)):
        raise ValueError("the tiles of a stacked product must form a grid")
    first = grid[0][0]
    max_sum = max(t.max_sum for row in grid for t in row)
    pack = _pack_bits(config, max_sum, first.reads.dtype) if backend.is_numpy else 0
    matrix = (lambda t: t.conductance) if pack else (lambda t: t.reads)
    if len(grid) == 1 and len(widths) == 1:
        reads = matrix(first)[None]
    else:
        columns = first.reads.shape[1] // widths[0]
        reads = np.zeros((len(grid), max(heights), sum(widths) * columns), first.reads.dtype)
        for a, row in enumerate(grid):
            reads[a, : heights[a]] = np.hstack([matrix(t) for t in row])
    resolved = None
    if spans is not None and all(s is not None for row in spans for s in row):
        resolved = np.stack(
            [np.concatenate([_column_spans(s, t, config) for s, t in zip(srow, row)]) for srow, row in zip(spans, grid)]
        )
    gains = _stacked_gains(grid)
    if not backend.is_numpy:
        backend.reserve(reads.nbytes)
        reads = backend.asarray(reads)
        resolved = None if resolved is None else backend.asarray(resolved)
        gains = None if gains is None else backend.asarray(gains)
    return TileStack(
        reads,
        tuple(np.cumsum([0, *heights]).tolist()),
        np.stack([np.concatenate([t.col_sums for t in row]) for row in grid]),
        np.array([np.repeat([t.weight_offset for t in row], widths) for row in grid], np.int64),
        resolved,
        np.cumsum([0, *widths[:-1]]) if len(widths) > 1 else None,
        max_sum,
        first.reads is not first.conductance and not pack,
        gains,
        backend,
        pack,
    )


def _integers_to_numpy(total, backend: ArrayBackend) -> np.ndarray:
    """`total` (int64 on the backend) as an int64 NumPy array, moved in 32 bits where every value
    fits them (half the bytes through the GPU's copy to the host)."""
    if backend.is_numpy or not math.prod(total.shape):
        return backend.to_numpy(total)
    xp = backend.xp
    if int(xp.max(xp.abs(total))) < 2**31:
        return backend.to_numpy(xp.astype(total, xp.int32)).astype(np.int64)
    return backend.to_numpy(total)


def _stacked_gains(grid: list[list[Tile]]) -> np.ndarray | None:
    """(blocks, N): the tiles' `Tile.gain` side by side (1 where a tile has none), or None."""
    if all(t.gain is None for row in grid for t in row):
        return None
    return np.stack([np.concatenate([np.ones(t.shape[1]) if t.gain is None else t.gain for t in row]) for row in grid])


def _column_spans(spans: np.ndarray, tile: Tile, config: DeviceConfig) -> np.ndarray:
    """A tile's static spans (`static_spans`) per column: (N, arrays, J), or (N, J); divided by
    the tile's drift-compensation factors (`Tile.gain`) unless `drift_adc_spans` is `fixed`."""
    resolved = static_spans(spans, config)
    columns = np.broadcast_to(resolved, (tile.shape[1], *resolved.shape[1:]))
    if tile.gain is None or config.drift_adc_spans == "fixed":
        return columns
    # drift compensation: each column's span (step ≥ 1 at t₀) follows its factor, measured by the
    # same reference read: the step may fall below 1 as the drifted sums shrink
    return columns / tile.gain.reshape(-1, *(1,) * (columns.ndim - 1))


def sliced_product(
    x: np.ndarray, stack: TileStack, config: DeviceConfig, rng: np.random.Generator | None = None, kept: bool = False
):
    """x @ W (int64) for integer rows x (B, K) on the tiles of `stack`, each tile's product through
    the DACs and ADCs as on its own crossbar (module docstring) and the tiles' results added. `rng`:
    the read noise of a stack of one tile.

    The per-pass products, the noise, the ADCs and the shift-and-add run on the stack's array
    backend (`TileStack.backend`), written against the array API standard: the input digits move
    there once per product (or are made there from rows `x` held there, with offset inputs), noise
    is drawn from `rng` on the host and moved, and the result comes back to NumPy (with `kept`, it
    stays on the backend) with the digital offset correction."""
    blocks = len(stack.edges) - 1
    if blocks > 1 and config.input_encoding == "sign_magnitude" and not config.noiseless:
        # a K-block without negative rows sends fewer planes: its own sums, in its own precision
        total = sum(
            sliced_product(x[:, a0:a1], stack.block(a), config) for a, (a0, a1) in enumerate(pairwise(stack.edges))
        )
        return stack.backend.moved(total) if kept else total
    backend = stack.backend
    xp = backend.xp
    rows, width = x.shape[0], stack.reads.shape[1]
    if on_backend(x) is not None and (config.input_encoding != "offset" or backend.is_numpy):
        x = on_backend(x).to_numpy(x)  # (digits made on the host)
    if on_backend(x) is not None:
        parts = _blocks_on(x, stack.edges, width, backend)
    elif stack.edges[-1] == blocks * width:
        parts = x.reshape(rows, blocks, width).transpose(1, 0, 2)
    else:
        parts = np.zeros((blocks, rows, width), x.dtype)

        def copy(r: slice) -> None:
            for a, (a0, a1) in enumerate(pairwise(stack.edges)):
                parts[a, r, : a1 - a0] = x[r, a0:a1]

        map_rows(copy, rows)
    n = stack.col_sums.shape[1]
    cells, arrays = config.cells_per_weight, config.read_arrays
    planes = input_planes(parts, config) if on_backend(parts) is None else _offset_planes(parts, config, backend)
    count = len(planes.planes)
    integral = config.integral  # analog sums are exact integers
    span = config.adc_full_scale.bit_length() + 2 + config.input_slices * config.dac_bits + cells * config.cell_bits
    if integral and span > 62:
        raise ValueError(
            f"'{config.name}' is too wide for the bit-sliced model (int64 overflow); "
            "use the exact fast path or fewer bits"
        )
    g = stack.reads  # with a full-scale ADC's step count folded in (`_fold_adc`)
    g_dtype = np.dtype(str(g.dtype).rsplit(".", 1)[-1])  # (the NumPy dtype of any backend's float dtype)
    pair = config.analog_subtraction
    # shift-and-add weights of the reads of one weight, (arrays, J): 2**(j·cell_bits), the pair's second
    # array subtracted; with analog subtraction the pair is one signed read per cell slice
    cell_scale = 2.0 ** (config.cell_bits * np.arange(cells))
    coefficients = cell_scale if pair else (np.array([1.0, -1.0][:arrays])[:, None] * cell_scale).ravel()
    # the shift-and-add is exact in the analog dtype while its bound stays below the mantissa
    full = config.adc_bits and config.adc_range in ("full", "full_pow2")
    top = 2**config.adc_bits if full else 2 ** (config.adc_full_scale.bit_length() + 1)
    bound = top * np.abs(planes.scale).sum() * np.abs(coefficients).sum()
    exact_in = g_dtype.type if bound < 2 ** (np.finfo(g_dtype).nmant + 1) else np.float64
    dtype = np.int64 if integral and bound >= 2**53 else exact_in
    out_dtype = np.int64 if dtype is np.int64 else np.float64
    as_xp = {t: getattr(xp, np.dtype(t).name) for t in (dtype, out_dtype, np.float64, np.int64, g_dtype.type)}
    scale = stack.held(("scale", np.dtype(dtype).str, planes.scale.tobytes()), lambda: planes.scale.astype(dtype))
    coefficients = stack.held(
        ("coefficients", np.dtype(dtype).str, coefficients.tobytes()), lambda: coefficients.astype(dtype)
    )
    # the digits' sources as bytes, or in a signed type (libraries other than NumPy shift few wider
    # unsigned types)
    widths = ((np.uint8, 8), (np.int16, 14), (np.int32, 30), (np.int64, 63))
    source_type = next(t for t, bits in widths if config.input_bits <= bits)
    sources = (
        [] if backend.is_numpy else [xp.astype(backend.moved(s), backend.dtype(source_type)) for s in planes.sources]
    )
    signs = None if planes.signs is None else backend.asarray(planes.signs.astype(g_dtype))
    total = backend.full((rows, n), 0, np.int64)
    # packed (`TileStack.pack`): planes i and i + h share a product, as the fraction and the integer part
    h = (count + 1) // 2
    packed = bool(stack.pack) and rng is None and backend.is_numpy and count > 1 and signs is None
    packed = packed and out_dtype is np.float64 and blocks * bound * config.adc_full_scale < 2**53
    per_row = 4 * (h * width + count * g.shape[2]) if packed else 4 * count * (width + g.shape[2])
    noiseless_bytes = PACKED_CHUNK_BYTES * pool_threads() if packed else NOISELESS_CHUNK_BYTES
    chunk_bytes = CHUNK_BYTES if rng is not None else backend.chunk_bytes or noiseless_bytes
    chunk = max(1, chunk_bytes // per_row)  # rows (bounding the analog intermediates of one block)
    if packed:  # (enough rows for an efficient BLAS product: the columns then go in blocks)
        chunk = max(chunk, PACKED_MIN_ROWS)
    if rng is None and backend.is_numpy:  # (at least a chunk per thread)
        chunk = max(1, min(chunk, -(-rows // pool_threads())))
    step = max(1, chunk_bytes // (per_row * min(chunk, max(rows, 1))))  # K-blocks at a time
    columns, per_column = g.shape[2], arrays * cells
    block_columns = columns  # a packed product's columns at a time (a full-scale ADC's are independent)
    if packed and stack.spans is None and config.adc_range != "calibrated":
        fitting = chunk_bytes // (4 * count * min(chunk, max(rows, 1))) // per_column * per_column
        block_columns = min(columns, max(per_column, fitting))

    def noise(shape: tuple[int, ...], sigma: float):
        return backend.asarray((sigma * rng.standard_normal(shape)).astype(g_dtype, copy=False))

    def plane_digits(i: int, a0: int, a1: int, start: int, b: int):
        source, shift, mask = planes.planes[i]
        digits = xp.bitwise_and(xp.bitwise_right_shift(sources[source][a0:a1, start : start + b, ...], shift), mask)
        digits = xp.astype(digits, as_xp[g_dtype.type])
        return digits if signs is None else digits * signs[a0:a1, start : start + b, ...]

    fold = _adc_fold(config, g_dtype) if packed else None
    folded = stack.folded if not packed else fold is not None
    # a packed product's sums leave the split as the ADC takes them: times 2**w for the fractions, and
    # the ADC's factor (`_adc_fold`) if any
    factors = np.array([2.0**stack.pack] * h + [1.0] * (count - h)) * (fold or 1.0)
    factors = factors.astype(g_dtype).reshape(count, 1, 1)

    epilogue = _one_pass(stack, planes, config, coefficients, dtype, packed, fold)

    def packed_digits(start: int, b: int, a0: int, a1: int, digits: np.ndarray, spare: np.ndarray) -> None:
        """Into `digits` (t, h, b, K): plane i's digits · 2**-w plus plane i + h's (NumPy)."""
        rows, paired = (slice(a0, a1), slice(start, start + b)), count - h
        for i in range(count):
            planes.digits(i, rows, digits[:, i] if i < h else spare[:, i - h])
        digits *= g_dtype.type(2.0**-stack.pack)
        digits[:, :paired] += spare

    def packed_sums(digits: np.ndarray, a0: int, c0: int, c1: int, out: np.ndarray, split: bool) -> np.ndarray:
        """The column sums (t, count, b, c1 - c0) of packed `digits` on columns [c0, c1), into `out`
        (without `split`: the packed sums, (t, h, b, c1 - c0))."""
        t, _, b, _ = digits.shape
        sums = out[: t * (count if split else h) * b * (c1 - c0)].reshape(t, -1, b, c1 - c0)
        for a in range(t):
            np.matmul(digits[a].reshape(h * b, width), g[a0 + a, :, c0:c1], out=sums[a, :h].reshape(h * b, -1))
        if not split:
            return sums
        paired = count - h
        np.floor(sums[:, :paired], out=sums[:, h:])  # (the integer parts: planes h…)
        sums[:, :paired] -= sums[:, h:]
        sums *= factors
        return sums

    def convert(start: int, b: int, a0: int, a1: int, given: np.ndarray | None = None, raw: bool = False):
        """The outputs (b, n) of K-blocks [a0, a1) on rows [start, start + b), or a packed product's
        (`given`); `raw`: the column sums the ADCs read, (t, count, b, columns)."""
        t = a1 - a0
        if given is not None:  # (a packed product's sums)
            sums = given
        elif backend.is_numpy:  # (written in place)
            digits = np.empty((t, count, b, width), g_dtype)
            for i in range(count):
                planes.digits(i, (slice(a0, a1), slice(start, start + b)), digits[:, i])
        elif len(sources) == 1 and signs is None:  # (every plane at once: shifts and masks per plane)
            shifts = stack.held(
                ("shifts", source_type.__name__),
                lambda: np.array([p[1] for p in planes.planes], source_type).reshape(1, -1, 1, 1),
            )
            masks = stack.held(
                ("masks", source_type.__name__),
                lambda: np.array([p[2] for p in planes.planes], source_type).reshape(1, -1, 1, 1),
            )
            digits = xp.bitwise_and(
                xp.bitwise_right_shift(sources[0][a0:a1, None, start : start + b, ...], shifts), masks
            )
            digits = xp.astype(digits, as_xp[g_dtype.type])
        else:
            digits = xp.stack([plane_digits(i, a0, a1, start, b) for i in range(count)], axis=1)
        if given is None:
            if config.input_noise:  # the DACs' noise reaches every cell of the row
                digits += noise(digits.shape, config.input_noise * (2**config.dac_bits - 1))
            sums = xp.matmul(xp.reshape(digits, (t, count * b, width)), g[a0:a1, ...])
            if config.hrs_apart and not pair:  # (a pair's HRS currents cancel in the subtraction)
                sums += config.hrs_level * xp.reshape(xp.sum(digits, axis=-1), (t, count * b, 1))
            if config.read_noise:
                squares = xp.reshape(digits * digits, (count * b, width))
                sigma = config.read_noise * xp.sqrt(xp.matmul(squares, g[0, ...] * g[0, ...]))
                sums[0, ...] += sigma * noise(sums.shape[1:], 1.0)
        n_block = sums.shape[-1] // per_column
        sums = xp.reshape(sums, (t, count, b, n_block, arrays, cells))
        spans = None if stack.spans is None else stack.spans[a0:a1, None, None, ...]
        if raw:  # (converted by `epilogue`)
            return np.reshape(_output_noise(sums, config, rng, backend), (t, count, b, -1))
        if pair:
            differences = sums[..., 0, :] - sums[..., 1, :]
            differences = _output_noise(differences, config, rng, backend)
            levels, den, num = _adc_levels(differences, config, True, False, stack.max_sum, spans, stack.tiles)
        else:
            sums = _output_noise(sums, config, rng, backend)
            levels, den, num = _adc_levels(sums, config, False, folded, stack.max_sum, spans, stack.tiles)
        reads_dtype = dtype
        if not isinstance(den, float):  # a step per read or per column: read-backs that are no integers, in float64
            levels = levels * den / num
            den, num, reads_dtype = 1.0, 1, np.float64
        reads = xp.astype(xp.reshape(levels, (t, count, b, -1)), as_xp[reads_dtype], copy=False)
        negative = planes.negative_rows[a0:a1, start : start + b]
        if planes.flip_last and negative.any():
            flip = backend.asarray(np.where(negative, -1, 1).astype(reads_dtype)[..., None])
            reads[:, -1, ...] = reads[:, -1, ...] * flip
        # per K-block: Σ over the reads of a weight times 2**(j·cell_bits), then Σ_p scale_p · that
        # (the larger contraction first, over the contiguous reads; exact in either order)
        cells_added = xp.matmul(xp.reshape(reads, (t, count, b * n_block, -1)), coefficients)
        result = xp.matmul(scale, cells_added)
        if den == num:
            out = result if reads_dtype is not dtype else xp.astype(result, as_xp[out_dtype], copy=False)
        elif out_dtype is np.int64:
            out = xp.astype(_rint(xp.astype(result, xp.float64) * den / num, xp), xp.int64)
        else:  # (result · F') / L: exact up to the division, so ties round as the exact value does
            out = xp.astype(result, xp.float64)
            out *= den
            out /= num
        if stack.gains is not None:  # drift compensation of each column's analog part
            out = xp.reshape(out, (t, b, n)) * stack.gains[a0:a1, None, :]
        if given is not None:  # (rounded per tile, added in float64: integers below 2**53)
            return np.sum(np.rint(out, out=out), axis=0).reshape(b, n_block)
        if out.dtype != xp.int64:
            out = xp.astype(_rint(out, xp), xp.int64)
        return xp.reshape(xp.sum(out, axis=0), (b, n))

    def run(chunk_rows: tuple[int, int]) -> None:
        start, b = chunk_rows
        if not packed:
            done = None if epilogue is None else np.zeros((b, n))
            for a0 in range(0, blocks, step):
                a1 = min(blocks, a0 + step)
                if epilogue is None:
                    total[start : start + b, ...] += convert(start, b, a0, a1)
                else:
                    epilogue(convert(start, b, a0, a1, raw=True), a0, a1, start, done)
            if done is not None:  # (integers below 2**53)
                total[start : start + b] += done.astype(np.int64)
            return
        t = min(step, blocks)  # (the buffers, reused by the chunk's K-blocks and column blocks)
        digits, spare = np.empty((t, h, b, width), g_dtype), np.empty((t, count - h, b, width), g_dtype)
        buffer, done = np.empty(t * count * b * block_columns, g_dtype), np.zeros((b, n))
        for a0 in range(0, blocks, step):
            a1 = min(blocks, a0 + step)
            packed_digits(start, b, a0, a1, digits[: a1 - a0], spare[: a1 - a0])
            for c0 in range(0, columns, block_columns):
                c1 = min(columns, c0 + block_columns)
                sums = packed_sums(digits[: a1 - a0], a0, c0, c1, buffer, epilogue is None)
                if epilogue is None:
                    done[:, c0 // per_column : c1 // per_column] += convert(start, b, a0, a1, sums)
                else:
                    epilogue(sums, a0, a1, start, done[:, c0 // per_column : c1 // per_column])
        total[start : start + b] = done

    chunks = [(start, min(chunk, rows - start)) for start in range(0, rows, chunk)]
    if rng is None and backend.is_numpy:  # chunks are independent: on the threads of `using_threads`
        map_chunks(run, chunks)
    else:  # read noise is drawn chunk after chunk; another backend takes them one after another
        if rng is not None and (blocks > 1 or stack.tiles is not None):
            raise ValueError("read noise is drawn per tile: a stacked product takes one tile")
        with backend.running():
            for each in chunks:
                run(each)
    # the digital corrections, summed over the K-blocks: o·(Σ_k W + c·K) and c·Σ_k x
    if on_backend(parts) is not None:
        return _corrected_on(total, planes, parts, stack, config, kept)
    result = _integers_to_numpy(total, backend)
    if planes.offsets.any():
        per_block = stack.col_sums + stack.weight_offset * np.diff(stack.edges)[:, None]
        result -= np.matmul(planes.offsets.T, per_block)
    if stack.weight_offset.any():
        result -= np.matmul(parts.sum(axis=-1, dtype=np.int64).T, stack.weight_offset)
    return backend.moved(result) if kept else result


def _one_pass(stack: TileStack, planes: InputPlanes, config: DeviceConfig, coefficients, dtype, packed: bool, fold):
    """Where Numba is installed and the ADC has one step for every read: a function that adds the
    outputs of a chunk's column sums (a `packed` product's, else one product per plane's) to its
    results in one pass (`kernels.one_pass`), with the arithmetic of `_adc_levels`
    (`_adc_arithmetic`): bit for bit the NumPy passes'; else None. `fold`: the factor a packed
    product's split takes into the sums (`_adc_fold`), or None."""
    full = config.adc_range in ("full", "full_pow2") and (config.adc_bits > 0 or config.integral)
    plain = stack.gains is None and stack.spans is None and not config.analog_subtraction
    if not (full and plain and stack.backend.is_numpy and dtype is not np.int64):
        return None
    kernel = kernels.one_pass()
    if kernel is None:
        return None
    folded = fold is not None if packed else stack.folded
    num, den = _full_scale_ratio(config, config.signed_adc)
    kind = stack.reads.dtype.type
    if config.adc_bits == 0 or (den == num and config.integral):  # (levels = sums: integers)
        num, den, multiply, divide, low, high = 1, 1.0, False, False, None, None
    else:
        wide, multiply, divide, low, high = _adc_arithmetic(
            config, stack.reads.dtype, config.signed_adc, folded, num, den, stack.max_sum
        )
        kind = np.float64 if wide else kind
    adc = (kind(num if multiply else 1), kind(den if divide else 1))
    adc += (kind(-np.inf if low is None else low), kind(np.inf if high is None else high))
    read_back = (1.0, 1.0) if den == num else (float(den), float(num))
    weights = np.multiply.outer(planes.scale, np.asarray(coefficients)).astype(dtype)  # (plane, read)
    weights = np.tile(weights, stack.reads.shape[2] // weights.shape[1])
    weights = np.stack([weights, weights * np.array([1] * (len(weights) - 1) + [-1], dtype)[:, None]])
    flips = planes.negative_rows if planes.flip_last else np.zeros(planes.negative_rows.shape, bool)
    factors = stack.reads.dtype.type(2.0**stack.pack * (fold or 1.0)), stack.reads.dtype.type(fold or 1.0)
    high_weights = weights  # (unread)
    if packed:  # the fields of packed plane i: planes i and i + h, scaled as the split leaves them
        h = (weights.shape[1] + 1) // 2
        high_weights = np.zeros_like(weights[:, :h])
        high_weights[:, : weights.shape[1] - h] = weights[:, h:]
        weights = np.ascontiguousarray(weights[:, :h])
    operands = (packed, *factors, *adc, weights, high_weights)

    def epilogue(sums: np.ndarray, a0: int, a1: int, start: int, into: np.ndarray) -> None:
        kernel(sums, *operands, flips[a0:a1, start : start + len(into)], read_back, into)

    return epilogue


def _blocks_on(x, edges: np.ndarray, width: int, backend: ArrayBackend):
    """The K-blocks of rows `x` held on `backend`, (blocks, B, width), zero past a block's edge."""
    xp, rows = backend.xp, x.shape[0]
    if edges[-1] == (len(edges) - 1) * width:
        return xp.permute_dims(xp.reshape(x, (rows, len(edges) - 1, width)), (1, 0, 2))
    parts = backend.full((len(edges) - 1, rows, width), 0, numpy_dtype_of(x))
    for a, (a0, a1) in enumerate(pairwise(edges)):
        parts[a, :, : a1 - a0] = x[:, int(a0) : int(a1)]
    return parts


def _offset_planes(x, config: DeviceConfig, backend: ArrayBackend) -> InputPlanes:
    """`input_planes` of rows `x` held on `backend`, for offset inputs: there, the source digits
    u = x + o (in the narrowest type that holds them) and the offsets o; the planes' scales on the host."""
    xp, bits, dac = backend.xp, config.input_bits, config.dac_bits
    negative = xp.any(x < 0, axis=-1)
    offsets = xp.astype(negative, xp.int64) * 2 ** (bits - 1)
    utype = np.min_scalar_type(2**bits - 1)
    u = xp.astype(xp.astype(x, xp.int64) + offsets[..., None], backend.dtype(utype))
    planes = _digits(0, bits, dac)
    return InputPlanes((u,), tuple(p for p, _ in planes), np.array([c for _, c in planes]), negative, offsets)


def _corrected_on(total, planes: InputPlanes, parts, stack: TileStack, config: DeviceConfig, kept: bool):
    """`total` less the digital corrections o·(Σ_k W + c·K) and c·Σ_k x on the stack's backend, for
    rows `parts` held there: in float64, exact while every partial sum stays below 2**53 (else in
    int64 on the host)."""
    backend = stack.backend
    xp = backend.xp
    per_block = stack.col_sums + stack.weight_offset * np.diff(stack.edges)[:, None]
    columns = parts.shape[0] * parts.shape[2]
    terms = np.abs(per_block).sum(axis=0).max(initial=0) + columns * np.abs(stack.weight_offset).max(initial=0)
    if 2**config.input_bits * terms >= 2**53:  # (|x| and o below 2**input_bits: the rows fit the inputs)
        host = _integers_to_numpy(total, backend)
        host -= np.matmul(backend.to_numpy(planes.offsets).T, per_block)
        host -= np.matmul(backend.to_numpy(xp.sum(parts, axis=-1, dtype=xp.int64)).T, stack.weight_offset)
        return backend.moved(host) if kept else host
    offsets = xp.permute_dims(xp.astype(planes.offsets, xp.float64), (1, 0))
    correction = xp.matmul(offsets, stack.held(("per_block",), lambda: per_block.astype(np.float64)))
    if stack.weight_offset.any():
        sums = xp.permute_dims(xp.astype(xp.sum(parts, axis=-1, dtype=xp.int64), xp.float64), (1, 0))
        offset = stack.held(("weight_offset",), lambda: stack.weight_offset.astype(np.float64))
        correction = correction + xp.matmul(sums, offset)
    result = total - xp.astype(correction, xp.int64)
    return result if kept else _integers_to_numpy(result, backend)
