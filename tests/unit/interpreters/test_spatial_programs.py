"""Interpreter functions of spat and pim ops against independent NumPy computations."""

import numpy as np
import pytest

from cimxdsl.interpreters.numeric import conv2d_nchw_fchw
from tests.unit.helpers import parse
from tests.unit.spatial_programs import dense, interpret


def conv_as_spatial(image_shape, weights_shape, strides, pads, dilations) -> str:
    """A spat.compute applying one [C, F] matrix per kernel position; the weights are inputs."""
    h, w, c = image_shape
    f, _, kh, kw = weights_shape
    oh = (h + pads[0] + pads[2] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (w + pads[1] + pads[3] - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    k = kh * kw
    weights = ", ".join(f"%w{i}" for i in range(k))
    types = ", ".join(f"tensor<{c}x{f}xi32>" for _ in range(k))
    args = ", ".join(f"%a{i}: tensor<{c}x{f}xi32>" for i in range(k))
    indices = ", ".join(str(i) for i in range(k))
    return f"""
func.func @main(%x: tensor<{h}x{w}x{c}xi32>, {", ".join(f"%w{i}: tensor<{c}x{f}xi32>" for i in range(k))}) -> tensor<{oh}x{ow}x{f}xi32> {{
  %y = spat.compute [{weights}] (%x) : [{types}] (tensor<{h}x{w}x{c}xi32>) -> tensor<{oh}x{ow}x{f}xi32> {{
  ^bb0({args}, %in: tensor<{h}x{w}x{c}xi32>):
    %r = spat.apply_filters %in weights [{indices}] kernel [{kh}, {kw}] strides [{strides[0]}, {strides[1]}] pads [{", ".join(map(str, pads))}] dilations [{dilations[0]}, {dilations[1]}] : tensor<{h}x{w}x{c}xi32> -> tensor<{oh}x{ow}x{f}xi32>
    spat.yield %r : tensor<{oh}x{ow}x{f}xi32>
  }}
  func.return %y : tensor<{oh}x{ow}x{f}xi32>
}}
"""


@pytest.mark.parametrize(
    "strides, pads, dilations",
    [((1, 1), (1, 1, 1, 1), (1, 1)), ((2, 1), (0, 2, 1, 0), (1, 2)), ((2, 2), (1, 0, 0, 1), (2, 1))],
)
def test_apply_filters_is_the_convolution(strides, pads, dilations):
    rng = np.random.default_rng(7)
    x, w = rng.integers(-128, 128, (1, 3, 7, 6)), rng.integers(-128, 128, (4, 3, 3, 2))
    module = parse(conv_as_spatial((7, 6, 3), w.shape, strides, pads, dilations))
    matrices = [w[:, :, ky, kx].T for ky in range(3) for kx in range(2)]
    (got,) = interpret(module, [x[0].transpose(1, 2, 0), *matrices])
    padded = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    want = conv2d_nchw_fchw(padded, w, strides, dilations)[0].transpose(1, 2, 0)
    np.testing.assert_array_equal(got, want)


POOLS = """
func.func @main(%x: tensor<3x4x2xi32>, %b: tensor<2xi32>) -> (tensor<2x2x2xi32>, tensor<3x4x2xi32>, tensor<3x4x2xi32>, tensor<1x1x2xi32>, tensor<3x4x2xi32>, tensor<3x4x4xi32>) {
  %m = spat.maxpool %x kernel [2, 3] strides [2, 2] pads [1, 1, 0, 0] : tensor<3x4x2xi32> -> tensor<2x2x2xi32>
  %a = spat.avgpool %x kernel [3, 3] pads [1, 1, 1, 1] : tensor<3x4x2xi32> -> tensor<3x4x2xi32>
  %c = spat.avgpool %x kernel [3, 3] pads [1, 1, 1, 1] count_include_pad : tensor<3x4x2xi32> -> tensor<3x4x2xi32>
  %g = spat.global_avgpool %x : tensor<3x4x2xi32> -> tensor<1x1x2xi32>
  %s = spat.vsub %x, %b : tensor<3x4x2xi32>, tensor<2xi32>
  %j = spat.concat axis 2 %x, %s : tensor<3x4x2xi32>, tensor<3x4x2xi32> -> tensor<3x4x4xi32>
  func.return %m, %a, %c, %g, %s, %j : tensor<2x2x2xi32>, tensor<3x4x2xi32>, tensor<3x4x2xi32>, tensor<1x1x2xi32>, tensor<3x4x2xi32>, tensor<3x4x4xi32>
}
"""


def window(x: np.ndarray, y: int, x0: int, kh: int, kw: int, pt: int, pl: int, sy: int = 1, sx: int = 1):
    """The pixels of the window of output pixel (y, x0) that lie in the image."""
    rows = [r for r in range(y * sy - pt, y * sy - pt + kh) if 0 <= r < x.shape[0]]
    cols = [c for c in range(x0 * sx - pl, x0 * sx - pl + kw) if 0 <= c < x.shape[1]]
    return x[np.ix_(rows, cols)].reshape(-1, x.shape[2])


def test_pools_vector_ops_and_concat():
    x = np.random.default_rng(3).integers(-50, 50, (3, 4, 2))
    b = np.array([5, -7])
    m, a, c, g, s, j = interpret(parse(POOLS), [x, b])
    for oy in range(2):
        for ox in range(2):
            np.testing.assert_array_equal(m[oy, ox], window(x, oy, ox, 2, 3, 1, 1, 2, 2).max(axis=0))
    for oy in range(3):
        for ox in range(4):
            pixels = window(x, oy, ox, 3, 3, 1, 1)
            np.testing.assert_array_equal(a[oy, ox], np.floor_divide(pixels.sum(axis=0), len(pixels)))
            np.testing.assert_array_equal(c[oy, ox], np.floor_divide(pixels.sum(axis=0), 9))
    np.testing.assert_array_equal(g[0, 0], np.floor_divide(x.sum(axis=(0, 1)), 12))
    np.testing.assert_array_equal(s, x - b)
    np.testing.assert_array_equal(j, np.concatenate([x, x - b], axis=2))


EXCHANGE = """
func.func @main(%x: tensor<2xi32>) -> tensor<2xi32> {
  %g = bufferization.to_buffer %x : tensor<2xi32> to memref<2xi32>
  %out = memref.alloc() : memref<2xi32>
  %c0 = spat.channel_new
  %c1 = spat.channel_new
  pim.core() coreId 0 : () {
    %e = tensor.empty() : tensor<2xi32>
    %v0 = pim.load %g[0], %e size 2 : memref<2xi32>, tensor<2xi32>
    spat.channel_send %v0 to %c0 : tensor<2xi32>
    %r1 = spat.channel_receive %c1 : tensor<2xi32>
    pim.store %r1, %out[0] size 2 : tensor<2xi32>, memref<2xi32>
    pim.halt
  }
  pim.core() coreId 1 : () {
    %r0 = spat.channel_receive %c0 : tensor<2xi32>
    %v1 = spat.vrelu %r0 : tensor<2xi32>
    spat.channel_send %v1 to %c1 : tensor<2xi32>
    pim.halt
  }
  %t = bufferization.to_tensor %out restrict writable : memref<2xi32> to tensor<2xi32>
  func.return %t : tensor<2xi32>
}
"""


def test_cores_run_concurrently_until_all_halt():
    # Core 0 sends, then waits for core 1's answer, which core 1 computes from what it received:
    # run one after the other, core 0 could not finish.
    (got,) = interpret(parse(EXCHANGE), [np.array([-3, 4])])
    np.testing.assert_array_equal(got, [0, 4])


def test_cores_waiting_on_each_other_deadlock():
    # Both cores receive first: nothing can ever be sent.
    text = f"""
func.func @main(%x: tensor<2xi32>) -> tensor<2xi32> {{
  %c0 = spat.channel_new
  %c1 = spat.channel_new
  pim.core() coreId 0 : () {{
    %r1 = spat.channel_receive %c1 : tensor<2xi32>
    spat.channel_send %r1 to %c0 : tensor<2xi32>
    pim.halt
  }}
  pim.core() coreId 1 : () {{
    %r0 = spat.channel_receive %c0 : tensor<2xi32>
    spat.channel_send %r0 to %c1 : tensor<2xi32>
    pim.halt
  }}
  %v = arith.constant {dense(np.array([1, 2]))} : tensor<2xi32>
  func.return %v : tensor<2xi32>
}}
"""
    with pytest.raises(Exception, match=r"deadlock: cores 0, 1 wait on 'spat\.channel_receive'"):
        interpret(parse(text), [np.array([1, 2])])
