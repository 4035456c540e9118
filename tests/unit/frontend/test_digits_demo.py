"""The bundled demo model (`cimxdsl/data/digits_cnn.onnx`, linked from `examples/`) and its data
splits, and the demo's claim: compiled by cimxdsl for exact crossbars it is as accurate as the float
model, with onnxruntime as the reference."""

import numpy as np
import onnx
import onnxruntime
import pytest

import cimxdsl
from cimxdsl.data import DIGITS_MODEL, DIGITS_TEST, DIGITS_TRAIN
from cimxdsl.frontend.onnx_importer import with_batch

ALLOWED_OPS = {"Conv", "Relu", "MaxPool", "Flatten", "Reshape", "Gemm", "BatchNormalization"}
INT8_LOSS = 0.01
"""The most accuracy int8 quantization may cost on exact crossbars: 1 point (3 of 360 images)."""


def load(path) -> dict[str, np.ndarray]:
    with np.load(path) as npz:
        return {k: npz[k] for k in npz.files}


@pytest.fixture(scope="module")
def model() -> onnx.ModelProto:
    return onnx.load(DIGITS_MODEL)


@pytest.fixture(scope="module")
def test_set():
    return load(DIGITS_TEST)


@pytest.fixture(scope="module")
def float_predictions(model, test_set) -> np.ndarray:
    batched = with_batch(model, len(test_set["labels"])).SerializeToString()
    session = onnxruntime.InferenceSession(batched, providers=["CPUExecutionProvider"])
    return session.run(None, {"x": test_set["inputs"]})[0].argmax(-1)


def test_model_is_valid_and_small(model):
    onnx.checker.check_model(model)
    assert DIGITS_MODEL.stat().st_size < 100_000
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 17)]
    assert {node.op_type for node in model.graph.node} <= ALLOWED_OPS


def test_splits_are_disjoint_and_labelled(test_set):
    train = load(DIGITS_TRAIN)
    for data, n in ((test_set, 360), (train, 300)):
        assert data["inputs"].shape == (n, 1, 8, 8) and data["inputs"].dtype == np.float32
        assert data["labels"].dtype == np.int64 and set(np.unique(data["labels"])) == set(range(10))
        assert 0.0 <= data["inputs"].min() and data["inputs"].max() <= 1.0
        np.testing.assert_array_equal(data["calibration"], train["inputs"][:64])
    seen = {image.tobytes() for image in train["inputs"]}
    assert not any(image.tobytes() in seen for image in test_set["inputs"])


def test_int8_on_exact_crossbars_is_as_accurate_as_the_float_model(test_set, float_predictions):
    float_accuracy = np.mean(float_predictions == test_set["labels"])
    assert float_accuracy >= 0.95
    compiled = cimxdsl.compile(
        DIGITS_MODEL, device="ideal", calibration=load(DIGITS_TRAIN)["calibration"], batch=len(test_set["labels"])
    )
    predictions = compiled(test_set["inputs"]).argmax(-1)
    accuracy = np.mean(predictions == test_set["labels"])
    assert accuracy >= float_accuracy - INT8_LOSS, (accuracy, float_accuracy)
    assert np.mean(predictions == float_predictions) >= 1 - 2 * INT8_LOSS


def test_exact_mode_computes_what_onnxruntime_computes(model, test_set):
    images = test_set["inputs"][:40]
    compiled = cimxdsl.compile(DIGITS_MODEL, device="ideal", mode="exact", batch=len(images))
    session = onnxruntime.InferenceSession(
        with_batch(model, len(images)).SerializeToString(), providers=["CPUExecutionProvider"]
    )
    np.testing.assert_allclose(compiled(images), session.run(None, {"x": images})[0], rtol=1e-4, atol=1e-4)
