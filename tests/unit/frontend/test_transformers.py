"""Transformer blocks from ONNX through the memristor flow: a BERT-style encoder block and a
GPT-2-style causal decoder block (`models.transformer_block`) against onnxruntime."""

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import arith
from xdsl.dialects.linalg.ops import MatmulOp

import cimxdsl
from cimxdsl.dialects import cinm
from cimxdsl.dialects.upstream import BatchMatmulOp
from cimxdsl.dialects.utils import shape_of
from cimxdsl.frontend.attributes import OnnxImportError
from cimxdsl.frontend.onnx_importer import import_onnx
from cimxdsl.reference import onnxruntime_outputs
from tests.unit.frontend.models import transformer_block

VOCAB, SEQ = 40, 8


def reference(model, ids: np.ndarray) -> np.ndarray:
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"ids": ids})[0]


def token_ids(rng: np.random.Generator) -> np.ndarray:
    return rng.integers(0, VOCAB, (1, SEQ)).astype(np.int64)


@pytest.mark.parametrize(("causal", "linear_layers"), [(False, 6), (True, 5)], ids=["bert", "gpt2"])
def test_exact_mode_equals_onnxruntime_with_linear_layers_on_crossbars(causal, linear_layers):
    """Every linear layer is one crossbar product whose rows are the tokens; Q·Kᵀ and P·V are
    `cinm.op.gemm`s (one per head) in computes placed on the host, which the end of the pipeline
    makes `linalg.matmul`s marked with that placement."""
    model = transformer_block(causal)
    compiled = cimxdsl.compile(model, device="ideal", mode="exact")
    ids = token_ids(np.random.default_rng(1))
    expected = reference(model, ids)
    np.testing.assert_allclose(compiled(ids), expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())
    assert compiled.last_run.device.report()["total"]["mvms"] == linear_layers
    module = compiled.module("cinm")
    assert not any(isinstance(op, BatchMatmulOp) for op in module.walk())
    computes = [op for op in module.walk() if isinstance(op, cinm.ComputeOp) and cinm.placement(op) == "host"]
    assert len(computes) == 2  # Q·Kᵀ and P·V
    assert all(sum(isinstance(op, cinm.GemmOp) for op in c.walk()) == 2 for c in computes)  # one per head
    lowered = list(compiled.module("func").walk())  # plain MLIR: the host's products as marked matmuls
    assert not any(op.name.startswith("cinm.") for op in lowered)
    host = [op for op in lowered if op.name == "linalg.matmul" and cinm.placement(op) == "host"]
    assert len(host) == 4


@pytest.mark.parametrize("causal", [False, True], ids=["bert", "gpt2"])
def test_int8_mode_stays_within_five_percent_of_onnxruntime(causal):
    """int8 weights and activations of the linear layers (calibrated on other token ids): the
    relative RMS error of the block's output stays below 5 % (measured: at most 3.1 % on 20 inputs)."""
    model = transformer_block(causal)
    rng = np.random.default_rng(3)
    compiled = cimxdsl.compile(model, device="ideal", calibration=[[token_ids(rng)] for _ in range(32)])
    for _ in range(3):
        ids = token_ids(rng)
        expected = reference(model, ids)
        error = np.linalg.norm(compiled(ids) - expected) / np.linalg.norm(expected)
        assert error < 0.05


def test_token_ids_out_of_the_vocabulary_are_a_one_line_error():
    compiled = cimxdsl.compile(transformer_block(False), device="ideal", mode="exact")
    ids = np.full((1, SEQ), VOCAB, np.int64)
    with pytest.raises(Exception, match=f"index {VOCAB} is out of range for dimension 0 of size {VOCAB}") as error:
        compiled(ids)
    assert "\n" not in str(error.value)


def test_each_linear_layer_is_one_matmul_whose_rows_are_the_tokens():
    module = import_onnx(transformer_block(False))
    products = [op for op in module.walk() if isinstance(op, MatmulOp)]
    assert len(products) == 6  # Q, K, V, output projection, two MLP layers
    assert all(shape_of(op.inputs[0])[0] == SEQ and isinstance(op.inputs[1].owner, arith.ConstantOp) for op in products)
    batched = [op for op in module.walk() if isinstance(op, BatchMatmulOp)]
    assert [shape_of(op.result) for op in batched] == [(2, SEQ, SEQ), (2, SEQ, 8)]  # per head: Q·Kᵀ, P·V


@pytest.mark.parametrize("constant_table", [True, False], ids=["folded", "run-time table"])
def test_constant_indices_out_of_range_are_an_import_error_naming_the_node(constant_table):
    table = numpy_helper.from_array(np.zeros((4, 3), np.float32), "table")
    ids = numpy_helper.from_array(np.array([1, -5]), "ids")
    node = helper.make_node("Gather", ["table", "ids"], ["y"], name="lookup")
    inputs = [] if constant_table else [helper.make_tensor_value_info("table", TensorProto.FLOAT, [4, 3])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])]
    graph = helper.make_graph([node], "g", inputs, outputs, [table, ids] if constant_table else [ids])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(OnnxImportError, match=r"^Gather node 'lookup': index -5 is out of range for axis 0 of size 4$"):
        import_onnx(model)


def test_cim_compile_reference_takes_token_ids_given_as_floats():
    """`cim-compile --compare` feeds onnxruntime the inputs it ran (floats): they are cast to the
    model's int64 first."""
    model = transformer_block(True)
    ids = token_ids(np.random.default_rng(4))
    (given,) = onnxruntime_outputs(model.SerializeToString(), {"ids": ids.astype(np.float32)})
    np.testing.assert_array_equal(given, reference(model, ids))
