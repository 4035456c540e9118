"""`cinm-to-spatial{packing=kernel|im2col|sdk}`: every packing interprets to the host (integer)
result after every pass and its artifacts validate exactly; im2col uses fewer crossbars and
instructions where a channel tile leaves crossbar rows empty, sdk fewer crossbar reads where a
layer's output channels leave crossbar columns empty."""

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from cimxdsl.api import compile_pim
from cimxdsl.backend import read_artifacts, validate
from cimxdsl.backend.emit import write_program
from cimxdsl.device import load_device_config
from cimxdsl.device.chip import chip_preset
from cimxdsl.device.latency import Latencies
from cimxdsl.dialects import spatial as spat
from cimxdsl.dialects.crossbar_ops import FilterGeometry
from cimxdsl.transforms.pim.crossbar_weights import shifted_kernels, window_geometry, window_pixels
from cimxdsl.transforms.pim.pim_codegen import patch_runs
from tests.unit.backend.test_pim_cnn_ops import inception_densenet, shufflenet_mobilenet
from tests.unit.backend.test_pim_pipeline import reference_conv_relu
from tests.unit.helpers import apply, parse
from tests.unit.spatial_programs import ProgramBuilder, conv_program, interpret, resnet_program

PACKINGS = ["kernel", "im2col", "sdk"]


def lower_checked(text: str, x: np.ndarray, stages: list[str], out_dir) -> tuple:
    """Lower through `stages` (the first one `cinm-to-spatial`), checking every level against the
    host (integer) program and the artifacts with the validator: (golden, the crossbar matrices'
    shapes after the first stage, the artifacts, the final module)."""
    module = parse(text)
    (golden,) = interpret(module, [x])
    shapes = []
    for stage in stages:
        apply(module, stage)
        if stage is stages[0]:
            computes = [op for op in module.walk() if isinstance(op, spat.ComputeOp)]
            shapes = [w.type.get_shape() for c in computes for w in c.weights]
        (result,) = interpret(module, [x])
        np.testing.assert_array_equal(result, golden, err_msg=f"after {stage}")
    write_program(module, out_dir)
    artifacts = read_artifacts(out_dir)
    (validated,) = validate(artifacts, [x]).outputs
    np.testing.assert_array_equal(validated, golden, err_msg="validator")
    return golden, shapes, artifacts, module


def lower(text: str, x: np.ndarray, packing: str, xbar: int, per_compute: int, cores: int, per_core: int, out_dir):
    """(golden, weight shapes, artifacts) of the flow with `packing`."""
    stages = [
        f"cinm-to-spatial{{xbar-size={xbar} crossbars-per-compute={per_compute} packing={packing}}}",
        f"spatial-to-pim{{cores={cores} crossbars-per-core={per_core}}}",
        "pim-bufferize",
        "pim-codegen",
    ]
    golden, shapes, artifacts, _ = lower_checked(text, x, stages, out_dir)
    return golden, shapes, artifacts


def test_three_channel_3x3_conv_takes_one_crossbar_of_27_rows_under_im2col(tmp_path):
    rng = np.random.default_rng(4)
    weights = rng.integers(1, 8, (8, 3, 3, 3)) * rng.choice([-1, 1], (8, 3, 3, 3))
    x = rng.integers(-128, 128, (1, 3, 5, 5))
    text = conv_program(channels=3, filters=8, size=5, weights=weights)
    runs = {}
    for packing in ("kernel", "im2col"):
        golden, shapes, artifacts = lower(text, x, packing, 32, 16, 1, 16, tmp_path / packing)
        np.testing.assert_array_equal(golden, reference_conv_relu(x, weights))
        runs[packing] = shapes, artifacts
    (kernel_shapes, kernel), (im2col_shapes, im2col) = runs["kernel"], runs["im2col"]
    assert kernel_shapes == [(3, 8)] * 9  # one crossbar per kernel position, 3 rows used
    assert im2col_shapes == [(27, 8)]  # the 3 x 3 x 3 patch unrolled into the rows of one
    # Cells used / cells of the crossbars used (32 x 32 each): 9·3·8 of 9·1024, 27·8 of 1024.
    for artifacts, crossbars in ((kernel, 9), (im2col, 1)):
        assert sum(len(c.groups) for c in artifacts.cores) == crossbars
    # One mvmul per output pixel under im2col; per (pixel, position inside the image) under kernel
    # (13 of the 15 (output row, kernel row) pairs meet the 5-pixel image on each axis).
    assert im2col.instruction_counts()["mvmul"] == 25
    assert kernel.instruction_counts()["mvmul"] == 13 * 13
    # The patch is gathered with one lmv per run of contiguous image pixels: 3 for the 9 inner
    # pixels, 2 on the top and bottom edges (6 pixels), 3 on the left and right edges (6), 2 in
    # the corners (4); the 144 vvadd of the kernel packing's partial sums are gone.
    assert im2col.instruction_counts()["lmv"] == 9 * 3 + 6 * 2 + 6 * 3 + 4 * 2
    assert "vvadd" not in im2col.instruction_counts() and kernel.instruction_counts()["vvadd"] == 169 - 25
    assert sum(im2col.instruction_counts().values()) < sum(kernel.instruction_counts().values())


@pytest.mark.parametrize("packing", PACKINGS)
def test_strided_padded_conv_split_across_computes_validates(packing, tmp_path):
    """8 channels x 9 positions = 72 rows in crossbars of 16 rows: 5 crossbars per tile pair,
    split 2 + 2 + 1 across computes (the later ones start at row offsets 32 and 64). sdk: two of
    the 4 output pixels of a row per read (2 x 6 of the 16 columns), their 3 x 5 window's 120 rows
    in 8 crossbars, 4 reads per pixel instead of 5."""
    b = ProgramBuilder((1, 8, 7, 7), 5)
    text = b.text(b.relu(b.conv("%x", 6, 3, stride=2, pad=1)))
    x = np.random.default_rng(6).integers(-128, 128, (1, 8, 7, 7))
    golden, shapes, _ = lower(text, x, packing, 16, 2, 3, 4, tmp_path)
    assert np.any(golden != 0)
    expected = {"kernel": [(8, 6)] * 9, "im2col": [(16, 6)] * 4 + [(8, 6)], "sdk": [(16, 12)] * 7 + [(8, 12)]}
    assert shapes == expected[packing]


def test_sdk_reads_two_pixels_of_a_64_channel_layer_per_crossbar_read(tmp_path):
    """A 64 -> 64 3x3 layer on 128 x 128 crossbars: im2col unrolls 576 rows into 5 crossbars of 64
    used columns, one read of each per output pixel; sdk unrolls the 3 x 4 window of two adjacent
    pixels (768 rows) into 6 full crossbars, read once per two pixels. No padding: no read skipped,
    so the 6 x 6 output takes 36 x 5 and 18 x 6 reads."""
    b = ProgramBuilder((1, 64, 8, 8), 3)
    text = b.text(b.relu(b.conv("%x", 64, 3)))
    x = np.random.default_rng(5).integers(-128, 128, (1, 64, 8, 8))
    reads = {}
    for packing in ("im2col", "sdk"):
        golden, shapes, artifacts = lower(text, x, packing, 128, 8, 1, 8, tmp_path / packing)
        assert np.any(golden != 0)
        reads[packing] = (shapes, artifacts.instruction_counts()["mvmul"])
    assert reads["im2col"] == ([(128, 64)] * 4 + [(64, 64)], 36 * 5)
    assert reads["sdk"] == ([(128, 128)] * 6, 18 * 6)


def test_window_pixels_take_the_fewest_reads_per_pixel_that_divide_the_row():
    conv3 = FilterGeometry((3, 3), (1, 1), (1, 1, 1, 1))
    assert window_pixels(conv3, [64], 64, 56, 128) == 2  # 6 reads per 2 pixels, not 5 per pixel
    assert window_pixels(conv3, [64], 64, 7, 128) == 1  # 7 pixels a row: no pair divides it
    assert window_pixels(conv3, [128], 128, 56, 128) == 1  # the columns are full
    assert window_pixels(FilterGeometry((1, 1)), [128], 32, 8, 128) == 1  # 2 reads per 2 pixels: a tie
    stem = FilterGeometry((7, 7), (2, 2), (3, 3, 3, 3))
    assert window_pixels(stem, [3], 64, 112, 128) == 2  # 7 x 9 x 3 = 189 rows: 2 reads per 2 pixels


def test_window_pixels_fill_the_columns_of_an_array_group_as_far_as_the_chip_gains():
    conv3 = FilterGeometry((3, 3), (1, 1), (1, 1, 1, 1))
    assert window_pixels(conv3, [64], 64, 56, 128, group=2) == 4  # 9 reads per 4 pixels
    # 15 reads per 8 pixels (7 pixels: 14 per 7), each adding 512 partial sums: on pimsim-nn's
    # example configuration a read takes 5.2 us and a 512-element vvadd 0.2 us; on pimcomp 1.9 us
    # and 2.3 us, so that 9 reads per 4 pixels take less time there
    pimsim_nn, pimcomp = Latencies(chip_preset("pimsim-nn")), Latencies(chip_preset("pimcomp"))
    assert window_pixels(conv3, [64], 64, 56, 128, group=4, latencies=pimsim_nn) == 8
    assert window_pixels(conv3, [64], 64, 56, 128, group=4, latencies=pimcomp) == 4
    assert window_pixels(conv3, [128], 128, 56, 128, group=2) == 2  # 12 per 2 pixels, not 9 per pixel
    assert window_pixels(conv3, [512], 512, 7, 128, group=4) == 1  # the group's columns are full
    stem = FilterGeometry((7, 7), (2, 2), (3, 3, 3, 3))
    assert window_pixels(stem, [3], 64, 112, 128, group=4) == 8  # 7 x 21 x 3 = 441 rows: 4 reads per 8


@pytest.mark.parametrize("dilation", [1, 2])
def test_shifted_kernels_compute_adjacent_pixels_of_the_convolution(dilation):
    """Each window's product with the shifted kernels is the convolution's p pixels, computed
    directly (a sum over kernel positions) as the reference."""
    rng = np.random.default_rng(dilation)
    channels, filters, kernel, stride, pixels, width = 3, 2, 3, 2, 3, 6
    weights = rng.integers(-4, 5, (filters, channels, kernel, kernel))
    image = rng.integers(-9, 10, (channels, 4 + (kernel - 1) * dilation, 40))
    geometry = FilterGeometry((kernel, kernel), (1, stride), (0, 0, 0, 0), (dilation, dilation))
    matrix = weights.reshape(filters, -1).T  # row c·KH·KW + k, as linalg-to-cinm builds it
    window = window_geometry(geometry, pixels)
    shifted = shifted_kernels(matrix, geometry, pixels)
    for ox in range(0, width, pixels):
        patch = image[:, 0 : 1 + (kernel - 1) * dilation : dilation, ox * stride : ox * stride + window.kernel[1]]
        product = patch.reshape(-1) @ shifted
        for q in range(pixels):
            x0 = (ox + q) * stride
            taps = image[
                :, 0 : 1 + (kernel - 1) * dilation : dilation, x0 : x0 + 1 + (kernel - 1) * dilation : dilation
            ]
            direct = np.einsum("chw,fchw->f", taps, weights)
            np.testing.assert_array_equal(product[q * filters : (q + 1) * filters], direct)


@pytest.mark.parametrize("packing", PACKINGS)
def test_residual_network_validates(packing, tmp_path):
    x = np.random.default_rng(2).integers(-128, 128, (1, 3, 8, 8))
    golden, _, artifacts = lower(resnet_program(), x, packing, 8, 9, 6, 24, tmp_path)
    assert golden.shape == (1, 5) and np.any(golden != 0)
    assert {"lmv", "vvmax", "vavg", "send", "recv"} <= set(artifacts.instruction_counts())


@pytest.mark.parametrize("build", [shufflenet_mobilenet, inception_densenet], ids=["depthwise-grouped", "flatten-gemm"])
def test_real_network_ops_validate_with_im2col(build, tmp_path):
    """Depthwise and grouped convolutions; a gemm on a flattened 2×2×20 image (a whole-image kernel:
    its 4 positions × 20 channels unrolled into 80 rows of one crossbar)."""
    model = onnx.ModelProto.FromString(build().SerializeToString())
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    calibration = np.random.default_rng(3).standard_normal((4, *shape[1:])).astype(np.float32)
    reports = {}
    for packing in PACKINGS:
        compiled = compile_pim(model, calibration=calibration, out_dir=tmp_path / packing, packing=packing)
        x = np.random.default_rng(8).standard_normal(shape).astype(np.float32)
        compiled(x)
        np.testing.assert_array_equal(compiled.last_result.outputs[0], compiled.golden(x)[0])
        reports[packing] = compiled.report()
    kernel, im2col = reports["kernel"], reports["im2col"]
    assert im2col["packing"] == "im2col" and im2col["crossbars_used"] < kernel["crossbars_used"]
    assert im2col["cell_utilization"] > kernel["cell_utilization"]
    assert im2col["instructions"] < kernel["instructions"]


def test_patch_runs_merge_contiguous_pixels_and_padding():
    # A 3x3 window at the top-left corner of a 4x4 image with 2 channels, padding 1: the first
    # kernel row and column are padding; (1, 1)-(1, 2) and (2, 1)-(2, 2) are contiguous pixels.
    pixels = [(y, x) for y in (-1, 0, 1) for x in (-1, 0, 1)]
    runs = patch_runs(pixels, (4, 4), 2, (0, 18))
    assert runs == [(0, 8, None), (8, 12, 0), (12, 14, None), (14, 18, 8)]
    assert patch_runs(pixels, (4, 4), 2, (9, 13)) == [(9, 12, 1), (12, 13, None)]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kernel=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    strides=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    pads=st.tuples(*(st.integers(0, 2) for _ in range(4))),
    dilations=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    size=st.tuples(st.integers(1, 7), st.integers(1, 7)),
    channels=st.integers(1, 5),
    seed=st.integers(0, 2**16),
    packing=st.sampled_from(["im2col", "sdk"]),
)
def test_im2col_code_validates_on_any_window_geometry(
    kernel, strides, pads, dilations, size, channels, seed, packing, tmp_path
):
    """The im2col code of a convolution of any kernel, strides, pads (each side its own), dilations
    and image size — windows hanging over every edge, an image as wide as the kernel's span (its
    rows contiguous in memory from one to the next), 16-row crossbars cutting kernel positions — is
    read back by the validator exactly as the integer program computes it. (The code gathers each
    pixel's patch from what its window meets of the image: pixels whose windows meet padding at
    the same kernel positions share one plan, shifted.) sdk: windows of up to 5 pixels of 3 filters
    on 16 columns, wherever they divide the row."""
    (kh, kw), (sh, sw), (pt, pl, pb, pr), (dh, dw), (h, w) = kernel, strides, pads, dilations, size
    out_h, out_w = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1, (w + pl + pr - dw * (kw - 1) - 1) // sw + 1
    assume(out_h >= 1 and out_w >= 1)
    rng = np.random.default_rng(seed)
    filters = 3
    weights = helper.make_tensor(
        "w",
        TensorProto.FLOAT,
        (filters, channels, kh, kw),
        rng.normal(0, 0.5, (filters, channels, kh, kw)).reshape(-1).tolist(),
    )
    conv = helper.make_node(
        "Conv", ["x", "w"], ["c"], kernel_shape=[kh, kw], strides=[sh, sw], pads=[pt, pl, pb, pr], dilations=[dh, dw]
    )
    head = helper.make_tensor(
        "m", TensorProto.FLOAT, (filters * out_h * out_w, 2), rng.normal(0, 0.3, filters * out_h * out_w * 2).tolist()
    )
    nodes = [conv, helper.make_node("Relu", ["c"], ["r"]), helper.make_node("Flatten", ["r"], ["f"])]
    nodes.append(helper.make_node("MatMul", ["f", "m"], ["y"]))
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, channels, h, w))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 2))],
        [weights, head],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    device = load_device_config("ideal").replace(name="small", rows=16, cols=16)
    calibration = rng.standard_normal((4, channels, h, w)).astype(np.float32)
    compiled = compile_pim(model, device, calibration=calibration, out_dir=tmp_path / f"g{seed}", packing=packing)
    x = rng.standard_normal((1, channels, h, w)).astype(np.float32)
    compiled(x)
    golden = compiled.golden(x)[0]
    np.testing.assert_array_equal(compiled.last_result.outputs[0], golden)
