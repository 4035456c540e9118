"""The transformer demo (`examples/digits_vit.onnx`, trained by `examples/train_digits_vit.py`):
it computes what onnxruntime computes on exact crossbars, and keeps its accuracy on the Cinnamon
device, with attention's products on the host or written into crossbars."""

from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest

import cimxdsl
from cimxdsl.data import DIGITS_TEST, DIGITS_TRAIN

MODEL = Path(__file__).resolve().parents[3] / "examples" / "digits_vit.onnx"
HEADS, LAYERS, TOKENS, HEAD_DIM = 4, 2, 4, 8
CHUNK = 72
CROSSBAR_LOSS = 0.05
"""The most accuracy the Cinnamon device (4-bit weights and activations, lossless ADC) may cost:
5 points, 18 of 360 images. The 4-bit quantization of every linear layer and of Q, K, V and the
attention probabilities alone costs about 3.6 points (measured: 94.7 % to 91.1 %)."""


def load(path) -> dict[str, np.ndarray]:
    with np.load(path) as npz:
        return {k: npz[k] for k in npz.files}


@pytest.fixture(scope="module")
def test_set():
    return load(DIGITS_TEST)


def onnxruntime_logits(images: np.ndarray) -> np.ndarray:
    session = onnxruntime.InferenceSession(str(MODEL), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": images})[0]


def test_model_is_a_small_valid_transformer():
    model = onnx.load(MODEL)
    onnx.checker.check_model(model)
    assert MODEL.stat().st_size < 200_000
    ops = {node.op_type for node in model.graph.node}
    assert {"LayerNormalization", "Softmax", "Erf", "MatMul"} <= ops


def test_exact_mode_on_ideal_crossbars_equals_onnxruntime(test_set):
    images = test_set["inputs"][:40]
    compiled = cimxdsl.compile(MODEL, device="ideal", mode="exact", batch=len(images))
    expected = onnxruntime_logits(images)
    np.testing.assert_allclose(compiled(images), expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


def test_accuracy_on_the_cinnamon_device_stays_within_five_points_of_float(test_set):
    """Calibrated on training images only; scored on the 360 held-out images."""
    labels = test_set["labels"]
    float_accuracy = np.mean(onnxruntime_logits(test_set["inputs"]).argmax(-1) == labels)
    assert float_accuracy >= 0.93
    calibration = load(DIGITS_TRAIN)["calibration"]
    compiled = cimxdsl.compile(MODEL, device="cinnamon", calibration=calibration, batch=CHUNK)
    images = test_set["inputs"].reshape(-1, CHUNK, 1, 8, 8)  # compiled for a smaller batch: a faster compile
    accuracy = np.mean(np.concatenate([compiled(chunk) for chunk in images]).argmax(-1) == labels)
    assert accuracy >= float_accuracy - CROSSBAR_LOSS, (accuracy, float_accuracy)


def test_attention_on_crossbars_writes_each_heads_keys_and_values_per_inference(test_set):
    """With the products on crossbars, each inference writes Kᵀ and V of every head of every layer
    (4-bit values on 2-bit cells: 2 cells a value, twice for the differential pair); on Cinnamon's
    lossless ADC the logits are those of the same products on the host."""
    images = test_set["inputs"][:2]
    calibration = load(DIGITS_TRAIN)["calibration"]
    compiled = {
        placement: cimxdsl.compile(MODEL, device="cinnamon", calibration=calibration, batch=1, placement=placement)
        for placement in ("host", "crossbar")
    }
    for image in images:
        logits = {placement: model(image[None]) for placement, model in compiled.items()}
        np.testing.assert_array_equal(logits["crossbar"], logits["host"])
        products = compiled["crossbar"].report()["runtime_products"]
        assert products["crossbar"] == 2 * LAYERS and products["host"] == 0
        assert products["writes"] == 2 * LAYERS * HEADS
        assert products["cells_written"] == 2 * LAYERS * HEADS * (TOKENS * HEAD_DIM * 2 * 2)
    assert compiled["host"].report()["runtime_products"]["writes"] == 0
