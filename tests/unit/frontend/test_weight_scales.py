"""Per-output-channel weight scales: symmetric, each channel's largest magnitude over 2^(bits-1) - 1,
along the columns of a matmul's K×N weights and the filters of a convolution's F×C×kh×kw weights.
Square weights, whose rows and columns have different ranges, tell a wrong axis from the right one."""

import numpy as np
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.linalg.ops import MatmulOp

from cimxdsl.dialects import cinm
from cimxdsl.dialects.utils import dense_array
from cimxdsl.frontend.onnx_importer import import_onnx
from cimxdsl.frontend.quantize import quantize, weight_scales

# 4×4: column n holds values up to 1, 2, 4, 8 in magnitude; row k holds 8 in one column only
SQUARE = np.array(
    [[0.5, -2.0, 1.0, 8.0], [-1.0, 0.5, -4.0, 2.0], [0.25, 1.5, 3.0, -7.5], [0.75, -1.0, 0.5, 1.0]], np.float32
)
COLUMN_PEAKS = np.array([1.0, 2.0, 4.0, 8.0])
ROW_PEAKS = np.array([8.0, 4.0, 7.5, 1.0])


def test_matmul_weights_are_scaled_per_column():
    wide = np.array([[0.1, -3.0, 0.0], [-0.4, 1.0, 50.0]])  # columns up to 0.4, 3 and 50
    np.testing.assert_allclose(weight_scales(wide, 1, 8), [0.4 / 127, 3.0 / 127, 50.0 / 127], rtol=1e-12)
    np.testing.assert_allclose(weight_scales(wide, 1, 4), [0.4 / 7, 3.0 / 7, 50.0 / 7], rtol=1e-12)
    np.testing.assert_allclose(weight_scales(SQUARE, 1, 8), COLUMN_PEAKS / 127, rtol=1e-7)
    np.testing.assert_allclose(weight_scales(SQUARE, 0, 8), ROW_PEAKS / 127, rtol=1e-7)


def test_convolution_weights_are_scaled_per_filter():
    filters = np.zeros((3, 3, 2, 2))
    filters[0, 2, 1, 0], filters[1, 0, 0, 1], filters[2, 1, 1, 1] = -6.0, 0.5, 2.0
    filters[1, 2, 0, 0] = 0.25  # channel 2 holds 6 in filter 0 and 0.25 in filter 1: per filter, not per channel
    np.testing.assert_allclose(weight_scales(filters, 0, 8), [6.0 / 127, 0.5 / 127, 2.0 / 127], rtol=1e-12)
    assert weight_scales(np.zeros((2, 3)), 1, 8).tolist() == [1e-12 / 127] * 3  # an all-zero channel divides by no 0


def test_a_square_matmul_is_quantized_and_dequantized_per_column():
    """The quantized program's weight codes are round(W / s_n) per column n and the dequantize scale
    of column n is s_x · s_n, s_x the calibration inputs' largest magnitude over 127 (signed)."""
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="fc")
    graph = helper.make_graph(
        [node],
        "square",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        [numpy_helper.from_array(SQUARE, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    samples = [[np.random.default_rng(i).normal(size=(2, 4)).astype(np.float32)] for i in range(3)]
    module = quantize(import_onnx(model), samples)
    x_scale = max(float(np.abs(s[0]).max()) for s in samples) / 127
    w_scales = COLUMN_PEAKS / 127
    (dequantize,) = [op for op in module.walk() if isinstance(op, cinm.DequantizeOp)]
    np.testing.assert_allclose(dense_array(dequantize.scale), x_scale * w_scales, rtol=1e-6)
    (codes,) = [op.inputs[1].owner for op in module.walk() if isinstance(op, MatmulOp)]
    np.testing.assert_array_equal(dense_array(codes.value), np.rint(SQUARE / w_scales))
