"""TOSA pooling in the host interpreter functions against a window-by-window reference: padding
never wins a max nor counts in a mean, maxima keep the input's dtype, and sums keep a float
input's (integers add exactly, in float64)."""

from types import SimpleNamespace

import numpy as np
import pytest

from cimxdsl.interpreters.tosa import pool


def pooling_op(kernel, stride, pad):
    values = lambda v: SimpleNamespace(get_values=lambda: tuple(v))  # noqa: E731
    return SimpleNamespace(kernel=values(kernel), stride=values(stride), pad=values(pad))


def reference(x, kernel, stride, pad, reduce):
    """Each output pixel reduced over the real input elements its window covers (NHWC)."""
    (kh, kw), (sh, sw), (top, bottom, left, right) = kernel, stride, pad
    n, h, w, c = x.shape
    oh, ow = (h + top + bottom - kh) // sh + 1, (w + left + right - kw) // sw + 1
    out = np.zeros((n, oh, ow, c))
    for oy in range(oh):
        for ox in range(ow):
            y0, x0 = oy * sh - top, ox * sw - left
            window = x[:, max(y0, 0) : y0 + kh, max(x0, 0) : x0 + kw]
            out[:, oy, ox] = reduce(window.reshape(n, -1, c), axis=1)
    return out


GEOMETRIES = [  # (kernel, stride, pad): padded on every side, on some, as a ceil mode extends, none
    ((3, 3), (2, 2), (1, 1, 1, 1)),
    ((3, 2), (1, 2), (2, 0, 0, 1)),
    ((3, 3), (1, 1), (0, 0, 0, 0)),
    ((3, 3), (2, 2), (0, 1, 0, 1)),
    ((1, 3), (1, 1), (0, 0, 1, 1)),
    ((2, 2), (2, 2), (0, 0, 0, 0)),
]


@pytest.mark.parametrize("kernel, stride, pad", GEOMETRIES)
def test_max_pool_keeps_integers_and_ignores_padding(kernel, stride, pad):
    x = np.random.default_rng(0).integers(-100, -1, (2, 7, 6, 3)).astype(np.int32)  # all below a zero pad
    result, _ = pool(x, pooling_op(kernel, stride, pad), np.maximum)
    assert result.dtype == np.int32
    np.testing.assert_array_equal(result, reference(x, kernel, stride, pad, np.max))


@pytest.mark.parametrize("kernel, stride, pad", GEOMETRIES)
def test_average_pool_divides_by_the_real_elements(kernel, stride, pad):
    """Float inputs add in their own precision: within float32's rounding of a sum of the window's
    elements and of the division."""
    x = np.random.default_rng(1).normal(size=(2, 7, 6, 3)).astype(np.float32)
    sums, counts = pool(x, pooling_op(kernel, stride, pad), np.add)
    assert sums.dtype == np.float32
    got = sums / counts
    expected = reference(x.astype(np.float64), kernel, stride, pad, np.mean)
    eps = np.finfo(np.float32).eps
    size = kernel[0] * kernel[1]
    bound = size * eps * reference(np.abs(x).astype(np.float64), kernel, stride, pad, np.mean) + eps * np.abs(expected)
    assert np.all(np.abs(got - expected) <= bound)


@pytest.mark.parametrize("kernel, stride, pad", GEOMETRIES)
def test_average_pool_of_integers_adds_exactly(kernel, stride, pad):
    x = np.random.default_rng(2).integers(-(2**31), 2**31 - 1, (2, 7, 6, 3)).astype(np.int32)
    sums, _ = pool(x, pooling_op(kernel, stride, pad), np.add)
    assert sums.dtype == np.float64
    np.testing.assert_array_equal(sums, reference(x.astype(np.int64), kernel, stride, pad, np.sum))
