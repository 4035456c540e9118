"""Nodes on constant inputs are folded, and folding never makes a valid model fail: what does not
evaluate is imported as a run-time op; gathers by elements and by coordinates against onnxruntime."""

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import cimxdsl
from cimxdsl.dialects.upstream import GatherOp
from cimxdsl.frontend import folding
from cimxdsl.frontend.attributes import OnnxImportError
from cimxdsl.frontend.onnx_importer import import_onnx

POSITIONS, TOKENS = 512, 12


def model_of(nodes, inputs, initializers, output_shape) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(name, kind, shape) for name, kind, shape in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, output_shape)],
        [numpy_helper.from_array(value, name) for name, value in initializers.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def buffer_gather(positions: np.ndarray) -> onnx.ModelProto:
    """A BERT embedding's token types when none are given: a [1, 512] buffer expanded and gathered
    by element with the position ids, looked up in a table and added to the run-time `x`."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Expand", ["buffer", "shape"], ["expanded"]),
        helper.make_node("GatherElements", ["expanded", "positions"], ["types"], axis=1, name="gather"),
        helper.make_node("Gather", ["table", "types"], ["embedded"]),
        helper.make_node("Add", ["x", "embedded"], ["y"]),
    ]
    initializers = {
        "buffer": rng.integers(0, 2, (1, POSITIONS)),
        "shape": np.array([1, POSITIONS]),
        "positions": positions,
        "table": rng.standard_normal((2, 4)).astype(np.float32),
    }
    return model_of(nodes, [("x", TensorProto.FLOAT, [1, TOKENS, 4])], initializers, [1, TOKENS, 4])


def onnxruntime_output(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def test_gather_elements_along_a_long_constant_axis_folds_to_onnxruntimes_values():
    """ONNX's reference picks one element per row once the axis is longer than `np.choose` takes."""
    positions = np.array([[0, 3, 100, 511, -1, -512, 7, 8, 300, 9, 10, 11]])
    model = buffer_gather(positions)
    x = np.random.default_rng(1).standard_normal((1, TOKENS, 4)).astype(np.float32)
    compiled = cimxdsl.compile(model, device="ideal", mode="exact")
    assert not any(isinstance(op, GatherOp) and op.source.type.get_shape() == (1, POSITIONS) for op in compiled.module("import").walk())
    np.testing.assert_array_equal(compiled(x), onnxruntime_output(model, {"x": x}))


def test_gather_elements_index_out_of_range_on_constants_is_a_one_line_error():
    model = buffer_gather(np.array([[0] * (TOKENS - 1) + [POSITIONS]]))
    with pytest.raises(OnnxImportError, match=rf"^GatherElements node 'gather': index {POSITIONS} is out of range for axis 1 of size {POSITIONS}$"):
        import_onnx(model)


def test_a_node_whose_folding_fails_is_imported_as_a_run_time_op(monkeypatch):
    def failing(node, *inputs):
        raise ValueError("no evaluation")

    monkeypatch.setitem(folding.NUMPY_EVALUATIONS, "Expand", failing)
    monkeypatch.setitem(folding.NUMPY_EVALUATIONS, "GatherElements", failing)
    model = buffer_gather(np.arange(TOKENS)[None] * 40)
    x = np.random.default_rng(2).standard_normal((1, TOKENS, 4)).astype(np.float32)
    compiled = cimxdsl.compile(model, device="ideal", mode="exact")
    assert any(isinstance(op, GatherOp) and op.source.type.get_shape() == (1, POSITIONS) for op in compiled.module("import").walk())
    np.testing.assert_array_equal(compiled(x), onnxruntime_output(model, {"x": x}))


@pytest.mark.parametrize(
    ("node", "initializers", "reason"),
    [
        (helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="node"),
         {"start": np.float32(0), "limit": np.float32(5), "delta": np.float32(0)}, "float division by zero"),
        (helper.make_node("CumSum", ["x", "axis"], ["y"], name="node"),
         {"x": np.ones(3, np.float32), "axis": np.array(3)}, "axis 3 is out of bounds for array of dimension 1"),
    ],
    ids=["constant-only op", "op without run-time import"],
)
def test_an_op_that_must_fold_and_does_not_evaluate_names_the_evaluation_error(node, initializers, reason):
    with pytest.raises(OnnxImportError) as error:
        import_onnx(model_of([node], [], initializers, None))
    assert str(error.value) == f"{node.op_type} node 'node': its constant inputs cannot be evaluated ({reason})"


@pytest.mark.parametrize("batch_dims", [0, 1])
def test_gather_nd_of_run_time_coordinates_equals_onnxruntime(batch_dims):
    rng = np.random.default_rng(3)
    data = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    sizes = data.shape[batch_dims : batch_dims + 2]
    coordinates = np.stack([rng.integers(-size, size, (2, 6)) for size in sizes], axis=-1)
    node = helper.make_node("GatherND", ["data", "coordinates"], ["y"], batch_dims=batch_dims)
    inputs = [("data", TensorProto.FLOAT, data.shape), ("coordinates", TensorProto.INT64, coordinates.shape)]
    model = model_of([node], inputs, {}, None)
    compiled = cimxdsl.compile(model, device="ideal", mode="exact")
    feeds = {"data": data, "coordinates": coordinates}
    np.testing.assert_array_equal(compiled(data, coordinates), onnxruntime_output(model, feeds))


def test_gather_nd_coordinate_out_of_range_at_run_time_is_a_one_line_error():
    node = helper.make_node("GatherND", ["data", "coordinates"], ["y"])
    inputs = [("data", TensorProto.FLOAT, [3, 4]), ("coordinates", TensorProto.INT64, [2, 2])]
    compiled = cimxdsl.compile(model_of([node], inputs, {}, None), device="ideal", mode="exact")
    for bad in (4, -5):
        with pytest.raises(Exception, match=f"index {bad} is out of range for dimension 1 of size 4") as error:
            compiled(np.zeros((3, 4), np.float32), np.array([[0, 1], [2, bad]]))
    assert "\n" not in str(error.value)


def test_gather_elements_of_run_time_indices_smaller_than_the_data_equals_onnxruntime():
    """Along the other axes the indices may cover only the first entries of the data."""
    rng = np.random.default_rng(4)
    data = rng.standard_normal((3, 5, 4)).astype(np.float32)
    indices = rng.integers(-5, 5, (2, 7, 3))
    node = helper.make_node("GatherElements", ["data", "indices"], ["y"], axis=1)
    inputs = [("data", TensorProto.FLOAT, data.shape), ("indices", TensorProto.INT64, indices.shape)]
    model = model_of([node], inputs, {}, None)
    compiled = cimxdsl.compile(model, device="ideal", mode="exact")
    np.testing.assert_array_equal(compiled(data, indices), onnxruntime_output(model, {"data": data, "indices": indices}))
