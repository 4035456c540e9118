"""The CNN ops of real networks (SqueezeNet, Inception, DenseNet, ShuffleNet, MobileNet, AlexNet)
through the PIM flow with no core count: the integer program stays close to onnxruntime and the
artifacts, executed instruction by instruction, give exactly the integer program's result."""

import json

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import cimxdsl
from benchmarks.model_zoo import GraphBuilder
from benchmarks.pim_light_models import light_model
from cimxdsl.api import CompileError
from cimxdsl.tools.cim_compile import main as cim_compile


class Graph(GraphBuilder):
    """A small ONNX graph with random (He-scaled) weights."""

    def constant(self, value: np.ndarray, dtype=np.float32) -> str:
        name = self.name("c")
        self.initializers.append(numpy_helper.from_array(np.asarray(value, dtype), name))
        return name

    def conv(self, x: str, cin: int, cout: int, k: int, group: int = 1, shared: bool = False, **attrs) -> str:
        shape = (cout, cin // group, k, k)
        w = self.constant(self.rng.normal(0, np.sqrt(2 / np.prod(shape[1:])), shape))
        if shared:  # the TorchScript exporter shares weights through Identity of an initializer
            w = self.node("Identity", [w])
        b = self.constant(self.rng.normal(0, 0.1, cout))
        return self.node("Conv", [x, w, b], kernel_shape=[k, k], pads=[k // 2] * 4, group=group, **attrs)

    def image_model(self, output: str, shape: tuple[int, ...], classes: int) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes,
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
            [helper.make_tensor_value_info(output, TensorProto.FLOAT, (1, classes))],
            self.initializers,
        )
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def inception_densenet(classes: int = 6) -> onnx.ModelProto:
    """Branches joined by Concat, LRN, padded max and average pooling, a standalone batch norm, Mul
    and Add by constants, Sum of three, a weight from ConstantOfShape, Reshape and a final Softmax."""
    g = Graph(1)
    x = g.node("Relu", [g.conv("x", 3, 8, 3, shared=True)])
    x = g.node("LRN", [x], size=3, alpha=1e-2, beta=0.75, bias=1.0)
    a = g.node("Relu", [g.conv(x, 8, 4, 1)])
    b = g.node("MaxPool", [x], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
    c = g.node("AveragePool", [x], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
    x = g.node("Concat", [a, b, c], axis=1)  # 20 channels
    stats = [g.rng.uniform(0.5, 1.5, 20), g.rng.normal(0, 0.2, 20), g.rng.normal(0, 0.2, 20), g.rng.uniform(0.5, 2, 20)]
    x = g.node("BatchNormalization", [x, *(g.constant(s) for s in stats)])
    axes = g.constant(np.array([1, 2]), np.int64)
    scale = g.node("Unsqueeze", [g.constant(g.rng.uniform(0.5, 1.5, 20)), axes])
    x = g.node("Mul", [x, scale])
    x = g.node("Add", [x, g.node("Unsqueeze", [g.constant(g.rng.normal(0, 0.3, 20)), axes])])
    x = g.node("Relu", [x])
    y = g.node("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2])  # 4x4
    z = g.node("Relu", [g.conv(y, 20, 20, 3)])
    w = g.node("Relu", [g.conv(y, 20, 20, 1)])
    x = g.node("Sum", [y, z, w])
    x = g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)  # 2x2
    x = g.node("Reshape", [x, g.constant(np.array([1, -1]), np.int64)])
    weights = g.constant(g.rng.normal(0, 0.2, (classes, 80)))
    value = helper.make_tensor("v", TensorProto.FLOAT, [1], [0.05])
    bias = g.node("ConstantOfShape", [g.constant(np.array([classes]), np.int64)], value=value)  # as the light models
    x = g.node("Gemm", [x, weights, bias], transB=1)
    return g.image_model(g.node("Softmax", [x], axis=1), (1, 3, 8, 8), classes)


def shufflenet_mobilenet(classes: int = 5) -> onnx.ModelProto:
    """A grouped 1×1 convolution with a clip, a channel shuffle (Reshape, Transpose, Reshape), a
    depthwise 3×3 convolution with stride 2, a channel Concat then a residual Sum, global average
    pooling and Flatten."""
    g = Graph(2)
    x = g.node("Relu", [g.conv("x", 4, 8, 3)])
    y = g.node("Clip", [g.conv(x, 8, 12, 1, group=4), g.constant(0.0), g.constant(0.5)])  # a ReLU6, scaled
    y = g.node("Reshape", [y, g.constant(np.array([1, 4, 3, 8, 8]), np.int64)])
    y = g.node("Transpose", [y], perm=[0, 2, 1, 3, 4])
    y = g.node("Reshape", [y, g.constant(np.array([1, 12, 8, 8]), np.int64)])
    y = g.conv(y, 12, 12, 3, group=12, strides=[2, 2])  # depthwise, 4x4
    y = g.conv(y, 12, 8, 1, group=4)
    s = g.node("AveragePool", [x], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2], count_include_pad=1)
    x = g.node("Relu", [g.node("Concat", [y, s], axis=1)])  # 16 channels: tiles of 8 and 8 channels
    x = g.node("Relu", [g.node("Sum", [x, g.conv(x, 16, 16, 1)])])  # added to a conv's (regular) tiles
    x = g.node("Flatten", [g.node("GlobalAveragePool", [x])])
    weights = g.constant(g.rng.normal(0, 0.3, (16, classes)))
    return g.image_model(g.node("MatMul", [x, weights]), (1, 4, 8, 8), classes)


for_the_models = pytest.mark.parametrize(
    "build, tolerance",
    [(inception_densenet, 0.2), (shufflenet_mobilenet, 0.2)],
    ids=["inception-densenet-ops", "shufflenet-mobilenet-ops"],
)


@for_the_models
def test_real_network_ops_compile_with_no_core_count_and_validate_exactly(build, tolerance, tmp_path):
    model = build()
    model = onnx.ModelProto.FromString(model.SerializeToString())
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    rng = np.random.default_rng(3)
    calibration = rng.standard_normal((8, *shape[1:])).astype(np.float32)
    compiled = cimxdsl.compile(model, target="pim", calibration=calibration, out_dir=tmp_path)
    report = compiled.report()
    # No core count: the default chip's 64 cores of 64 crossbars hold these models.
    assert not report["cores_as_needed"] and (report["chip"], report["cores"]) == ("pimcomp", 64)
    assert 1 < report["cores_used"] <= 64 and report["crossbars_per_core"] == 64
    reference = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for x in rng.standard_normal((2, *shape)).astype(np.float32):
        ours = compiled(x)
        # The artifacts' instruction-level execution is exactly the interpreted integer program.
        np.testing.assert_array_equal(compiled.last_result.outputs[0], compiled.golden(x)[0])
        expected = reference.run(None, {"x": x})[0]
        assert np.abs(ours - expected).max() <= tolerance * np.abs(expected).max()


def test_a_model_too_large_for_the_chip_names_the_crossbars_and_the_largest_layer():
    with pytest.raises(CompileError, match=r"needs \d+ crossbars \(largest layer: .*, \d+ crossbars\).* hold only 4"):
        cimxdsl.compile(shufflenet_mobilenet(), target="pim", cores=2, crossbars_per_core=2)


def test_cim_compile_target_pim_needs_no_flags(tmp_path, capsys):
    path = tmp_path / "model.onnx"
    onnx.save(shufflenet_mobilenet(), str(path))
    cim_compile([str(path), "--target", "pim", "--random-inputs", "-o", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert "note: no core count given: using chip 'pimcomp' (64 cores x 64 crossbars)" in out
    assert "instruction-level execution equals the interpreted integer program" in out
    assert "performance estimate on chip 'pimcomp': latency " in out and "images/s streamed (at most " in out
    performance = json.loads((tmp_path / "out" / "report.json").read_text())["performance"]
    assert performance.keys() >= {"latency_ns", "throughput", "bottleneck", "core_busy_ns", "energy_pj"}
    assert performance["throughput_bound"] == pytest.approx(1e9 / max(performance["core_busy_ns"]))
    assert 1e9 / performance["latency_ns"] <= performance["throughput"] <= performance["throughput_bound"] * (1 + 1e-9)
    assert performance["latency_ns"] >= max(performance["core_busy_ns"]) > 0


def test_a_model_larger_than_the_chip_takes_as_many_cores_as_it_needs(tmp_path, capsys):
    path, chip = tmp_path / "model.onnx", tmp_path / "chip.toml"
    onnx.save(shufflenet_mobilenet(), str(path))
    chip.write_text("core_cnt = 2\nxbar_array_count = 2\n")
    cim_compile([str(path), "--target", "pim", "--chip", str(chip), "--random-inputs", "-o", str(tmp_path / "out")])
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["cores_as_needed"] and report["cores"] == report["cores_used"] > 2
    assert report["crossbars_needed"] > 4 and report["crossbars_per_core"] == 2
    assert (
        f"note: no core count given: the model needs {report['crossbars_needed']} crossbars, more than chip "
        f"'chip' holds (2 cores x 2): using as many cores as the model needs ({report['cores']} cores of 2 crossbars)"
    ) in out


def test_a_bad_chip_key_is_one_line(tmp_path, capsys):
    path, chip = tmp_path / "model.onnx", tmp_path / "chip.toml"
    onnx.save(shufflenet_mobilenet(), str(path))
    chip.write_text("adc_cnt = 2\n")
    with pytest.raises(SystemExit) as exit_:
        cim_compile([str(path), "--target", "pim", "--chip", str(chip), "--random-inputs"])
    assert exit_.value.code != 0
    assert capsys.readouterr().err.strip().splitlines() == [
        "cim-compile: error: chip config: unknown key 'adc_cnt' (did you mean 'adc_count'?)"
    ]


def test_light_squeezenet_from_the_onnx_wheel_validates_exactly(tmp_path):
    """The real SqueezeNet 1.0 architecture (Concat of fire modules, ConstantOfShape weights, a
    Reshape after the Softmax) at 32×32, on 16-crossbar cores."""
    model = light_model("squeezenet", size=32)
    x = np.random.default_rng(4).standard_normal((1, 3, 32, 32)).astype(np.float32)
    compiled = cimxdsl.compile(model, target="pim", calibration=x, crossbars_per_core=16, out_dir=tmp_path)
    assert compiled.report()["cores_used"] > 1
    probabilities = compiled(x)
    assert probabilities.shape == (1, 1000, 1, 1) and np.isclose(probabilities.sum(), 1.0, atol=1e-4)
    (golden,) = compiled.golden(x)
    assert np.ptp(golden) > 0
    np.testing.assert_array_equal(compiled.last_result.outputs[0].reshape(golden.shape), golden)
