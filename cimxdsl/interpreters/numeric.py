"""NumPy helpers the interpreter functions of several dialects share: integer division, the error
function, im2col and the convolutions built on it."""

import math as pymath

import numpy as np

IM2COL_BLOCK_BYTES = 1 << 19  # output rows im2col fills at once (about an L2 cache)


def divide(a, b):
    """`a / b`, truncated towards zero for integers (as `arith.divsi`)."""
    quotient = np.true_divide(a, b)
    return np.trunc(quotient) if np.issubdtype(np.result_type(a), np.integer) else quotient


ERF_SERIES = np.array([(-1) ** n / (pymath.factorial(n) * (2 * n + 1)) for n in range(40)]) * 2 / pymath.sqrt(pymath.pi)
"""erf(x) = x · Σ ERF_SERIES[n] · x²ⁿ (the Maclaurin series of the error function)."""
ERF_BANDS = (0.5, 1.0, 2.0)
"""Bounds of |x| below which the series is cut after as many terms as that bound needs; from the
last on, the continued fraction of erfc."""
ERF_ONE = 6.0
"""|x| from which erf(x) = ±1 in float64 (erfc(6) ≈ 2e-17); each branch runs only on its elements."""
ERF_BLOCK = 1 << 15
"""Elements the series evaluates at once (its terms then stay in cache)."""


def series_terms(bound: float) -> int:
    """The terms of the erf series after which the next is below 1e-20 for |x| < `bound`."""
    n = 1
    while bound ** (2 * n) / (pymath.factorial(n) * (2 * n + 1)) > 1e-20:
        n += 1
    return n


def erf(x):
    """The Gauss error function, vectorised in float64 (NumPy has none): the Maclaurin series for
    |x| < 2, and for |x| ≥ 2 erfc(x) = e^(-x²)/√π · 1/(x + (1/2)/(x + (2/2)/(x + (3/2)/(x + …))))
    cut after 40 terms (Abramowitz & Stegun, Handbook of Mathematical Functions, 1964, 7.1.5 and
    7.1.14). Within 1e-14 of `math.erf`; the result keeps a float input's dtype."""
    x = np.asarray(x)
    magnitude = np.abs(x.astype(np.float64)).ravel()
    result = np.ones_like(magnitude)  # erf(|x|) is 1.0 in float64 from |x| = ERF_ONE on; NaN stays in band 0
    band = sum((magnitude >= edge).view(np.int8) for edge in (*ERF_BANDS, ERF_ONE))
    for b, bound in enumerate((*ERF_BANDS, None)):
        where = np.flatnonzero(band == b)
        if where.size:
            part = magnitude[where]
            result[where] = erf_series(part, series_terms(bound)) if bound else erf_fraction(part)
    result = np.copysign(result.reshape(x.shape), x)
    return result.astype(np.result_type(x, np.float32) if x.dtype.kind == "f" else np.float64)


def erf_series(magnitude: np.ndarray, terms: int) -> np.ndarray:
    """The first `terms` terms of the erf series, by Horner's rule in place, a block at a time."""
    result = np.empty_like(magnitude)
    for start in range(0, magnitude.size, ERF_BLOCK):
        part = magnitude[start : start + ERF_BLOCK]
        square, acc = part * part, result[start : start + ERF_BLOCK]
        np.multiply(square, ERF_SERIES[terms - 1], out=acc)
        for c in ERF_SERIES[terms - 2 : 0 : -1]:
            acc += c
            acc *= square
        acc += ERF_SERIES[0]
        acc *= part
    return result


def erf_fraction(magnitude: np.ndarray) -> np.ndarray:
    """erf from the continued fraction of erfc (see `erf`)."""
    fraction = magnitude.copy()
    for k in range(40, 0, -1):
        np.divide(k / 2, fraction, out=fraction)
        fraction += magnitude
    return 1 - np.exp(-magnitude * magnitude) / (pymath.sqrt(pymath.pi) * fraction)


def round_half_away(x):
    """Rounds to the nearest integer, halves away from zero (as MLIR's `math.round`; NumPy rounds them to even)."""
    whole = np.trunc(x)
    return whole + np.where(np.abs(x - whole) >= 0.5, np.sign(x), 0)


def im2col(x: np.ndarray, kernel, strides, dilations) -> np.ndarray:
    """Rows `(n, oy, ox)` of input windows in column order `(c, ky, kx)` (see `cinm.op.im2col`).

    With many channels, each kernel offset's channel vectors are copied from an NHWC copy of `x`,
    block by block of output rows so that a block's columns stay in cache while the kernel offsets
    fill them; with few channels, the windows are copied whole."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilations
    n, c, h, w = x.shape
    oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1
    if c < kh * kw:
        extent = (dh * (kh - 1) + 1, dw * (kw - 1) + 1)
        windows = np.lib.stride_tricks.sliding_window_view(x, extent, axis=(2, 3))[:, :, ::sh, ::sw, ::dh, ::dw]
        return np.ascontiguousarray(windows.transpose(0, 2, 3, 1, 4, 5)).reshape(n * oh * ow, c * kh * kw)
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    cols = np.empty((n, oh, ow, c, kh, kw), x.dtype)
    block = max(1, IM2COL_BLOCK_BYTES // (ow * c * kh * kw * x.itemsize))
    for image in range(n):
        for top in range(0, oh, block):
            rows = min(block, oh - top)
            for ky in range(kh):
                y = ky * dh + sh * top
                for kx in range(kw):
                    x0 = kx * dw
                    source = nhwc[image, y : y + sh * (rows - 1) + 1 : sh, x0 : x0 + sw * (ow - 1) + 1 : sw]
                    cols[image, top : top + rows, :, :, ky, kx] = source
    return cols.reshape(n * oh * ow, c * kh * kw)


def conv2d_nchw_fchw(x: np.ndarray, w: np.ndarray, strides, dilations) -> np.ndarray:
    """A convolution of NCHW images with FCHW weights, as one matrix product of the patches."""
    f, _, kh, kw = w.shape
    cols = im2col(x, (kh, kw), strides, dilations)
    n = x.shape[0]
    oh = (x.shape[2] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    return (cols @ w.reshape(f, -1).T).reshape(n, oh, -1, f).transpose(0, 3, 1, 2)


def conv2d_ngchw_gfchw(x: np.ndarray, w: np.ndarray, strides, dilations) -> np.ndarray:
    """A grouped convolution (NGCHW images, GFCHW weights), as one batched product of each group's patches."""
    n, g, c, h, width = x.shape
    _, f, _, kh, kw = w.shape
    cols = im2col(x.reshape(n, g * c, h, width), (kh, kw), strides, dilations)
    per_group = np.matmul(cols.reshape(len(cols), g, -1).transpose(1, 0, 2), w.reshape(g, f, -1).transpose(0, 2, 1))
    oh = (h - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    return per_group.reshape(g, n, oh, -1, f).transpose(1, 0, 4, 2, 3)
