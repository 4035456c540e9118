"""NumPy helpers the interpreter functions of several dialects share: integer division, the error
function, im2col and the convolutions built on it."""

import itertools
import math as pymath

import numpy as np

from cimxdsl.device.threads import map_chunks, map_rows

COPY_BLOCK_BYTES = 1 << 19
"""The bytes `contiguous_copy` writes a block at a time (about an L2 cache)."""


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


def contiguous_copy(view: np.ndarray) -> np.ndarray:
    """A C-ordered copy of `view`, a strided view of another array (overlapping windows, a transpose).

    NumPy copies in the order of the result, reading the source with large strides when the result's
    last axes are not the source's innermost. When the axis the source holds innermost is at least
    as long as the result's axes after it together, the copy runs instead one index of those later
    axes at a time (a run along the inner axis each), over a block of the leading axes whose copy
    stays in cache."""
    shape = view.shape
    if view.ndim < 2 or not view.size:
        return np.ascontiguousarray(view)
    result = np.empty(shape, view.dtype)
    inner = int(np.argmin([abs(s) if n > 1 else np.inf for n, s in zip(shape, view.strides, strict=True)]))
    later = shape[inner + 1 :]
    if not later or shape[inner] < pymath.prod(later):

        def rows(r: slice) -> None:
            result[r] = view[r]

        map_rows(rows, shape[0], max(1, COPY_BLOCK_BYTES // max(result[0].nbytes, 1)))  # (a block a part at least)
        return result
    # a block: one index of the axes before `axis` and a run of `rows` along it (all if the whole fits)
    fits = next((a for a in range(inner + 1) if result[(0,) * a].nbytes <= COPY_BLOCK_BYTES), inner)
    axis = max(fits - 1, 0)
    rows = max(1, COPY_BLOCK_BYTES // result[(0,) * (axis + 1)].nbytes) if fits else shape[0]
    whole = (slice(None),) * (inner - axis)
    positions = list(itertools.product(*map(range, later)))

    def copy(block: tuple) -> None:
        for position in positions:
            index = block + position
            result[index] = view[index]

    outers = itertools.product(*map(range, shape[:axis]))
    map_chunks(
        copy, [(*outer, slice(top, top + rows), *whole) for outer in outers for top in range(0, shape[axis], rows)]
    )
    return result


def strided(source: np.ndarray, coefficients: np.ndarray, constants: np.ndarray, shape) -> np.ndarray:
    """The read-only view `r` of `shape` with `r[i] = source[constants + coefficients · i]`
    (`coefficients`: source axes × result axes, non-negative, in range: the caller checks)."""
    start = source[tuple(slice(int(c), None) for c in constants)]
    strides = [int(s) for s in np.asarray(source.strides, np.int64) @ coefficients.astype(np.int64)]
    return np.lib.stride_tricks.as_strided(start, tuple(shape), strides, writeable=False)


def gather(source: np.ndarray, coefficients: np.ndarray, constants: np.ndarray, shape) -> np.ndarray:
    """The C-ordered copy of `strided(source, coefficients, constants, shape)` (overlapping windows,
    as im2col's): when the last of the source's axes in the order the result first uses them (C of
    an NCHW image for im2col's windows) runs along a result axis at least as long as the axes after
    it together, from the source laid out in that order (NHWC) and in runs along that axis
    (`contiguous_copy`)."""
    used = [np.flatnonzero(row) for row in coefficients]
    order = sorted(range(source.ndim), key=lambda axis: used[axis][0] if used[axis].size else -1)
    last = used[order[-1]]
    if last.size and shape[last[0]] >= pymath.prod(shape[last[0] + 1 :]):
        source = np.ascontiguousarray(source.transpose(order)).transpose(np.argsort(order))
    return contiguous_copy(strided(source, coefficients, constants, shape))


def im2col(x: np.ndarray, kernel, strides, dilations, channels_last: bool = False) -> np.ndarray:
    """Rows `(n, oy, ox)` of input windows in column order `(c, ky, kx)` (see `cinm.op.im2col`):
    `[n, oy, ox, c, ky, kx] = x[n, c, oy·sh + ky·dh, ox·sw + kx·dw]`, gathered. With
    `channels_last`, in column order `(ky, kx, c)`: one copy of runs of C contiguous elements from
    the images held as NHWC (none for a 1×1 kernel at stride 1 on an NHWC-held image)."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilations
    n, c, h, w = x.shape
    oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1
    if channels_last:
        image = np.ascontiguousarray(np.asarray(x).transpose(0, 2, 3, 1))
        view = nhwc_windows(image, kernel, strides, dilations)
        return view.reshape(n * oh * ow, kh * kw * c)  # (a copy unless the view is the image)
    coefficients = np.zeros((4, 6), np.int64)
    coefficients[0, 0] = coefficients[1, 3] = 1
    coefficients[2, [1, 4]] = sh, dh
    coefficients[3, [2, 5]] = sw, dw
    patches = gather(np.asarray(x), coefficients, np.zeros(4, np.int64), (n, oh, ow, c, kh, kw))
    return patches.reshape(n * oh * ow, c * kh * kw)


def nhwc_windows(image: np.ndarray, kernel, strides, dilations) -> np.ndarray:
    """The read-only view (n, oy, ox, ky, kx, c) of the windows of NHWC images:
    `[n, oy, ox, ky, kx, c] = image[n, oy·sh + ky·dh, ox·sw + kx·dw, c]`."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilations
    n, h, w, c = image.shape
    oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1
    coefficients = np.zeros((4, 6), np.int64)
    coefficients[0, 0] = coefficients[3, 5] = 1
    coefficients[1, [1, 3]] = sh, dh
    coefficients[2, [2, 4]] = sw, dw
    return strided(image, coefficients, np.zeros(4, np.int64), (n, oh, ow, kh, kw, c))


def conv2d_nchw_fchw(x: np.ndarray, w: np.ndarray, strides, dilations) -> np.ndarray:
    """A convolution of NCHW images with FCHW weights: the weights as an F × C·KH·KW matrix times
    each image's windows as C·KH·KW × OH·OW columns (the windows a strided view of the image,
    gathered by the reshape), in one batched product. The result is a new NCHW-ordered array
    (`linalg_convolution` adds into it)."""
    f, c, kh, kw = w.shape
    nhwc = np.ascontiguousarray(x).transpose(0, 2, 3, 1)  # (the NCHW memory seen as NHWC)
    windows = nhwc_windows(nhwc, (kh, kw), strides, dilations).transpose(0, 5, 3, 4, 1, 2)  # (n, c, ky, kx, oy, ox)
    n, oh, ow = windows.shape[0], *windows.shape[-2:]
    cols = windows.reshape(n, c * kh * kw, oh * ow)
    return np.matmul(w.reshape(f, -1), cols).reshape(n, f, oh, ow)


def conv2d_ngchw_gfchw(x: np.ndarray, w: np.ndarray, strides, dilations) -> np.ndarray:
    """A grouped convolution (NGCHW images, GFCHW weights), as one batched product of each group's patches."""
    n, g, c, h, width = x.shape
    _, f, _, kh, kw = w.shape
    cols = im2col(x.reshape(n, g * c, h, width), (kh, kw), strides, dilations)
    per_group = np.matmul(cols.reshape(len(cols), g, -1).transpose(1, 0, 2), w.reshape(g, f, -1).transpose(0, 2, 1))
    oh = (h - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    return per_group.reshape(g, n, oh, -1, f).transpose(1, 0, 4, 2, 3)
