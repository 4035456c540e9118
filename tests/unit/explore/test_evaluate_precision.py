"""`evaluate_precision`: accuracy, latency and energy of a model compiled at a per-layer precision
on a validation split, checked against the compiled model run by hand."""

from pathlib import Path

import numpy as np
import pytest

import cimxdsl
from cimxdsl.device import Device
from cimxdsl.explore.precision import evaluate_precision
from cimxdsl.models import CompileError

ROOT = Path(__file__).resolve().parents[3]
MODEL = ROOT / "examples" / "digits_cnn.onnx"


def test_it_reports_what_the_compiled_model_gives():
    test, train = np.load(ROOT / "examples" / "digits_test.npz"), np.load(ROOT / "examples" / "digits_train.npz")
    x, labels = test["inputs"][:12], test["labels"][:12]
    precision = {"conv*": (6, 4), "fc": (4, 4)}
    result = evaluate_precision(MODEL, precision, x, labels, device="cinnamon", calibration=train["calibration"], batch_size=6)
    compiled = cimxdsl.compile(MODEL, device="cinnamon", calibration=train["calibration"], batch=6, precision=precision)
    device = Device(compiled.device)
    outputs = [compiled.run(x[i : i + 6], device=device).outputs[0] for i in (0, 6)]
    report = device.report(per_crossbar=False)
    assert result["accuracy"] == np.mean(np.argmax(np.concatenate(outputs), axis=-1) == labels)
    assert result["latency_ns"] == pytest.approx(report["latency_ns"] / 12)
    assert result["energy_pj"] == pytest.approx(report["total"]["energy_pj"]["total"] / 12)
    assert [(layer["layer"], layer["weight_bits"], layer["input_bits"]) for layer in result["layers"]] == [
        ("conv1", 6, 4), ("conv2", 6, 4), ("fc", 4, 4),
    ]  # fmt: skip


def test_labels_must_match_the_inputs():
    with pytest.raises(CompileError, match="as many labels as inputs, got 3 and 2"):
        evaluate_precision(MODEL, None, np.zeros((3, 1, 8, 8), np.float32), np.zeros(2))
