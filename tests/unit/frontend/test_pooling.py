"""Pooling over 1, 2 and 3 spatial axes (strides, dilations, pads, `ceil_mode`, `count_include_pad`,
MaxPool's indices) against onnxruntime, through the whole flow in exact mode on the ideal device."""

import numpy as np
import onnxruntime
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

import cimxdsl
from cimxdsl.frontend.attributes import NodeAttributes, OnnxImportError
from cimxdsl.frontend.onnx_importer import import_onnx
from cimxdsl.frontend.pooling import pool_window


def pool_model(op_type: str, shape, outputs: int = 1, **attributes):
    names = ["y", "indices"][:outputs]
    node = helper.make_node(op_type, ["x"], names, name="pool", **attributes)
    types = [TensorProto.FLOAT, TensorProto.INT64]
    graph = helper.make_graph(
        [node],
        "pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(n, t, None) for n, t in zip(names, types, strict=False)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


def onnxruntime_outputs(model, x):
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})


@st.composite
def pooling(draw):
    """A pooling node's attributes and a fitting input: per axis a size, kernel, stride, dilation
    and pads smaller than the kernel (as onnxruntime requires)."""
    rank = draw(st.integers(1, 3))
    kernel = draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    strides = draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    dilations = draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    pads = [draw(st.integers(0, k - 1)) for k in kernel * 2]
    spans = [(k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True)]
    size = [draw(st.integers(max(1, s - pads[i] - pads[i + rank]), s + 5)) for i, s in enumerate(spans)]
    attributes = dict(kernel_shape=kernel, strides=strides, dilations=dilations, pads=pads)
    attributes["ceil_mode"] = draw(st.integers(0, 1))
    return [draw(st.integers(1, 2)), draw(st.integers(1, 3)), *size], attributes


SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(pooling(), st.sampled_from(["MaxPool", "AveragePool", "AveragePoolIncludingPads", "LpPool"]))
def test_pooling_equals_onnxruntime(case, op_type):
    shape, attributes = case
    if op_type == "AveragePoolIncludingPads":
        op_type, attributes = "AveragePool", {**attributes, "count_include_pad": 1}
    if op_type == "LpPool":
        attributes["p"] = 3
    model = pool_model(op_type, shape, **attributes)
    x = np.random.default_rng(len(shape)).normal(size=shape).astype(np.float32)
    (expected,) = onnxruntime_outputs(model, x)
    (result,) = cimxdsl.compile(model, device="ideal", mode="exact").run(x).outputs
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-6)


@SETTINGS
@given(pooling(), st.integers(0, 1))
def test_max_pool_indices_equal_onnxruntime(case, storage_order):
    shape, attributes = case
    if len(shape) != 4:
        storage_order = 0  # onnxruntime has column-major indices for 2-D pooling only
    model = pool_model("MaxPool", shape, 2, storage_order=storage_order, **attributes)
    # a few values, so that windows hold ties: the first maximum in the window is the one indexed
    x = np.random.default_rng(7).integers(0, 4, size=shape).astype(np.float32)
    expected = onnxruntime_outputs(model, x)
    outputs = cimxdsl.compile(model, device="ideal", mode="exact").run(x).outputs
    np.testing.assert_array_equal(outputs[0], expected[0])
    real = expected[0] > np.finfo(np.float32).min  # a window of padding only has no index (onnxruntime's is arbitrary)
    np.testing.assert_array_equal(outputs[1][real], expected[1][real])


def test_global_pooling_of_three_spatial_axes():
    x = np.random.default_rng(1).normal(size=(2, 3, 4, 5, 6)).astype(np.float32)
    for op_type, reference in (("GlobalAveragePool", np.mean), ("GlobalMaxPool", np.max)):
        model = pool_model(op_type, x.shape)
        (result,) = cimxdsl.compile(model, device="ideal", mode="exact").run(x).outputs
        np.testing.assert_allclose(result, reference(x, axis=(2, 3, 4), keepdims=True), rtol=1e-5)


def test_windows_count_padding_only_with_count_include_pad_and_never_the_ceil_mode_extension():
    # 5 positions, kernel 3, stride 2, pads 1 and 1, ceil: windows start at -1, 1, 3 (the last reads 3, 4, 5)
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3], strides=[2], pads=[1, 1], ceil_mode=1)
    window = pool_window(node, NodeAttributes(node), (1, 1, 5))
    assert window.out == (3,) and window.extension == (0,)
    assert window.counts(False).tolist() == [2, 3, 2] and window.counts(True).tolist() == [3, 3, 3]
    # 4 positions, kernel 3, stride 2, ceil: windows at 0 and 2; the second reads 2, 3 and the extension 4
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3], strides=[2], ceil_mode=1)
    window = pool_window(node, NodeAttributes(node), (1, 1, 4))
    assert window.out == (2,) and window.extension == (1,)
    assert window.counts(True).tolist() == [3, 2]
    assert window.flat_positions().tolist() == [[0, 1, 2], [2, 3, -1]]


def test_two_dimensional_pooling_without_dilations_stays_tosa():
    ops = {op.name for op in import_onnx(pool_model("AveragePool", (1, 2, 6, 6), kernel_shape=[3, 3])).walk()}
    assert "tosa.avg_pool2d" in ops and "tensor.gather" not in ops


@pytest.mark.parametrize(
    "shape, attributes, message",
    [
        ((1, 1, 6, 6), {"kernel_shape": [2, 2, 2]}, "attribute 'kernel_shape' must have 2 entries for 2 spatial axes"),
        ((1, 1, 6), {"kernel_shape": [2], "pads": [1, 1, 1, 1]}, "attribute 'pads' must have 2 entries for 1 spatial"),
        ((1, 1, 3), {"kernel_shape": [3], "dilations": [2]}, "the window (5) is larger than the padded input (3)"),
        ((1, 6), {"kernel_shape": [2]}, "the input must be [N, C, spatial…], got [1, 6]"),
    ],
)
def test_a_window_that_does_not_fit_is_a_one_line_error(shape, attributes, message):
    node = helper.make_node("MaxPool", ["x"], ["y"], name="pool", **attributes)
    with pytest.raises(OnnxImportError) as error:
        pool_window(node, NodeAttributes(node), shape)
    assert str(error.value).startswith(f"MaxPool node 'pool': {message}") and "\n" not in str(error.value)
    with pytest.raises(OnnxImportError) as error:  # shape inference may see it first
        import_onnx(pool_model("MaxPool", shape, **attributes))
    assert "\n" not in str(error.value)


def test_two_dimensional_average_with_pads_counted_does_not_count_the_ceil_mode_extension():
    model = pool_model("AveragePool", (1, 1, 4, 4), kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1, count_include_pad=1)
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    (result,) = cimxdsl.compile(model, device="ideal", mode="exact").run(x).outputs
    # windows at rows/columns 0-2 and 2-3 (the third row or column is the extension): their means
    np.testing.assert_allclose(result.ravel(), [x[0, 0, :3, :3].mean(), x[0, 0, :3, 2:].mean(), x[0, 0, 2:, :3].mean(), 12.5])


def test_an_average_whose_dilated_window_holds_only_padding_is_zero():
    """Rows 0 and 1 with a pad of 1 each side, kernel 2, dilation 3: the one window reads rows -1
    and 2, both padding; without the padding counted onnxruntime averages it to 0 (not 0 / 0)."""
    model = pool_model(
        "AveragePool", (1, 2, 2, 5), kernel_shape=[2, 2], dilations=[3, 1], pads=[1, 0, 1, 0], count_include_pad=0
    )
    x = np.random.default_rng(3).normal(size=(1, 2, 2, 5)).astype(np.float32)
    (expected,) = onnxruntime_outputs(model, x)
    (result,) = cimxdsl.compile(model, device="ideal", mode="exact").run(x).outputs
    assert expected.shape == (1, 2, 1, 4)
    np.testing.assert_array_equal(result, expected)
