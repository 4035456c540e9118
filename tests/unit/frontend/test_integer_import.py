"""The integer (power-of-two) import for the PIM target stays close to the float model."""

from pathlib import Path

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from cimxdsl.frontend.attributes import OnnxImportError
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


@pytest.mark.parametrize("include_pad", [0, 1])
def test_average_pool_counts_padding_but_not_ceil_modes_extension(include_pad):
    """`count_include_pad` counts the explicit padding, never the rows and columns `ceil_mode` adds
    so that the last window fits (onnxruntime's rule): a constant image averages to the constant
    where windows stay inside it, less near the border when padding counts."""
    pool = helper.make_node(
        "AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1,
        count_include_pad=include_pad,
    )  # fmt: skip
    graph = helper.make_graph(
        [pool],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 2, 6, 6))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 2, 4, 4))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    x = np.full((1, 2, 6, 6), 0.75, np.float32)
    program = import_integer(model, [[x]])
    ours = program.dequantize(run(program.module, program.quantize([x]), "ideal").outputs)[0]
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, {"x": x})[0]
    np.testing.assert_allclose(ours, expected, atol=2.0 ** (program.output_exponents[0] + 1))
    assert (np.unique(np.round(expected, 3)).size > 1) == bool(include_pad)


def test_a_softmax_over_pixels_is_refused():
    w = numpy_helper.from_array(np.ones((2, 3, 1, 1), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Softmax", ["c"], ["y"], axis=1)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 3, 2, 2))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 2, 2, 2))],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(OnnxImportError, match="final Softmax must be over the classes"):
        import_integer(model, [[np.ones((1, 3, 2, 2), np.float32)]])
