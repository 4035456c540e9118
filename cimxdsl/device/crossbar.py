"""Bit-sliced crossbar MVM (seeds/001 §6.2), vectorised with NumPy.

For a K×N integer weight tile W and input rows x:

- Weights. `differential`: the two arrays of the pair hold P = max(W, 0) and M = max(-W, 0).
  `offset`: one array holds V = W + c, with c = 0 for a tile without negative weights and
  c = 2**(weight_bits-1) otherwise. Each stored magnitude is cut into J = cells_per_weight slices of
  cell_bits bits on neighbouring columns (column n*J + j holds slice j of weight n).
- Inputs, exact by offset binary with a digital correction: a row with a negative entry is sent as
  u = x + o with o = 2**(input_bits-1), a non-negative row as u = x (o = 0). u is cut into
  S = input_slices digits of dac_bits bits, sent one per cycle (digits are never negative, so the
  analog column sums are never negative either).
- Per (input slice s, weight slice j) each array's column sums go through the ADC, then
  shift-and-add: y = Σ_s Σ_j 2**(s*dac_bits + j*cell_bits) ADC(d_s · G_j); the pair is subtracted
  (with `subtraction = "analog"` the pair's sums are subtracted first and one signed ADC converts
  the difference).
- Digital correction with the nominal weights: x @ W = y - c·Σ_k x_k - o·Σ_k W_k - o·c·K.

ADC: an n-bit converter with a power-of-two step. Its span is [0, 2**m), m the bit width of the
largest column sum it must convert: the theoretical maximum (rows × max DAC level × max cell level,
MNSIM's fixed range) for `full`, the largest sum observed in that read (per input row and slice pair)
for `calibrated`. Step = 2**max(0, m - n); a sum rounds to the nearest step and saturates at
(2**n - 1) steps, so the ADC is exact once n >= m; n = 0 means lossless.

Noise: programming error (relative, per cell, frozen in the `Tile`), stuck cells (highest / lowest
level), power-law drift, and read noise: every cell's current gets an independent relative error at
every read; the column's summed error is drawn exactly as N(0, read_noise² Σ_k d_k² g_k²).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cimxdsl.device.config import DeviceConfig

CHUNK_BYTES = 1 << 20  # bound on the per-chunk analog intermediates of one MVM (about an L2 cache)
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
    """The matrix the input digits multiply: the conductances, with a noiseless full-scale ADC's
    scale and half step folded in (`_fold_adc`)."""
    max_sum: float = np.inf
    """The largest column sum a read can produce (inf with noise): bounds the ADC's input."""

    @property
    def shape(self) -> tuple[int, int]:
        return self.weights.shape


def draw_stuck_cells(config: DeviceConfig, rng: np.random.Generator) -> np.ndarray | None:
    """A rows × arrays × cols map of stuck cells: +1 stuck on, -1 stuck off, 0 healthy."""
    if config.stuck_on_rate == 0 and config.stuck_off_rate == 0:
        return None
    draw = rng.random((config.rows, config.arrays_per_crossbar, config.cols))
    stuck = np.zeros(draw.shape, np.int8)
    stuck[draw < config.stuck_on_rate] = 1
    stuck[(draw >= config.stuck_on_rate) & (draw < config.stuck_on_rate + config.stuck_off_rate)] = -1
    return stuck


def encode_weights(w: np.ndarray, config: DeviceConfig, dtype: type) -> tuple[np.ndarray, int]:
    """Cell levels (K, N, arrays, J) of a validated tile, as `dtype`, and the offset c."""
    if config.encoding == "differential":
        magnitudes, offset = np.stack([np.maximum(w, 0), np.maximum(-w, 0)], axis=-1), 0
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
        if config.prog_noise:
            g *= 1 + config.prog_noise * rng.standard_normal(g.shape)
            np.maximum(g, 0, out=g)
        if stuck is not None:
            k, n, arrays, j = g.shape
            cells = stuck[:k, :, : n * j].reshape(k, arrays, n, j).transpose(0, 2, 1, 3)
            g[cells == 1] = 2**config.cell_bits - 1
            g[cells == -1] = 0
        g *= config.drift_time_s ** (-config.drift_nu)
    g = g.reshape(w.shape[0], -1)
    max_sum = float(g.sum(axis=0).max()) * (2**config.dac_bits - 1) if config.noiseless else np.inf
    return Tile(w, g, offset, w.sum(axis=0), int(np.abs(w).max()), _fold_adc(g, config), max_sum)


def _fold_adc(g: np.ndarray, config: DeviceConfig) -> np.ndarray:
    """`g`, or — for a noiseless full-scale ADC with a step above 1 and without analog subtraction —
    `g` divided by the step (exact: a power of two) with an extra row of ½: a constant input digit of
    1 against it adds the half step that rounds to the nearest level, so the product yields
    sum ÷ step + ½ directly."""
    full = config.adc_bits and config.adc_range == "full"
    step = _full_scale_step(config, False)
    if not (config.noiseless and full and not config.analog_subtraction and step > 1):
        return g
    reads = np.empty((g.shape[0] + 1, g.shape[1]), g.dtype)
    np.multiply(g, g.dtype.type(1 / step), out=reads[:-1])
    reads[-1] = 0.5
    return reads


def tile_mvm(
    tile: Tile,
    x: np.ndarray,
    config: DeviceConfig,
    rng: np.random.Generator | None = None,
    *,
    fast_path: bool = True,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """x @ W on a programmed tile for x of shape (B, K) or (K,); int64 for integer operands, or
    cast into `out` (of the result's shape) when given.

    With `fast_path` an exact config computes the product directly (same result, much faster).
    """
    x = np.asarray(x)
    if x.ndim not in (1, 2):
        raise ValueError(f"crossbar input must be a vector or a matrix, got shape {x.shape}")
    rows = x[None] if x.ndim == 1 else x
    out_rows = out[None] if out is not None and x.ndim == 1 else out
    _check_inputs(rows, tile, config)
    if rows.dtype.kind == "f" or tile.conductance is None or (fast_path and config.exact):
        y = _exact_product(rows, tile, out_rows)
    else:
        if rng is None and config.read_noise:
            rng = np.random.default_rng(config.seed)
        y = _sliced_product(rows, tile, config, rng)
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


def adc_convert(sums: np.ndarray, config: DeviceConfig) -> np.ndarray:
    """ADC of column sums shaped (S, B, N, arrays, J) (see the module docstring)."""
    levels, step = _adc_levels(sums.copy(), config, signed=False)
    return levels * step


def signed_adc_convert(differences: np.ndarray, config: DeviceConfig) -> np.ndarray:
    """ADC of a pair's column-sum differences shaped (S, B, N, J): a signed converter whose
    2**n levels span [-2**m, 2**m), m as for `adc_convert`; exact once n > m."""
    levels, step = _adc_levels(differences.copy(), config, signed=True)
    return levels * step


def _adc_levels(
    sums: np.ndarray, config: DeviceConfig, signed: bool, folded: bool = False, max_sum: float = np.inf
) -> tuple[np.ndarray, np.ndarray | float]:
    """The ADC levels of `sums` (converted in place) and the step that scales them back: a scalar
    for a full-scale ADC, per (S, B, J) read for a calibrated one. `folded` sums hold sum ÷ step + ½
    already (the product computed them so, see `_sliced_product`). A clamp that no sum up to
    `max_sum` (in magnitude) can reach is skipped."""
    bits = config.adc_bits
    if bits == 0:
        return sums, 1.0
    if config.adc_range == "full":
        step = _full_scale_step(config, signed)
    else:
        top = np.abs(sums) if signed else np.maximum(sums, 0)
        span_bits = np.frexp(top.max(axis=(2, 3) if sums.ndim == 5 else 2, keepdims=True))[1]
        step = np.exp2(np.maximum(span_bits + signed - bits, 0)).astype(sums.dtype)
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    if np.ndim(step) == 0 and step == 1 and config.noiseless and not signed:
        return sums, 1.0  # noiseless sums are integers below 2**bits: every level is exact
    if not folded:
        sums *= 1 / step
        sums += 0.5
    np.floor(sums, out=sums)
    reachable = np.floor(max_sum / step + 0.5) if np.ndim(step) == 0 else np.inf
    if reachable > high:
        np.minimum(sums, high, out=sums)
    if (signed and -reachable < low) or not config.noiseless:
        np.maximum(sums, low, out=sums)
    return sums, step


def _full_scale_step(config: DeviceConfig, signed: bool) -> float:
    """The step of a full-scale ADC: its 2**bits levels span [0, 2**m) (signed: [-2**m, 2**m)), m
    the bit width of the largest possible column sum."""
    return float(2 ** max(config.adc_full_scale.bit_length() + signed - config.adc_bits, 0))


# ---- helpers ----------------------------------------------------------------------------------
def _analog_dtype(config: DeviceConfig) -> type:
    """float32 where it is exact (noiseless sums below 2**24), else float64."""
    return np.float32 if config.noiseless and config.adc_full_scale < 2**24 else np.float64


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
    low, high = _weight_range(w, config)
    if w.min() < low or w.max() > high:
        bad = w.min() if w.min() < low else w.max()
        raise ValueError(
            f"weight {bad} does not fit {config.weight_bits}-bit {config.encoding} encoding (range {low}..{high})"
        )
    return np.array(w, dtype=np.int64)


def _weight_range(w: np.ndarray, config: DeviceConfig) -> tuple[int, int]:
    bits = config.weight_bits
    if config.encoding == "differential":
        return -(2**bits - 1), 2**bits - 1
    if w.min() >= 0:
        return 0, 2**bits - 1
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def _check_inputs(x: np.ndarray, tile: Tile, config: DeviceConfig) -> None:
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
    if x.size == 0:
        return
    bits = config.input_bits
    low, high = x.min(), x.max()
    if low >= -(2 ** (bits - 1)) and high <= (2 ** (bits - 1) - 1 if low < 0 else 2**bits - 1):
        return  # every row fits, signed or not
    row_min, row_max = x.min(axis=1), x.max(axis=1)
    signed = row_min < 0
    high = np.where(signed, 2 ** (bits - 1) - 1, 2**bits - 1)
    bad = (row_max > high) | (row_min < -(2 ** (bits - 1)))
    if bad.any():
        r = int(np.argmax(bad))
        value = row_max[r] if row_max[r] > high[r] else row_min[r]
        ranges = f"{-(2 ** (bits - 1))}..{2 ** (bits - 1) - 1} signed or 0..{2**bits - 1} unsigned"
        raise ValueError(f"input {value} (row {r}) does not fit {bits}-bit inputs ({ranges})")


def _exact_product(x: np.ndarray, tile: Tile, out: np.ndarray | None = None) -> np.ndarray:
    """x @ W, into `out` when it has the product's dtype."""
    w = tile.weights
    if x.dtype.kind == "f" or w.dtype.kind == "f":
        if out is not None and out.dtype == np.result_type(x, w):
            return np.matmul(x, w, out=out)
        return x @ w
    x_max = int(np.abs(x.astype(np.int64)).max()) if x.size else 0
    bound = x_max * int(tile.max_abs) * w.shape[0]
    if bound < _EXACT_FLOAT:
        return (x.astype(np.float64) @ w.astype(np.float64)).astype(np.int64)
    if bound < 2**63:
        return x.astype(np.int64) @ w
    raise ValueError("the crossbar product may overflow int64")


def _sliced_product(x: np.ndarray, tile: Tile, config: DeviceConfig, rng: np.random.Generator | None) -> np.ndarray:
    k, n = tile.shape
    slices, cells, arrays = config.input_slices, config.cells_per_weight, config.arrays_per_crossbar
    integral = config.noiseless  # analog sums are exact integers
    span = config.adc_full_scale.bit_length() + 1 + slices * config.dac_bits + cells * config.cell_bits
    if integral and span > 62:
        raise ValueError(
            f"'{config.name}' is too wide for the bit-sliced model (int64 overflow); "
            "use the exact fast path or fewer bits"
        )
    signed_rows = (x < 0).any(axis=1) if x.size and x.min() < 0 else np.zeros(x.shape[0], bool)
    offsets = np.where(signed_rows, 2 ** (config.input_bits - 1), 0)
    # u = x + o (modulo the dtype: exact, as u fits it)
    u = x.astype(np.min_scalar_type(2**config.input_bits))
    u += offsets.astype(u.dtype)[:, None]
    g = tile.reads  # with a full-scale ADC's scale and half step folded in (`_fold_adc`)
    g2 = g * g if config.read_noise else None
    pair = config.analog_subtraction
    full = config.adc_bits and config.adc_range == "full"
    fold = g.shape[0] > k
    # shift-and-add weights of the reads of one weight, (arrays, J): 2**(j·cell_bits), the pair's second
    # array subtracted; with analog subtraction the pair is one signed read per cell slice; and of the
    # input slices: 2**(s·dac_bits)
    cell_scale = 2.0 ** (config.cell_bits * np.arange(cells))
    coefficients = cell_scale if pair else (np.array([1.0, -1.0][:arrays])[:, None] * cell_scale).ravel()
    slice_scale = 2.0 ** (config.dac_bits * np.arange(slices))
    # the shift-and-add is exact in the analog dtype while its bound stays below the mantissa
    top = 2**config.adc_bits if full else 2 ** (config.adc_full_scale.bit_length() + 1)
    bound = top * slice_scale.sum() * np.abs(coefficients).sum()
    exact_in = g.dtype.type if bound < 2 ** (np.finfo(g.dtype).nmant + 1) else np.float64
    dtype = np.int64 if integral and bound >= 2**53 else exact_in
    out = np.empty((x.shape[0], n), dtype)
    chunk = max(1, CHUNK_BYTES // (4 * slices * (k + g.shape[1])))
    for start in range(0, x.shape[0], chunk):
        u_chunk = u[start : start + chunk]
        b = u_chunk.shape[0]
        digits = np.empty((slices, b, g.shape[0]), g.dtype)
        for i in range(slices):
            bits = u_chunk >> (config.dac_bits * i)
            np.bitwise_and(bits, 2**config.dac_bits - 1, out=digits[i, :, :k], casting="unsafe")
        digits[:, :, k:] = 1  # the folded half step
        sums = digits.reshape(slices * b, -1) @ g
        if g2 is not None:
            sigma = config.read_noise * np.sqrt((digits * digits).reshape(slices * b, k) @ g2)
            sums += sigma * rng.standard_normal(sums.shape)
        sums = sums.reshape(slices, b, n, arrays, cells)
        if pair:
            levels, step = _adc_levels(sums[:, :, :, 0] - sums[:, :, :, 1], config, True, max_sum=tile.max_sum)
        else:
            levels, step = _adc_levels(sums, config, signed=False, folded=fold, max_sum=tile.max_sum)
        if np.ndim(step):  # a calibrated ADC: a step per read
            levels *= step
            step = 1.0
        reads = levels.reshape(slices, -1).astype(dtype, copy=False)
        combined = (slice_scale.astype(dtype) @ reads).reshape(b * n, -1)  # over input slices, then cells
        out[start : start + b] = (combined @ coefficients.astype(dtype)).reshape(b, n) * dtype(step)
    correction = offsets[:, None] * (tile.col_sums[None, :] + tile.weight_offset * k)
    if tile.weight_offset:
        correction += tile.weight_offset * x.sum(axis=1, dtype=np.int64)[:, None]
    return np.rint(out).astype(np.int64) - correction
