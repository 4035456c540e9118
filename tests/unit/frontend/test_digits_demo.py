"""Checks on the committed demo model `examples/digits_cnn.onnx` and its test data."""

from pathlib import Path

import numpy as np
import onnx
import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
MODEL = EXAMPLES / "digits_cnn.onnx"
DATA = EXAMPLES / "digits_test.npz"
ALLOWED_OPS = {"Conv", "Relu", "MaxPool", "Flatten", "Reshape", "Gemm", "BatchNormalization"}


@pytest.fixture(scope="module")
def model() -> onnx.ModelProto:
    return onnx.load(MODEL)


@pytest.fixture(scope="module")
def data():
    with np.load(DATA) as npz:
        return {k: npz[k] for k in npz.files}


def test_model_is_valid_and_small(model):
    onnx.checker.check_model(model)
    assert MODEL.stat().st_size < 100_000
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 17)]


def test_model_uses_only_supported_ops(model):
    ops = {node.op_type for node in model.graph.node}
    assert ops <= ALLOWED_OPS, f"unexpected ops: {ops - ALLOWED_OPS}"


def test_data_shapes(data):
    n = len(data["labels"])
    assert data["inputs"].shape == (n, 1, 8, 8) and data["inputs"].dtype == np.float32
    assert data["labels"].dtype == np.int64 and set(np.unique(data["labels"])) == set(range(10))
    assert data["calibration"].shape == (64, 1, 8, 8) and data["calibration"].dtype == np.float32
    assert 0.0 <= data["inputs"].min() and data["inputs"].max() <= 1.0


def test_onnxruntime_test_accuracy(model, data):
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    preds = np.array([sess.run(["logits"], {"x": img[None]})[0].argmax() for img in data["inputs"]])
    accuracy = (preds == data["labels"]).mean()
    assert accuracy >= 0.95, f"test accuracy {accuracy:.4f}"
