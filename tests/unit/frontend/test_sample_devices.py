"""The sample devices shipped in examples/devices/ keep the digits demo accurate: within a few points
of the float model (onnxruntime) on a subset of the test images."""

from pathlib import Path

import numpy as np
import onnx
import pytest

import cimxdsl
from cimxdsl.device import load_device_config
from cimxdsl.reference import float_predictions

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
DEVICES = sorted((EXAMPLES / "devices").glob("*.toml"))
IMAGES = 60
LOSS = 0.05
"""At most 3 of the 60 images lost against the float model."""


def test_there_are_sample_devices_with_real_limits():
    configs = [load_device_config(path) for path in DEVICES]
    assert len(configs) >= 2
    assert any(c.cell_bits == 2 and not c.noiseless for c in configs)  # a realistic 2-bit-cell device
    assert any(c.adc_bits and c.adc_bits <= 4 for c in configs)  # an ADC-limited one
    assert all(not c.exact for c in configs)


@pytest.mark.parametrize("path", DEVICES, ids=lambda p: p.stem)
def test_a_sample_device_keeps_the_demo_accurate(path: Path):
    model = onnx.load(EXAMPLES / "digits_cnn.onnx")
    test = np.load(EXAMPLES / "digits_test.npz")
    images, labels = test["inputs"][:IMAGES], test["labels"][:IMAGES]
    calibration = np.load(EXAMPLES / "digits_train.npz")["inputs"][:64]
    compiled = cimxdsl.compile(model, device=path, calibration=calibration, batch=IMAGES)
    predictions = np.argmax(compiled(images), axis=-1)
    float_accuracy = np.mean(float_predictions(model, images) == labels)
    assert np.mean(predictions == labels) >= float_accuracy - LOSS
