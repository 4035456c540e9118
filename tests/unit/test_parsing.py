"""Parsing IR text: dense float literals that xDSL prints in hexadecimal (NaN, ±∞, whole floats such
as 16777216) are read back as the same floats."""

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import arith
from xdsl.dialects.builtin import ModuleOp, f16, f32, f64

import cimxdsl
from cimxdsl.dialects.utils import dense_array, dense_attr
from cimxdsl.parsing import parse_module_text

VALUES = np.array([-np.inf, np.inf, np.nan, 16777216.0, 1.5, -2.0])


@pytest.mark.parametrize("element", [f16, f32, f64], ids=str)
@pytest.mark.parametrize("values", [VALUES, np.full(3, -np.inf), np.full(1, 16777216.0)], ids=["list", "splat", "one"])
def test_printed_dense_floats_parse_back_to_the_same_bits(element, values):
    with np.errstate(over="ignore"):  # 16777216 is +∞ in f16
        expected = values.astype(np.dtype(element.format))
    text = str(ModuleOp([arith.ConstantOp(dense_attr(expected, element))]))
    assert "0x" in text
    parsed = next(op for op in parse_module_text(text, "constants.mlir").walk() if isinstance(op, arith.ConstantOp))
    np.testing.assert_array_equal(dense_array(parsed.value).view(f"u{expected.itemsize}"), expected.view(f"u{expected.itemsize}"))


def test_integer_literals_in_hexadecimal_keep_their_values():
    module = parse_module_text("%0 = arith.constant dense<[0x10, 3]> : tensor<2xi32>", "ints.mlir")
    constant = next(op for op in module.walk() if isinstance(op, arith.ConstantOp))
    np.testing.assert_array_equal(dense_array(constant.value), [16, 3])


def test_a_saved_model_masking_with_minus_infinity_loads_with_the_same_outputs(tmp_path):
    """A softmax over scores masked with −∞ (as the TorchScript exports of HuggingFace models mask
    attention), a fully masked row's NaNs set to 0."""
    nodes = [
        helper.make_node("Where", ["mask", "zero", "minus_infinity"], ["bias"]),
        helper.make_node("Add", ["x", "bias"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["weights"]),
        helper.make_node("IsNaN", ["weights"], ["undefined"]),
        helper.make_node("Where", ["undefined", "zero", "weights"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4]), helper.make_tensor_value_info("mask", TensorProto.BOOL, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])],
        [numpy_helper.from_array(np.float32(0), "zero"), numpy_helper.from_array(np.float32(-np.inf), "minus_infinity")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    mask = np.array([[1, 1, 0, 1], [0, 0, 0, 0], [0, 1, 0, 0]], bool)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, {"x": x, "mask": mask})[0]
    cimxdsl.compile(model, device="ideal", mode="exact").save(tmp_path / "masked.cimx")
    loaded = cimxdsl.load(tmp_path / "masked.cimx")
    assert "0xff800000" in loaded.mlir("import")
    np.testing.assert_allclose(loaded(x, mask), expected, rtol=1e-6, atol=1e-7)
