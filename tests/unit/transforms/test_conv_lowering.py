"""Convolutions lowered through im2col + gemm give the convolution's result at every level."""

import numpy as np
import pytest

from cimxdsl.interpreters import numeric, run
from cimxdsl.interpreters.cinm import im2col
from tests.unit.helpers import apply, parse

CONV = """
func.func @main(%x: tensor<2x3x7x6xi32>, %w: tensor<4x3x3x2xi32>, %b: tensor<2x4x3x5xi32>) -> (tensor<2x4x3x5xi32>, tensor<2x4x3x5xi32>) {
  %e = tensor.empty() : tensor<2x4x3x5xi32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<[1, 1]> : tensor<2xi64>, strides = dense<[2, 1]> : tensor<2xi64>} ins(%x, %w : tensor<2x3x7x6xi32>, tensor<4x3x3x2xi32>) outs(%e : tensor<2x4x3x5xi32>) -> tensor<2x4x3x5xi32>
  %c = arith.constant dense<[[[[1, -2], [3, 0], [2, 2]], [[-1, 1], [0, 0], [4, -3]], [[2, 1], [1, 1], [0, -1]]], [[[0, 1], [1, 0], [2, 3]], [[1, 1], [-2, 0], [1, -3]], [[2, 2], [1, 0], [0, 1]]], [[[3, 1], [0, 0], [2, 1]], [[1, -1], [0, 2], [1, -3]], [[0, 1], [1, 1], [5, -1]]], [[[1, 1], [1, 1], [1, 1]], [[0, 0], [0, 0], [0, 0]], [[-1, -1], [-1, -1], [-1, -1]]]]> : tensor<4x3x3x2xi32>
  %z = linalg.conv_2d_nchw_fchw {dilations = dense<[1, 1]> : tensor<2xi64>, strides = dense<[2, 1]> : tensor<2xi64>} ins(%x, %c : tensor<2x3x7x6xi32>, tensor<4x3x3x2xi32>) outs(%b : tensor<2x4x3x5xi32>) -> tensor<2x4x3x5xi32>
  return %y, %z : tensor<2x4x3x5xi32>, tensor<2x4x3x5xi32>
}
"""


def reference_conv(x: np.ndarray, w: np.ndarray, strides, dilations) -> np.ndarray:
    """A direct (loop over kernel positions) convolution, independent of im2col."""
    n, _c, h, wd = x.shape
    f, _, kh, kw = w.shape
    (sh, sw), (dh, dw) = strides, dilations
    oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (wd - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, f, oh, ow), np.int64)
    for ky in range(kh):
        for kx in range(kw):
            window = x[:, :, ky * dh : ky * dh + sh * (oh - 1) + 1 : sh, kx * dw : kx * dw + sw * (ow - 1) + 1 : sw]
            out += np.einsum("nchw,fc->nfhw", window, w[:, :, ky, kx])
    return out


@pytest.mark.parametrize("strides, dilations", [((1, 1), (1, 1)), ((2, 1), (1, 2)), ((3, 2), (2, 1))])
@pytest.mark.parametrize(
    "channels, block_bytes", [(3, numeric.COPY_BLOCK_BYTES), (8, numeric.COPY_BLOCK_BYTES), (8, 500)]
)
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_im2col_matches_direct_convolution(strides, dilations, channels, block_bytes, layout, monkeypatch):
    """Few channels (windows copied whole) and many (channel vectors per kernel offset, in blocks of
    output rows: the whole at once, or blocks of one or two rows), from an image in NCHW memory
    (laid out NHWC first) or already NHWC (as padding leaves a convolution's output)."""
    monkeypatch.setattr(numeric, "COPY_BLOCK_BYTES", block_bytes)
    rng = np.random.default_rng(3)
    x, w = rng.integers(-9, 9, (2, channels, 11, 10)), rng.integers(-9, 9, (5, channels, 3, 2))
    if layout == "nhwc":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    cols = im2col(x, (3, 2), strides, dilations)
    n, f = x.shape[0], w.shape[0]
    expected = reference_conv(x, w, strides, dilations)
    product = (cols @ w.reshape(f, -1).T).reshape(n, *expected.shape[2:], f).transpose(0, 3, 1, 2)
    np.testing.assert_array_equal(product, expected)


def test_conv_through_the_memristor_pipeline():
    rng = np.random.default_rng(4)
    x, w, b = (
        rng.integers(-128, 128, (2, 3, 7, 6)),
        rng.integers(-128, 128, (4, 3, 3, 2)),
        rng.integers(-9, 9, (2, 4, 3, 5)),
    )
    module = parse(CONV)
    constant = next(op for op in module.walk() if op.name == "arith.constant").value
    from cimxdsl.dialects.utils import dense_array

    expected = [reference_conv(x, w, (2, 1), (1, 1)), reference_conv(x, dense_array(constant), (2, 1), (1, 1)) + b]
    for spec in [
        "",
        "linalg-to-cinm",
        "tile{rows=8 cols=3}",
        "cinm-to-cim{crossbars=3}",
        "schedule-list",
        "cim-to-memristor",
        "memristor-to-func",
    ]:
        if spec:
            apply(module, spec)
        outputs = run(module, [x, w, b], "ideal").outputs
        for got, want in zip(outputs, expected, strict=True):
            np.testing.assert_array_equal(got, want, err_msg=f"after {spec or 'import'}")
