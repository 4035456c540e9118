"""Compiled kernels of the NumPy backend, through Numba where it is installed (the `fast` extra).

A packed product (`crossbar.TileStack.pack`) leaves two input planes' column sums in one float;
NumPy then takes several passes over them (the split, the ADC, the shift-and-add) that together cost
as much as the product. `packed_epilogue()` does them in one pass over the packed sums; without
Numba it is None and the NumPy passes run (`packed_epilogue_python` is its source, uncompiled).
"""

from __future__ import annotations

from functools import cache

import numpy as np


def packed_epilogue_python(sums, unpack, num, den, high, low_weights, high_weights, read_back, done) -> None:
    """Add to `done` (b, N) the outputs of the packed column sums `sums` (t, h, b, N·R) of t
    K-blocks: a packed sum of planes i and i + h holds s_{i+h} + s_i · 2**-w (`unpack` = 2**w),
    that of an odd plane alone s_i · 2**-w. Each field s goes through the ADC, min(rint(s · `num` /
    `den`), `high`) in the dtype of those three, and is weighted by its plane's shift-and-add
    weight times its read's (`low_weights`, `high_weights`: (h, N·R), the fields' weights per
    column); the R reads of an output are added, read back (times `read_back[0]`, divided by
    `read_back[1]`, in float64) and rounded, and the K-blocks added. Every sum is of integers, so
    the order of the additions does not change the result."""
    t, h, b, columns = sums.shape  # (the weights may have more columns: those of the whole stack)
    outputs = done.shape[1]
    reads = columns // outputs
    scale, steps = read_back
    acc = np.zeros(columns, low_weights.dtype)
    for r in range(b):
        for a in range(t):
            acc[:] = 0
            for i in range(h):
                row, low, top = sums[a, i, r], low_weights[i], high_weights[i]
                for c in range(columns):
                    s = row[c]
                    whole = np.floor(s)
                    fraction = (s - whole) * unpack
                    acc[c] += low[c] * min(np.rint(fraction * num / den), high)
                    acc[c] += top[c] * min(np.rint(whole * num / den), high)
            for n in range(outputs):
                value = acc[n * reads]
                for j in range(1, reads):
                    value += acc[n * reads + j]
                done[r, n] += np.rint(np.float64(value) * scale / steps)


@cache
def packed_epilogue():
    """`packed_epilogue_python` compiled by Numba (imported at the first call), or None without it."""
    return _compiled(packed_epilogue_python)


def _compiled(function):
    """`function` compiled by Numba, releasing the interpreter lock (for the pool's threads), its
    machine code cached on disk where a cache folder is writable; None without Numba."""
    try:
        import numba
    except ImportError:  # (the NumPy passes run instead)
        return None
    try:
        return numba.njit(nogil=True, cache=True)(function)
    except RuntimeError:  # (no writable cache folder: compiled in each process)
        return numba.njit(nogil=True)(function)
