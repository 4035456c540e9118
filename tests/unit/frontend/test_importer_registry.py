"""The importer tables: each op type has one handler, every handler is registered, the documented
operators are the registered ones, and an op without a handler is a one-line error."""

import inspect
import re
from pathlib import Path

import numpy as np
import onnx.defs
import pytest
from onnx import TensorProto, helper

from cimxdsl.frontend import ops
from cimxdsl.frontend.attributes import OnnxImportError
from cimxdsl.frontend.folding import SHAPE_ONLY
from cimxdsl.frontend.integer import IntegerImporter, import_integer
from cimxdsl.frontend.onnx_importer import import_onnx
from cimxdsl.frontend.ops import importer
from cimxdsl.frontend.registry import Importers, integer_importer

DOCS = Path(__file__).parents[3] / "docs" / "onnx-support.md"
OP_MODULES = [ops.math, ops.nn, ops.quant, ops.shape, ops.transformer]


def test_an_op_type_registers_once():
    table = Importers("test")

    @table("Relu", "Elu")
    def handler(im, node, attrs):
        return []

    assert table.get("Relu") is handler and table.get("Elu") is handler and list(table) == ["Elu", "Relu"]
    with pytest.raises(ValueError, match=r"^the test import registers ONNX op 'Relu' twice$"):
        table("Relu")(handler)
    assert table.get("Relu") is handler


@pytest.mark.parametrize("table", [importer, integer_importer], ids=["float", "integer"])
def test_every_registered_op_is_an_onnx_op(table):
    assert len(table) > 0
    assert [op for op in table if not onnx.defs.has(op)] == []


def test_every_float_handler_is_registered_and_lives_in_an_op_module():
    registered = {id(table_handler) for table_handler in importer.handlers.values()}
    defined = [
        (module.__name__, name, function)
        for module in OP_MODULES
        for name, function in inspect.getmembers(module, inspect.isfunction)
        if name.startswith("import_") and function.__module__ == module.__name__
    ]
    assert [(module, name) for module, name, f in defined if id(f) not in registered] == []
    assert {f.__module__ for f in importer.handlers.values()} <= {m.__name__ for m in OP_MODULES}


def test_every_integer_handler_is_registered():
    methods = [f for name, f in vars(IntegerImporter).items() if name.startswith("import_") and callable(f)]
    assert len(methods) == len(set(integer_importer.handlers.values()))
    assert set(methods) == set(integer_importer.handlers.values())


def documented_ops() -> set[str]:
    """The ONNX op types named in the "Operators" section of docs/onnx-support.md."""
    section = DOCS.read_text().split("## Operators", 1)[1].split("\n## ", 1)[0]
    return {word for word in re.findall(r"\b[A-Z][A-Za-z]*\b", section) if onnx.defs.has(word)}


def test_the_documented_operators_are_the_registered_ones():
    documented = documented_ops()
    assert sorted(set(importer) - documented) == [], "registered but not listed in docs/onnx-support.md"
    folded_only = documented - set(importer)
    assert folded_only <= {"Constant", *SHAPE_ONLY}, "listed in docs/onnx-support.md but not registered"


def one_node_model(op_type: str, name: str):
    graph = helper.make_graph(
        [helper.make_node(op_type, ["x"], ["y"], name=name)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_an_op_without_a_float_handler_is_a_one_line_error():
    assert "Sin" not in importer
    with pytest.raises(OnnxImportError) as error:
        import_onnx(one_node_model("Sin", "the_sin"))
    supported = "Add, And, AveragePool, BatchNormalization, Cast"
    assert str(error.value).startswith(f"unsupported ONNX op 'Sin' (node 'the_sin'); supported: {supported}, ")
    assert str(error.value) == "unsupported ONNX op 'Sin' (node 'the_sin'); supported: " + ", ".join(sorted(importer))
    assert "\n" not in str(error.value)


def test_an_op_without_an_integer_handler_is_a_one_line_error():
    assert "Sigmoid" in importer and "Sigmoid" not in integer_importer
    with pytest.raises(OnnxImportError) as error:
        import_integer(one_node_model("Sigmoid", "the_sigmoid"), [[np.ones((1, 4), np.float32)]])
    assert str(error.value) == "the integer (PIM) import does not support 'Sigmoid' (node 'the_sigmoid')"
