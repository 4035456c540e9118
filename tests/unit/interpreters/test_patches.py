"""Convolution patches in (ky, kx, c) order (`patches`): the windows equal a per-window NumPy
gather, and the convolutions whose layers read them (one product over all columns, depthwise)
give the tile-by-tile run's outputs (bit for bit on integers) and metrics."""

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import cimxdsl
from cimxdsl.device import Device
from cimxdsl.device.backend import array_backend, on_backend
from cimxdsl.interpreters import Program
from cimxdsl.interpreters.numeric import im2col
from cimxdsl.interpreters.patches import Geometry, Patches, Windows, channelwise_product, column_order


def naive_patches(x: np.ndarray, geometry: Geometry) -> np.ndarray:
    """Rows (n, oy, ox) of windows in column order (c, ky, kx), one window at a time."""
    (kh, kw), (sh, sw), (dh, dw) = geometry.kernel, geometry.strides, geometry.dilations
    n, _, h, w = x.shape
    oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1
    rows = []
    for b in range(n):
        for oy in range(oh):
            for ox in range(ow):
                window = x[b, :, oy * sh : oy * sh + dh * (kh - 1) + 1 : dh, ox * sw : ox * sw + dw * (kw - 1) + 1 : dw]
                rows.append(window.reshape(-1))
    return np.array(rows)


GEOMETRIES = [  # (N, C, H, W, kernel, strides, dilations)
    (1, 5, 6, 7, (1, 1), (1, 1), (1, 1)),
    (2, 3, 7, 6, (1, 1), (2, 2), (1, 1)),
    (1, 4, 8, 8, (3, 3), (1, 1), (1, 1)),
    (2, 6, 9, 8, (3, 3), (2, 2), (1, 1)),
    (1, 3, 11, 10, (2, 3), (1, 2), (2, 1)),
    (1, 130, 5, 5, (3, 3), (1, 1), (1, 1)),
]


@pytest.mark.parametrize("nhwc", [False, True])
@pytest.mark.parametrize(("n", "c", "h", "w", "kernel", "strides", "dilations"), GEOMETRIES)
def test_windows_are_the_patches_in_ky_kx_c_order(n, c, h, w, kernel, strides, dilations, nhwc):
    rng = np.random.default_rng(c * h + w)
    x = rng.integers(-100, 100, (n, h, w, c)).transpose(0, 3, 1, 2) if nhwc else rng.integers(-100, 100, (n, c, h, w))
    geometry = Geometry(kernel, strides, dilations)
    expected = naive_patches(x, geometry)
    np.testing.assert_array_equal(im2col(x, kernel, strides, dilations), expected)
    reordered = im2col(x, kernel, strides, dilations, channels_last=True)
    np.testing.assert_array_equal(reordered, expected[:, column_order(c, geometry.positions)])


@pytest.mark.parametrize("width", [1, 2])
def test_channelwise_product_is_each_channels_product(width):
    rng = np.random.default_rng(width)
    channels, positions, rows = 7, 9, 5
    weights = rng.integers(-127, 128, (channels, positions, width))
    x = rng.integers(-128, 128, (rows, channels * positions))  # (c, p) columns
    expected = np.hstack([x[:, g * positions : (g + 1) * positions] @ weights[g] for g in range(channels)])
    reordered = x[:, column_order(channels, positions)]
    np.testing.assert_array_equal(channelwise_product(reordered, weights), expected)
    floats = channelwise_product(reordered.astype(np.float32), weights.astype(np.float32))
    assert floats.dtype == np.float32
    np.testing.assert_allclose(floats, expected, rtol=1e-6)


@pytest.mark.parametrize("nhwc", [False, True])
@pytest.mark.parametrize(("n", "c", "h", "w", "kernel", "strides", "dilations"), GEOMETRIES)
def test_patches_that_pad_give_the_padded_images_patches(n, c, h, w, kernel, strides, dilations, nhwc):
    """A patches step that also pads (uneven widths, a value of -3) gives the patches of the image
    padded first, in both column orders, from NCHW- and NHWC-held images."""
    rng = np.random.default_rng(c * w + h)
    x = rng.integers(-100, 100, (n, h, w, c)).transpose(0, 3, 1, 2) if nhwc else rng.integers(-100, 100, (n, c, h, w))
    geometry, padding = Geometry(kernel, strides, dilations), ((2, 1), (0, 3), -3)
    padded = np.pad(x, [(0, 0), (0, 0), (2, 1), (0, 3)], constant_values=-3)
    expected = naive_patches(padded, geometry)
    for reordered in (False, True):
        (result,) = Patches(geometry, reordered, padding=padding)(None, None, (x,))
        order = column_order(c, geometry.positions) if reordered or geometry.positions == 1 else slice(None)
        np.testing.assert_array_equal(result, expected[:, order])


@pytest.mark.parametrize(("n", "c", "h", "w", "kernel", "strides", "dilations"), GEOMETRIES)
def test_patches_of_images_held_on_another_backend_are_made_there(n, c, h, w, kernel, strides, dilations):
    """Images held on another array backend (the standard's reference namespace): the patches, with
    and without a pad, in both column orders, made there and equal to the host's."""
    strict = array_backend("array_api_strict")
    x = np.random.default_rng(h * w + c).integers(-100, 100, (n, c, h, w)).astype(np.int32)
    geometry = Geometry(kernel, strides, dilations)
    for padding in (None, ((2, 1), (0, 3), -3)):
        for reordered in (False, True):
            patches = Patches(geometry, reordered, padding=padding)
            (expected,) = patches(None, None, (x,))
            (held,) = patches(None, None, (strict.asarray(x),))
            assert on_backend(held) is strict
            np.testing.assert_array_equal(strict.to_numpy(held), np.asarray(expected))


@pytest.mark.parametrize(("n", "c", "h", "w", "kernel", "strides", "dilations"), GEOMETRIES[2:])
def test_windows_of_a_depthwise_layer_are_its_patches(n, c, h, w, kernel, strides, dilations):
    """A depthwise layer reading the image's shifted views (`Windows`) gives its product from the
    gathered patches bit for bit (integers, one width per channel and two), and the windows gather
    to those patches."""
    rng = np.random.default_rng(c + h)
    x = rng.integers(-128, 128, (n, c, h, w))
    geometry = Geometry(kernel, strides, dilations)
    windows = Windows(np.ascontiguousarray(x.transpose(0, 2, 3, 1)), geometry)
    expected = naive_patches(x, geometry)
    assert windows.shape == expected.shape and len(windows) == expected.shape[0]
    np.testing.assert_array_equal(np.asarray(windows), expected[:, column_order(c, geometry.positions)])
    for width in (1, 2):
        weights = rng.integers(-127, 128, (c, geometry.positions, width))
        products = np.hstack(
            [expected[:, g * geometry.positions : (g + 1) * geometry.positions] @ weights[g] for g in range(c)]
        )
        np.testing.assert_array_equal(channelwise_product(windows, weights), products)


def convolutions(seed: int = 0) -> onnx.ModelProto:
    """A 3×3 convolution over 20 channels (180 weight rows: two 128-row tiles and their sum), a
    depthwise 3×3 at stride 2 and a 1×1 convolution."""
    rng = np.random.default_rng(seed)
    shapes = {"w1": (16, 20, 3, 3), "dw": (16, 1, 3, 3), "w2": (8, 16, 1, 1)}
    initializers = [numpy_helper.from_array(rng.normal(0, 0.3, s).astype(np.float32), k) for k, s in shapes.items()]
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "dw"], ["d"], group=16, pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Conv", ["d", "w2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "convolutions",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 20, 9, 9])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 5, 5])],
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("mode", ["exact", "int8"])
def test_reordered_layers_equal_the_tiles(mode):
    """Two inputs in a row (the second finds weights resident), each program on a device of its
    own: outputs as the tile-by-tile run's (bit for bit on integers), and the same metrics."""
    rng = np.random.default_rng(2)
    xs = rng.normal(size=(3, 1, 20, 9, 9)).astype(np.float32)
    compiled = cimxdsl.compile(convolutions(), device="ideal", mode=mode, calibration=xs[0], crossbars=4)
    module = compiled.module()
    fused, tiled = (
        Program(module, Device(compiled.device)),
        Program(module, Device(compiled.device), layer_products=False),
    )
    patches = [s.implementation for s in fused.prepared.fused if isinstance(s.implementation, Patches)]
    assert [p.reordered for p in patches] == [True, True, False]  # the 3×3 and the depthwise; 1×1: orders agree
    assert [p.windows for p in patches] == [False, True, False]  # (the depthwise layer reads the image's views)
    if mode == "exact":  # (the pads before both 3×3 layers, run by their patches steps)
        assert [p.padding for p in patches] == [((1, 1), (1, 1), 0.0), ((1, 1), (1, 1), 0.0), None]
    for x in xs[1:]:
        ours, theirs = fused([x]), tiled([x])
        if mode == "int8":
            np.testing.assert_array_equal(ours.outputs[0], theirs.outputs[0])
        else:  # float32 sums of at most 180 products, in another order
            np.testing.assert_allclose(ours.outputs[0], theirs.outputs[0], rtol=1e-5, atol=1e-5)
        assert ours.device.report() == theirs.device.report() and ours.layers == theirs.layers
        fused.device.reset_metrics(), tiled.device.reset_metrics()


def test_a_depthwise_layer_run_one_by_one_gathers_its_windows(monkeypatch):
    """Where a run of crossbar operations cannot be booked at once, its tile products count their
    inputs one by one: a depthwise layer's `Windows` are then gathered, with the same outputs and
    metrics as the tile-by-tile run."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(1, 20, 9, 9)).astype(np.float32)
    compiled = cimxdsl.compile(convolutions(), device="ideal", mode="exact", crossbars=4)
    module = compiled.module()
    tiled = Program(module, Device(compiled.device), layer_products=False)([x])
    monkeypatch.setattr(Device, "book", lambda *args, **kwargs: None)
    fused = Program(module, Device(compiled.device))([x])
    np.testing.assert_allclose(fused.outputs[0], tiled.outputs[0], rtol=1e-5, atol=1e-5)
    assert fused.device.report() == tiled.device.report() and fused.layers == tiled.layers


def test_a_pad_of_any_constant_runs_with_the_patches_it_feeds():
    """An ONNX Pad with an uneven border of 2.5 before a 3×3 convolution: the patches step pads the
    image as it lays it out (the pad's widths and value), with onnxruntime's outputs and the
    tile-by-tile run's metrics."""
    rng = np.random.default_rng(4)
    pads = np.array([0, 0, 2, 1, 0, 0, 0, 3], np.int64)  # (top 2, left 1, bottom 0, right 3)
    initializers = [
        numpy_helper.from_array(rng.normal(0, 0.3, (6, 20, 3, 3)).astype(np.float32), "w"),
        numpy_helper.from_array(pads, "pads"),
        numpy_helper.from_array(np.array(2.5, np.float32), "value"),
    ]
    nodes = [
        helper.make_node("Pad", ["x", "pads", "value"], ["p"], mode="constant"),
        helper.make_node("Conv", ["p", "w"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "padded",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 20, 7, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    x = rng.normal(size=(1, 20, 7, 6)).astype(np.float32)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (expected,) = session.run(None, {"x": x})
    compiled = cimxdsl.compile(model, device="ideal", mode="exact")
    module = compiled.module()
    fused = Program(module, Device(compiled.device))
    patches = [s.implementation for s in fused.prepared.fused if isinstance(s.implementation, Patches)]
    assert [p.padding for p in patches] == [((2, 0), (1, 3), 2.5)]
    ours, theirs = fused([x]), Program(module, Device(compiled.device), layer_products=False)([x])
    # float32 sums of 180 products of |x| ≲ 4.5 and |w| ≲ 1.2, in another order than onnxruntime's
    np.testing.assert_allclose(ours.outputs[0], expected, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(ours.outputs[0], theirs.outputs[0], rtol=1e-5, atol=1e-4)
    assert ours.device.report() == theirs.device.report()
