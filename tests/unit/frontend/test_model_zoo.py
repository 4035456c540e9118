"""ResNet-18/50- and VGG-19-shaped graphs (scaled down so tests stay fast) import, lower through
the whole memristor flow and run: exact mode matches onnxruntime, int8 reports its error."""

import numpy as np
import onnxruntime
import pytest

import cimxdsl
from benchmarks.model_zoo import MODELS

WIDTH = {"mobilenetv2": 5}
"""Stem widths other than 8: MobileNetV2's depthwise layers make a product per channel (at 5, the
widest still has 150 channels, more than the 128 of a crossbar)."""


@pytest.mark.parametrize("name", sorted(MODELS))
def test_exact_mode_matches_onnxruntime(name):
    model = MODELS[name](size=32, width=WIDTH.get(name, 8), classes=10)
    x = np.random.default_rng(0).normal(size=(1, 3, 32, 32)).astype(np.float32)
    reference = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = reference.run(None, {"x": x})[0]
    compiled = cimxdsl.compile(model, device="ideal", mode="exact", crossbars=16)
    np.testing.assert_allclose(compiled(x), expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


def test_int8_resnet18_stays_close_to_float():
    model = MODELS["resnet18"](size=32, width=8, classes=10)
    rng = np.random.default_rng(1)
    samples = rng.normal(size=(8, 3, 32, 32)).astype(np.float32)
    compiled = cimxdsl.compile(model, device="ideal", calibration=samples)
    reference = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = rng.normal(size=(1, 3, 32, 32)).astype(np.float32)
    expected = reference.run(None, {"x": x})[0]
    error = np.abs(compiled(x) - expected).max() / np.abs(expected).max()
    assert error < 0.1
