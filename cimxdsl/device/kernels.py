"""Compiled kernels of the NumPy backend, through Numba where it is installed (the `fast` extra).

After a bit-sliced product NumPy takes several passes over the column sums (a packed product's
split, the ADC's scale, divide, round and clamp) and two batched products (the shift-and-add),
together as long as the product itself. `one_pass()` does all of it in one pass over the sums;
without Numba it is None and the NumPy passes run (`one_pass_python` is its source, uncompiled).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

import numpy as np


def one_pass_python(sums, packed, unpack, fold, num, den, low, high, weights, high_weights, negative, read_back, done):
    """Add to `done` (b, N) float64 the outputs of the column sums `sums` (t, P, b, N·R) of t
    K-blocks: per K-block a, row r and output n, Σ over the planes p and the R reads j of an
    output of weights[p, j] · level(s), read back (times `read_back[0]`, divided by `read_back[1]`,
    in float64), rounded, and added over the K-blocks.

    level(s) = min(max(rint(s · `num` / `den`), `low`), `high`) in the dtype of those: the ADC as
    NumPy's passes compute it. `weights` (2, P, N·R) are the shift-and-add weights of each plane
    and column, the second with the last plane negated, for the rows `negative` (t, b) marks.
    `packed`: the P sums of a row are packed pairs of planes — sum i holds s_{i+P} + s_i · 2**-w
    (an odd last plane alone: s_i · 2**-w) — split and scaled as NumPy's split leaves them (the
    fraction times `unpack`, the integer part times `fold`), the fractions weighted by `weights`,
    the integer parts by `high_weights` (2, P, N·R). Every level is an integer, so the order of
    the additions does not change the result."""
    t, planes, b, columns = sums.shape  # (the weights may have more columns: those of the whole stack)
    outputs = done.shape[1]
    reads = columns // outputs
    scale, steps = read_back
    acc = np.zeros(columns, weights.dtype)
    for r in range(b):
        for a in range(t):
            acc[:] = 0
            flip = 1 if negative[a, r] else 0
            for p in range(planes):
                row, lows, highs = sums[a, p, r], weights[flip, p], high_weights[flip, p]
                if packed:
                    for c in range(columns):
                        whole = np.floor(row[c])
                        fraction = (row[c] - whole) * unpack
                        acc[c] += lows[c] * min(max(np.rint(fraction * num / den), low), high)
                        acc[c] += highs[c] * min(max(np.rint(whole * fold * num / den), low), high)
                else:
                    for c in range(columns):
                        acc[c] += lows[c] * min(max(np.rint(row[c] * num / den), low), high)
            for n in range(outputs):
                value = acc[n * reads]
                for j in range(1, reads):
                    value += acc[n * reads + j]
                done[r, n] += np.rint(np.float64(value) * scale / steps)


_ENABLED = [True]


@contextmanager
def numpy_passes() -> Iterator[None]:
    """Within: `one_pass()` is None, so the NumPy passes run (to compare the two)."""
    _ENABLED.append(False)
    try:
        yield
    finally:
        _ENABLED.pop()


def one_pass():
    """`one_pass_python` compiled by Numba (imported at the first call), releasing the interpreter
    lock (for the pool's threads), its machine code cached on disk where a cache folder is
    writable; None without Numba (or within `numpy_passes`)."""
    return _compiled() if _ENABLED[-1] else None


@cache
def _compiled():
    try:
        import numba
    except ImportError:  # (the NumPy passes run instead)
        return None
    try:
        return numba.njit(nogil=True, cache=True)(one_pass_python)
    except RuntimeError:  # (no writable cache folder: compiled in each process)
        return numba.njit(nogil=True)(one_pass_python)
