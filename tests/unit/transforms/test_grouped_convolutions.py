"""Grouped and depthwise convolutions and channel shuffles through the memristor flow: every stage,
run in the interpreter, gives onnxruntime's result (exact mode on `ideal`), int8 stays close, and a
device acquires no crossbar its products do not use."""

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

import cimxdsl
from benchmarks.model_zoo import mobilenet_v2
from cimxdsl.api import STAGES, CompiledModel


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
