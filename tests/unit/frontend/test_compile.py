"""The frontend and the Python API against onnxruntime: exact mode matches, int8 stays close,
bad models give one clear line."""

from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import helper

import cimxdsl
from cimxdsl.api import CompileError
from cimxdsl.frontend.onnx_importer import OnnxImportError, import_onnx
from tests.unit.frontend.models import make_model, small_cnn

EXAMPLES = Path(__file__).parents[3] / "examples"


def reference(model: onnx.ModelProto, *inputs: np.ndarray) -> list[np.ndarray]:
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session.run(None, dict(zip(names, inputs, strict=True)))


def test_exact_mode_matches_onnxruntime_through_the_whole_flow():
    model = small_cnn(channels=6, size=10)
    compiled = cimxdsl.compile(model, device="ideal", mode="exact", crossbars=4)
    x = np.random.default_rng(2).normal(size=(1, 3, 10, 10)).astype(np.float32)
    np.testing.assert_allclose(compiled(x), reference(model, x)[0], rtol=1e-4, atol=1e-6)
    for stage in ("import", "cinm", "cim", "schedule", "memristor"):
        np.testing.assert_allclose(
            compiled.run(x, stage=stage).outputs[0], reference(model, x)[0], rtol=1e-4, atol=1e-6
        )
    # the last stage is upstream MLIR and runtime calls (im2col a linalg.generic); its layers' products
    # sum their K ≤ 54 float32 terms in another order: within K·u per layer, three layers (Higham 2002, §3.1)
    assert not [op.name for op in compiled.module("func").walk() if op.name.startswith("cinm.")]
    assert any(op.name == "cinm.op.im2col" for op in compiled.module("memristor").walk())
    final, memristor = compiled(x), compiled.run(x, stage="memristor").outputs[0]
    np.testing.assert_allclose(final, memristor, rtol=3 * 54 * np.finfo(np.float32).eps, atol=1e-7)


def test_int8_digits_demo_stays_within_one_point_of_float_on_an_ideal_device():
    model = onnx.load(EXAMPLES / "digits_cnn.onnx")
    data = np.load(EXAMPLES / "digits_test.npz")
    compiled = cimxdsl.compile(model, device="ideal", calibration=data["calibration"])
    images, labels = data["inputs"][:120], data["labels"][:120]
    float_correct = sum(int(np.argmax(reference(model, x[None])[0]) == y) for x, y in zip(images, labels, strict=True))
    int8_correct = sum(int(np.argmax(compiled(x[None])) == y) for x, y in zip(images, labels, strict=True))
    assert int8_correct >= float_correct - 0.01 * len(labels)


def test_report_has_layers_whose_sums_match_the_total():
    compiled = cimxdsl.compile(small_cnn(), device="cinnamon")
    compiled(np.random.default_rng(0).normal(size=(1, 3, 8, 8)).astype(np.float32))
    report = compiled.report()
    for counter in ("writes", "cells_written", "mvms", "adc_conversions"):
        assert sum(layer[counter] for layer in report["layers"]) == report["total"][counter]
    assert report["total"]["writes"] > 0 and report["latency_ns"] > 0
    assert any("calibrated on 16 standard-normal" in note for note in report["notes"])


def test_save_and_load_give_the_same_outputs(tmp_path):
    compiled = cimxdsl.compile(small_cnn(), device="ideal")
    x = np.random.default_rng(5).normal(size=(1, 3, 8, 8)).astype(np.float32)
    compiled.save(tmp_path / "model.cimx")
    loaded = cimxdsl.load(tmp_path / "model.cimx")
    np.testing.assert_array_equal(loaded(x), compiled(x))
    assert loaded.mlir("tile") == compiled.mlir("tile")


def test_unsupported_op_names_the_op_type_and_the_node():
    model = make_model([helper.make_node("Sin", ["x"], ["y"], name="the_sin")], [("x", [2, 3])], [("y", [2, 3])], {})
    with pytest.raises(OnnxImportError, match=r"^unsupported ONNX op 'Sin' \(node 'the_sin'\); supported: .*Conv"):
        import_onnx(model)


@pytest.mark.parametrize(
    "content, message",
    [(None, "no such file"), (b"this is not protobuf", "not a valid ONNX model")],
)
def test_unreadable_model_is_one_line(tmp_path, content, message):
    path = tmp_path / "model.onnx"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(OnnxImportError, match=message) as error:
        import_onnx(path)
    assert "\n" not in str(error.value)


def test_bad_options_are_clear():
    with pytest.raises(CompileError, match="mode 'exact' needs a lossless, noiseless device"):
        cimxdsl.compile(small_cnn(), device="isaac", mode="exact")
    with pytest.raises(CompileError, match=r"crossbars must be in 1\.\.16"):
        cimxdsl.compile(small_cnn(), device="cinnamon", crossbars=99)


def test_qdq_model_keeps_its_scales():
    """A QDQ model (QuantizeLinear/DequantizeLinear around a MatMul) compiles to integer products
    with the model's own scales: the crossbar result equals onnxruntime's exactly."""
    rng = np.random.default_rng(7)
    codes = rng.integers(-127, 128, (16, 8)).astype(np.int8)
    w_scale = np.float32(0.02)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
        helper.make_node("DequantizeLinear", ["wq", "ws"], ["wd"]),
        helper.make_node("MatMul", ["xd", "wd"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "qdq",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4, 8])],
        [
            onnx.numpy_helper.from_array(np.array(0.05, np.float32), "xs"),
            onnx.numpy_helper.from_array(np.array(0, np.int8), "xz"),
            onnx.numpy_helper.from_array(codes, "wq"),
            onnx.numpy_helper.from_array(w_scale, "ws"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = rng.normal(size=(4, 16)).astype(np.float32)
    compiled = cimxdsl.compile(model, device="ideal", calibration=rng.normal(size=(3, 4, 16)).astype(np.float32))
    assert "cinm.op.quantize" in compiled.mlir("quantize")
    np.testing.assert_allclose(compiled(x), reference(model, x)[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("crossbars, resident", [(64, True), (1, False)])
def test_second_inference_writes_nothing_when_all_tiles_fit(crossbars, resident):
    """Weights stay on the crossbars between calls when the device holds every tile at once."""
    from cimxdsl.device import preset

    device = preset("cinnamon").replace(crossbars=crossbars)
    compiled = cimxdsl.compile(small_cnn(), device=device, crossbars=crossbars)
    x = np.random.default_rng(3).normal(size=(1, 3, 8, 8)).astype(np.float32)
    first = compiled(x)
    first_writes = compiled.last_run.device.report()["total"]["writes"]
    second = compiled(x)
    second_writes = compiled.last_run.device.report()["total"]["writes"]
    np.testing.assert_array_equal(first, second)
    assert first_writes > 0
    assert (second_writes == 0) == resident


def test_int8_quantization_does_not_depend_on_the_batch_compiled_for():
    """The calibration runs on the model at its own batch: compiled for 1, 4 or 6 inputs, with the
    calibration examples as one array or as lists of 4-input batches, the scales are the same, and
    the calibration inputs kept (for a static ADC range) are batches of the compiled model's."""
    examples = np.load(EXAMPLES / "digits_test.npz")["calibration"][:12]
    scaled = ("cinm.op.quantize", "cinm.op.dequantize")
    scales, kept = [], []
    batches = [[examples[i : i + 4]] for i in (0, 4, 8)]
    for batch, calibration in ((None, examples), (4, examples), (6, examples), (4, batches)):
        compiled = cimxdsl.compile(EXAMPLES / "digits_cnn.onnx", device="ideal", calibration=calibration, batch=batch)
        scales.append([str(op.scale) for op in compiled.module("quantize").walk() if op.name in scaled])
        kept.append([sample[0].shape for sample in compiled.calibration_inputs])
    assert len(scales[0]) == 6 and all(s == scales[0] for s in scales)
    assert kept == [[(1, 1, 8, 8)] * 12, [(4, 1, 8, 8)] * 3, [(6, 1, 8, 8)] * 2, [(4, 1, 8, 8)] * 3]
