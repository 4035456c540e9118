"""A static ADC range is calibrated at compile time, on the quantization's calibration inputs."""

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

import cimxdsl
from cimxdsl.api import CompileError
from cimxdsl.device import Device, preset
from cimxdsl.device.config import GROUPS

EXAMPLES = Path(__file__).parents[3] / "examples"
DIGITS = np.load(EXAMPLES / "digits_test.npz")
IMAGES = 60


def accuracy(model, device) -> float:
    outputs = model.run(DIGITS["inputs"][:IMAGES], device=device).outputs[0]
    return float(np.mean(np.argmax(outputs, axis=-1) == DIGITS["labels"][:IMAGES]))


def test_static_ranges_are_calibrated_once_and_beat_the_full_range():
    # 5-bit ADC on 128-row crossbars: the full range (1152) reads the digits CNN's small sums as noise,
    # spans fixed from the calibration images keep it near its float accuracy.
    base = preset("cinnamon").replace(weight_bits=8, input_bits=8, adc_bits=5)
    model = cimxdsl.compile(EXAMPLES / "digits_cnn.onnx", device=base, calibration=DIGITS["calibration"], batch=IMAGES)
    full = accuracy(model, Device(base))
    ranges = ("static_array", "static_slice", "static_column")
    static = {r: accuracy(model, Device(base.replace(adc_range=r))) for r in ranges}
    assert full < 0.5
    assert min(static.values()) > 0.9
    (spans,) = model.adc_spans.values()  # one calibration serves every granularity
    assert len(spans) == 3  # one entry per weight tile: conv1, conv2, fc


def test_static_range_without_calibration_inputs_is_a_clear_error():
    base = preset("cinnamon").replace(weight_bits=8, input_bits=8, adc_bits=5)
    model = cimxdsl.compile(EXAMPLES / "digits_cnn.onnx", device=base, calibration=DIGITS["calibration"])
    model.calibration_inputs = None  # as a model compiled without calibration data
    with pytest.raises(CompileError, match="static ADC range: compile with calibration data"):
        model.run(DIGITS["inputs"][:1], device=Device(base.replace(adc_range="static_array")))


def test_a_saved_model_keeps_its_calibration_inputs_for_static_ranges(tmp_path):
    base = preset("cinnamon").replace(weight_bits=8, input_bits=8, adc_bits=5)
    model = cimxdsl.compile(EXAMPLES / "digits_cnn.onnx", device=base, calibration=DIGITS["calibration"][:8], batch=4)
    model.save(tmp_path / "m.cimx")
    loaded = cimxdsl.load(tmp_path / "m.cimx")
    assert len(loaded.calibration_inputs) == len(model.calibration_inputs)
    for saved, original in zip(loaded.calibration_inputs, model.calibration_inputs, strict=True):
        for a, b in zip(saved, original, strict=True):
            np.testing.assert_array_equal(a, b)
    device = base.replace(adc_range="static_column")
    images = DIGITS["inputs"][:4]
    expected = model.run(images, device=Device(device)).outputs[0]
    np.testing.assert_array_equal(loaded.run(images, device=Device(device)).outputs[0], expected)


def test_a_saved_model_keeps_its_static_spans(tmp_path):
    # bipolar 2-bit DACs and a span per weight slice: saving records the spans of the model's own
    # device, and the loaded model converts with them even without its calibration inputs
    base = preset("cinnamon").replace(
        weight_bits=8, input_bits=8, adc_bits=5, adc_range="static_slice", input_encoding="bipolar"
    )
    model = cimxdsl.compile(EXAMPLES / "digits_cnn.onnx", device=base, calibration=DIGITS["calibration"][:8], batch=4)
    model.save(tmp_path / "m.cimx")
    loaded = cimxdsl.load(tmp_path / "m.cimx")
    assert list(loaded.adc_spans) == [base.calibration_key]
    saved, recorded = loaded.adc_spans[base.calibration_key], model.adc_spans[base.calibration_key]
    assert saved.keys() == recorded.keys() and len(saved) == 3  # conv1, conv2, fc
    for tile, span in recorded.items():
        np.testing.assert_array_equal(saved[tile], span)
    loaded.calibration_inputs = None
    images = DIGITS["inputs"][:4]
    for device in (base, base.replace(adc_range="static_column", adc_bits=4)):  # the same calibration fields
        expected = model.run(images, device=Device(device)).outputs[0]
        np.testing.assert_array_equal(loaded.run(images, device=Device(device)).outputs[0], expected)
    with pytest.raises(CompileError) as err:
        loaded.run(images, device=Device(base.replace(input_encoding="offset", name="offset-dacs")))
    assert str(err.value) == (
        "device 'offset-dacs': 'adc_range' = 'static_slice' is a static ADC range, and the model was not "
        "calibrated for 'input_encoding' = 'offset' (calibrated: 'bipolar') and holds no calibration inputs"
    )


def test_static_spans_are_calibrated_through_the_wires_and_kept_by_them(tmp_path):
    """Wires do not change over time, so the calibration keeps them: spans recorded with IR drop
    are smaller than without (in all), a saved model holds them for its wires only, and a calibration
    saved without the wire fields is one of ideal wires."""
    base = preset("cinnamon").replace(weight_bits=8, input_bits=8, adc_bits=5, adc_range="static_column")
    wired = base.replace(wire_resistance=3e-5)
    calibration = DIGITS["calibration"][:8]
    model = cimxdsl.compile(EXAMPLES / "digits_cnn.onnx", device=wired, calibration=calibration, batch=4)
    images = DIGITS["inputs"][:4]
    expected = model.run(images, device=Device(wired)).outputs[0]
    model.run(images, device=Device(base))
    with_wires, without = model.adc_spans[wired.calibration_key], model.adc_spans[base.calibration_key]
    assert with_wires.keys() == without.keys()
    assert sum(s.sum() for s in with_wires.values()) < 0.99 * sum(s.sum() for s in without.values())
    model.save(tmp_path / "m.cimx")
    loaded = cimxdsl.load(tmp_path / "m.cimx")
    loaded.calibration_inputs = None
    np.testing.assert_array_equal(loaded.run(images, device=Device(wired)).outputs[0], expected)
    with pytest.raises(CompileError, match=r"not calibrated for 'wire_resistance' = 0.0001 \(calibrated: 3e-05\)"):
        loaded.run(images, device=Device(base.replace(wire_resistance=1e-4)))
    # a manifest whose calibrations name no wire fields
    with zipfile.ZipFile(tmp_path / "m.cimx") as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    manifest = json.loads(files["manifest.json"])
    for fields in manifest["adc_spans"]:
        for key in GROUPS["parasitics"]:
            fields.pop(key)
    files["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(tmp_path / "old.cimx", "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    assert set(cimxdsl.load(tmp_path / "old.cimx").adc_spans) == {base.calibration_key}
