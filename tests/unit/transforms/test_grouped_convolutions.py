"""Grouped and depthwise convolutions and channel shuffles through the memristor flow: every stage,
run in the interpreter, gives onnxruntime's result (exact mode on `ideal`), int8 stays close, and a
device acquires no crossbar its products do not use."""

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import ModuleOp

import cimxdsl
from benchmarks.model_zoo import mobilenet_v2
from cimxdsl.api import STAGES, CompiledModel, RebuiltStage, apply_passes


def shufflenet_unit(channels: int = 12, groups: int = 3, size: int = 8, seed: int = 0) -> onnx.ModelProto:
    """A ShuffleNet unit (Zhang et al., "ShuffleNet", 2018, Fig. 2b): grouped 1×1 convolution, ReLU,
    channel shuffle (reshape, transpose, reshape), depthwise 3×3, grouped 1×1 and the residual add."""
    rng = np.random.default_rng(seed)
    per_group = channels // groups

    def weight(name: str, shape) -> onnx.TensorProto:
        return numpy_helper.from_array(rng.normal(0, 0.5, shape).astype(np.float32), name)

    initializers = [
        weight("w1", (channels, per_group, 1, 1)),
        weight("b1", (channels,)),
        weight("dw", (channels, 1, 3, 3)),
        weight("w2", (channels, per_group, 1, 1)),
        numpy_helper.from_array(np.array([1, groups, per_group, size, size], np.int64), "split"),
        numpy_helper.from_array(np.array([1, channels, size, size], np.int64), "merged"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], group=groups),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Reshape", ["r1", "split"], ["s1"]),
        helper.make_node("Transpose", ["s1"], ["s2"], perm=[0, 2, 1, 3, 4]),
        helper.make_node("Reshape", ["s2", "merged"], ["shuffled"]),
        helper.make_node("Conv", ["shuffled", "dw"], ["d"], group=channels, pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["d", "w2"], ["c2"], group=groups),
        helper.make_node("Add", ["c2", "x"], ["y"]),
    ]
    shape = [1, channels, size, size]
    graph = helper.make_graph(
        nodes,
        "shufflenet_unit",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def reference(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def check_every_stage(model: onnx.ModelProto, x: np.ndarray) -> CompiledModel:
    expected = reference(model, x)
    compiled = cimxdsl.compile(model, device="ideal", mode="exact")
    scale = np.abs(expected).max()
    for stage in STAGES:
        if stage != "quantize":
            actual = compiled.run(x, stage=stage).outputs[0]
            np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5 * scale, err_msg=stage)
    return compiled


def test_a_shufflenet_unit_matches_onnxruntime_at_every_stage():
    model = shufflenet_unit()
    x = np.random.default_rng(1).normal(size=(1, 12, 8, 8)).astype(np.float32)
    compiled = check_every_stage(model, x)
    products = sum(1 for op in compiled.module("cim").walk() if op.name in ("cim.op.gemm", "cim.op.gemv"))
    scheduled = compiled.module("schedule")
    acquired = sum(1 for op in scheduled.walk() if op.name == "cim.acquire_crossbar")
    assert products == 3 + 12 + 3  # a product per group of each convolution
    gemms = [op for op in compiled.module("cinm").walk() if op.name == "cinm.op.gemm"]
    assert all(gemm.operands[1].owner.name == "arith.constant" for gemm in gemms)  # groups' weights folded
    assert acquired == products  # each device: one crossbar per product, not `crossbars` of them


def test_a_small_mobilenet_v2_matches_onnxruntime_at_every_stage():
    model = mobilenet_v2(size=16, width=2, classes=10)
    x = np.random.default_rng(2).normal(size=(1, 3, 16, 16)).astype(np.float32)
    check_every_stage(model, x)


def test_int8_shufflenet_unit_stays_close_to_float():
    model = shufflenet_unit(seed=3)
    rng = np.random.default_rng(4)
    compiled = cimxdsl.compile(model, device="ideal", calibration=rng.normal(size=(8, 12, 8, 8)).astype(np.float32))
    x = rng.normal(size=(1, 12, 8, 8)).astype(np.float32)
    expected = reference(model, x)
    assert np.abs(compiled(x) - expected).max() / np.abs(expected).max() < 0.1


def grouped_conv(groups: int, channels: int = 8, filters: int = 12, size: int = 9, split: bool = False, **attributes):
    """One grouped convolution; `split`: the same written as a Split, a convolution per group and a
    Concat (how it was imported before grouped convolutions were one op)."""
    rng = np.random.default_rng(groups)
    w = rng.normal(0, 0.5, (filters, channels // groups, 3, 3)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w")]
    if split:
        per_group = filters // groups
        names = [f"x{g}" for g in range(groups)]
        nodes = [helper.make_node("Split", ["x"], names, axis=1, num_outputs=groups)] if groups > 1 else []
        names = names if groups > 1 else ["x"]
        for g in range(groups):
            inits.append(numpy_helper.from_array(w[g * per_group : (g + 1) * per_group], f"w{g}"))
            nodes.append(helper.make_node("Conv", [names[g], f"w{g}"], [f"y{g}"], **attributes))
        nodes.append(helper.make_node("Concat", [f"y{g}" for g in range(groups)], ["y"], axis=1))
    else:
        nodes = [helper.make_node("Conv", ["x", "w"], ["y"], group=groups, **attributes)]
    graph = helper.make_graph(
        nodes,
        "grouped",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


def test_a_grouped_convolution_imports_as_one_op_whatever_its_group_count():
    counts = {}
    for groups in (2, 4):
        module = cimxdsl.compile(grouped_conv(groups), device="ideal", mode="exact").module("import")
        names = [op.name for op in module.walk()]
        assert names.count("linalg.conv_2d_ngchw_gfchw") == 1
        counts[groups] = len(names)
    assert counts[2] == counts[4]


def test_strided_dilated_grouped_convolution_matches_onnxruntime_at_every_stage():
    model = grouped_conv(4, strides=[2, 1], dilations=[1, 2], pads=[1, 0, 2, 1])
    check_every_stage(model, np.random.default_rng(5).normal(size=(1, 8, 9, 9)).astype(np.float32))


def test_grouped_and_split_convolutions_cost_the_same_crossbar_work():
    """One op per grouped convolution keeps each group's weights on their own tiles: the writes,
    cells, reads and energy equal those of the convolution written per group; the groups now share
    one device, so they may run in parallel (latency no longer)."""
    x = np.random.default_rng(6).normal(size=(1, 8, 9, 9)).astype(np.float32)
    calibration = np.random.default_rng(7).normal(size=(4, 8, 9, 9)).astype(np.float32)
    reports = []
    for split in (False, True):
        model = grouped_conv(4, split=split, pads=[1, 1, 1, 1])
        compiled = cimxdsl.compile(model, device="cinnamon", calibration=calibration)
        compiled(x)
        reports.append(compiled.report())
    grouped, per_group = reports
    for key in ("writes", "cells_written", "mvms", "adc_conversions", "array_reads", "busy_cycles"):
        assert grouped["total"][key] == per_group["total"][key], key
    assert grouped["total"]["energy_pj"]["total"] == pytest.approx(per_group["total"]["energy_pj"]["total"])
    assert grouped["latency_ns"] <= per_group["latency_ns"]


def test_int8_quantizes_the_weights_of_grouped_convolutions():
    calibration = np.random.default_rng(8).normal(size=(4, 8, 9, 9)).astype(np.float32)
    compiled = cimxdsl.compile(grouped_conv(4), device="ideal", calibration=calibration)
    gemms = [op for op in compiled.module("cinm").walk() if op.name == "cinm.op.gemm"]
    assert len(gemms) == 4
    assert all(str(gemm.operands[1].type.element_type) == "i32" for gemm in gemms)


def test_stages_not_kept_are_rebuilt_as_the_pipeline_made_them():
    model = shufflenet_unit()
    compiled = cimxdsl.compile(model, device="ideal", mode="exact")
    assert isinstance(compiled.stages["tile"], RebuiltStage) and isinstance(compiled.stages["schedule"], ModuleOp)
    rebuilt = (("tile", "tile{device=ideal}", "cinm"), ("memristor", "cim-to-memristor", "schedule"))
    for stage, passes, previous in rebuilt:
        expected = str(apply_passes(compiled.module(previous).clone(), passes))
        assert compiled.mlir(stage) == expected
