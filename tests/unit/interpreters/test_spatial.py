"""The `spat` interpreter functions, one op kind per test; expected values computed with NumPy."""

import numpy as np
import pytest
from xdsl.utils.exceptions import InterpretationError

from cimxdsl.interpreters import run
from tests.unit.helpers import parse

RNG = np.random.default_rng(0)


def call(body: str, args: dict[str, str], result: str, inputs: list[np.ndarray]) -> np.ndarray:
    """`@main(args) -> result` with `body` ending in `%r`, interpreted on `inputs`."""
    params = ", ".join(f"%{name}: {t}" for name, t in args.items())
    text = f"func.func @main({params}) -> {result} {{\n{body}\n  func.return %r : {result}\n}}"
    (out,) = run(parse(text), inputs).outputs
    return out


def conv_reference(image: np.ndarray, kernel: np.ndarray, pad: int, skip: set[int]) -> np.ndarray:
    """`[H, W, C] ⋆ [KH, KW, C, F]` with zero padding, stride 1, positions in `skip` left out."""
    kh, kw = kernel.shape[:2]
    padded = np.pad(image.astype(np.int64), ((pad, pad), (pad, pad), (0, 0)))
    h, w = padded.shape[0] - kh + 1, padded.shape[1] - kw + 1
    out = np.zeros((h, w, kernel.shape[3]), np.int64)
    for y in range(h):
        for x in range(w):
            for ky in range(kh):
                for kx in range(kw):
                    if ky * kw + kx not in skip:
                        out[y, x] += padded[y + ky, x + kx] @ kernel[ky, kx]
    return out


def test_compute_with_apply_filters_convolves_and_skips_positions():
    image = RNG.integers(-8, 8, (4, 4, 3))
    kernel = RNG.integers(-4, 4, (2, 2, 3, 2))
    weights = ", ".join(f"%w{k}" for k in range(3))
    types = ", ".join(["tensor<3x2xi32>"] * 3)
    body = "\n".join(
        [f"  %w{k} = arith.constant dense<{kernel[k // 2, k % 2].tolist()}> : tensor<3x2xi32>" for k in range(3)]
        + [
            f"  %r = spat.compute [{weights}] (%x) : [{types}] (tensor<4x4x3xi32>) -> tensor<5x5x2xi32> {{",
            "  ^bb0(%a0: tensor<3x2xi32>, %a1: tensor<3x2xi32>, %a2: tensor<3x2xi32>, %in: tensor<4x4x3xi32>):",
            "    %y = spat.apply_filters %in weights [0, 1, 2, -1] kernel [2, 2] pads [1, 1, 1, 1]"
            " : tensor<4x4x3xi32> -> tensor<5x5x2xi32>",
            "    spat.yield %y : tensor<5x5x2xi32>",
            "  }",
        ]
    )
    got = call(body, {"x": "tensor<4x4x3xi32>"}, "tensor<5x5x2xi32>", [image])
    np.testing.assert_array_equal(got, conv_reference(image, kernel, 1, skip={3}))


def test_apply_filters_rank_2_is_a_gemm():
    rows, matrix = RNG.integers(-8, 8, (3, 4)), RNG.integers(-8, 8, (4, 2))
    body = f"""  %w = arith.constant dense<{matrix.tolist()}> : tensor<4x2xi32>
  %r = spat.compute [%w] (%x) : [tensor<4x2xi32>] (tensor<3x4xi32>) -> tensor<3x2xi32> {{
  ^bb0(%a: tensor<4x2xi32>, %in: tensor<3x4xi32>):
    %y = spat.apply_filters %in weights [0] : tensor<3x4xi32> -> tensor<3x2xi32>
    spat.yield %y : tensor<3x2xi32>
  }}"""
    got = call(body, {"x": "tensor<3x4xi32>"}, "tensor<3x2xi32>", [rows])
    np.testing.assert_array_equal(got, sum(np.outer(rows[:, k], matrix[k]) for k in range(4)))


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        ("vadd", lambda a, b: a + b),
        ("vsub", lambda a, b: a - b),
        ("vmul", lambda a, b: a * b),
        ("vmax", lambda a, b: np.where(a > b, a, b)),
    ],
)
def test_vector_binary_ops_broadcast_the_channel_vector(op: str, expected):
    a, b = RNG.integers(-50, 50, (2, 2, 3)), RNG.integers(-50, 50, (3,))
    body = f"  %r = spat.{op} %a, %b : tensor<2x2x3xi32>, tensor<3xi32>"
    got = call(body, {"a": "tensor<2x2x3xi32>", "b": "tensor<3xi32>"}, "tensor<2x2x3xi32>", [a, b])
    np.testing.assert_array_equal(got, expected(a, b[None, None, :]))


@pytest.mark.parametrize(
    ("op", "values", "expected"),
    [
        ("vrelu", np.array([-3, 0, 5, -1]), np.array([0, 0, 5, 0])),
        ("vtanh", np.array([-1.0, 0.0, 0.5, 2.0]), np.array([-0.7615942, 0.0, 0.4621172, 0.9640276])),
        ("vsigm", np.array([-1.0, 0.0, 0.5, 2.0]), np.array([0.2689414, 0.5, 0.6224593, 0.8807971])),
    ],
)
def test_vector_unary_ops(op: str, values: np.ndarray, expected: np.ndarray):
    t = "tensor<4xi32>" if op == "vrelu" else "tensor<4xf32>"
    got = call(f"  %r = spat.{op} %a : {t}", {"a": t}, t, [values])
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_maxpool_ignores_padding():
    image = RNG.integers(-100, 0, (4, 4, 2))  # all negative: zero padding would win
    body = (
        "  %r = spat.maxpool %x kernel [3, 3] strides [2, 2] pads [1, 1, 1, 1] : tensor<4x4x2xi32> -> tensor<2x2x2xi32>"
    )
    got = call(body, {"x": "tensor<4x4x2xi32>"}, "tensor<2x2x2xi32>", [image])
    expected = [
        [image[max(0, 2 * y - 1) : 2 * y + 2, max(0, 2 * x - 1) : 2 * x + 2].max(axis=(0, 1)) for x in (0, 1)]
        for y in (0, 1)
    ]
    np.testing.assert_array_equal(got, np.array(expected))


@pytest.mark.parametrize("include_pad", [False, True])
def test_avgpool_floors_and_counts_padding_only_when_asked(include_pad: bool):
    image = RNG.integers(-20, 20, (3, 3, 1))
    flag = " count_include_pad" if include_pad else ""
    body = f"  %r = spat.avgpool %x kernel [2, 2] pads [1, 1, 0, 0]{flag} : tensor<3x3x1xi32> -> tensor<3x3x1xi32>"
    got = call(body, {"x": "tensor<3x3x1xi32>"}, "tensor<3x3x1xi32>", [image])
    expected = np.zeros((3, 3, 1), np.int64)
    for y in range(3):
        for x in range(3):
            window = image[max(0, y - 1) : y + 1, max(0, x - 1) : x + 1, 0]
            expected[y, x, 0] = window.sum() // (4 if include_pad else window.size)
    np.testing.assert_array_equal(got, expected)


def test_global_avgpool_floors_the_mean_per_channel():
    image = RNG.integers(-20, 20, (3, 2, 2))
    body = "  %r = spat.global_avgpool %x : tensor<3x2x2xi32> -> tensor<1x1x2xi32>"
    got = call(body, {"x": "tensor<3x2x2xi32>"}, "tensor<1x1x2xi32>", [image])
    np.testing.assert_array_equal(got.reshape(-1), [image[:, :, c].sum() // 6 for c in (0, 1)])


def test_concat_joins_along_the_axis():
    a, b = RNG.integers(0, 9, (2, 2, 1)), RNG.integers(0, 9, (2, 2, 2))
    body = "  %r = spat.concat axis 2 %a, %b : tensor<2x2x1xi32>, tensor<2x2x2xi32> -> tensor<2x2x3xi32>"
    got = call(body, {"a": "tensor<2x2x1xi32>", "b": "tensor<2x2x2xi32>"}, "tensor<2x2x3xi32>", [a, b])
    np.testing.assert_array_equal(got[..., :1], a)
    np.testing.assert_array_equal(got[..., 1:], b)


def test_channels_deliver_in_send_order():
    a, b = np.array([1, 2]), np.array([3, 4])
    body = """  %ch = spat.channel_new
  spat.channel_send %a to %ch : tensor<2xi32>
  spat.channel_send %b to %ch : tensor<2xi32>
  %first = spat.channel_receive %ch : tensor<2xi32>
  %second = spat.channel_receive %ch : tensor<2xi32>
  %r = spat.vsub %second, %first : tensor<2xi32>, tensor<2xi32>"""
    got = call(body, {"a": "tensor<2xi32>", "b": "tensor<2xi32>"}, "tensor<2xi32>", [a, b])
    np.testing.assert_array_equal(got, b - a)


def test_receiving_on_an_empty_channel_is_an_interpretation_error():
    body = """  %ch = spat.channel_new
  %r = spat.channel_receive %ch : tensor<2xi32> loc("prog.mlir":7:3)
  spat.channel_send %a to %ch : tensor<2xi32>"""
    with pytest.raises(InterpretationError, match=r"prog\.mlir:7:3: 'spat\.channel_receive': receive on a channel"):
        call(body, {"a": "tensor<2xi32>"}, "tensor<2xi32>", [np.zeros(2)])
