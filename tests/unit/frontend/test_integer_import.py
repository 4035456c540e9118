"""The integer (power-of-two) import for the PIM target stays close to the float model."""

from pathlib import Path

import numpy as np
import onnxruntime

from cimxdsl.frontend.integer import exponent, import_integer
from cimxdsl.interpreters import run

EXAMPLES = Path(__file__).parents[3] / "examples"


def test_exponent_is_the_smallest_that_fits_int8():
    assert exponent(127.0) == 0 and exponent(127.1) == 1 and exponent(1.0) == -6
    for peak in (0.01, 3.3, 1000.0):
        e = exponent(peak)
        assert peak <= 127 * 2.0**e and peak > 127 * 2.0 ** (e - 1)


def test_integer_digits_model_agrees_with_float():
    data = np.load(EXAMPLES / "digits_test.npz")
    program = import_integer(EXAMPLES / "digits_cnn.onnx", [[x[None]] for x in data["calibration"][:32]])
    session = onnxruntime.InferenceSession(str(EXAMPLES / "digits_cnn.onnx"), providers=["CPUExecutionProvider"])
    images = data["inputs"][:60]
    ours = [program.dequantize(run(program.module, program.quantize([x[None]]), "ideal").outputs)[0] for x in images]
    reference = [session.run(None, {"x": x[None]})[0] for x in images]
    agreement = np.mean([np.argmax(a) == np.argmax(b) for a, b in zip(ours, reference, strict=True)])
    assert agreement >= 0.95
    assert all(v.dtype == np.dtype("int32") for v in program.quantize([images[0][None]]))
