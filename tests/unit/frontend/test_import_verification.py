"""The imported module is verified once; a failure names the first node whose ops do not verify."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from cimxdsl.frontend.onnx_importer import OnnxImportError, import_onnx


def model_with(nodes, initializers=()):
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, [2, 3])],
        list(initializers),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_node_whose_ops_do_not_verify_is_named():
    ints = numpy_helper.from_array(np.ones((2, 3), np.int64), "ints")
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="first"),
        helper.make_node("Add", ["a", "ints"], ["b"], name="mixed_add"),  # f32 + i64: arith.addf rejects it
        helper.make_node("Relu", ["b"], ["c"], name="last"),
    ]
    with pytest.raises(OnnxImportError, match=r"node 'mixed_add'.*inputs do not fit together"):
        import_onnx(model_with(nodes, [ints]))


def test_a_valid_model_imports_and_verifies():
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="first"), helper.make_node("Relu", ["a"], ["b"], name="b")]
    module = import_onnx(model_with(nodes))
    module.verify()
    assert sum(1 for op in module.walk() if op.name == "tosa.clamp") == 2
