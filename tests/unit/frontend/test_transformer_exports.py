"""Real model definitions as torch exports them (`examples/export_transformers.py`, committed under
`transformer_exports/`): HuggingFace BERT and GPT-2 and torchvision's VisionTransformer, from the
TorchScript and the dynamo exporter, compile and equal onnxruntime in exact mode on `ideal`. The
TorchScript exporter cannot export GPT-2 (`aten::diff` at opset 17), so that file is absent."""

from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import cimxdsl
from cimxdsl.frontend.attributes import OnnxImportError
from cimxdsl.frontend.onnx_importer import import_onnx, load_model

EXPORTS = Path(__file__).parent / "transformer_exports"
VOCAB = 64
NAMES = ["bert_torchscript", "bert_dynamo", "gpt2_dynamo", "vit_torchscript", "vit_dynamo"]


def random_input(example: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Token ids anywhere in the vocabulary, or standard-normal images."""
    if example.dtype == np.int64:
        return rng.integers(0, VOCAB, example.shape).astype(np.int64)
    return rng.standard_normal(example.shape).astype(np.float32)


@pytest.mark.parametrize("name", NAMES)
def test_export_compiles_and_equals_onnxruntime_in_exact_mode(name):
    path = EXPORTS / f"{name}.onnx"
    with np.load(path.with_suffix(".npz")) as data:
        example, torch_output = data["input"], data["output"]
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (input_name,) = [i.name for i in session.get_inputs()]
    np.testing.assert_allclose(session.run(None, {input_name: example})[0], torch_output, rtol=1e-4, atol=1e-5)
    compiled = cimxdsl.compile(path, device="ideal", mode="exact")
    rng = np.random.default_rng(0)
    for x in (example, random_input(example, rng)):
        expected = session.run(None, {input_name: x})[0]
        np.testing.assert_allclose(compiled(x), expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())
    assert compiled.last_run.device.report()["total"]["mvms"] > 0  # the linear layers ran on crossbars


def computed_reshape(last: list[int]) -> onnx.ModelProto:
    """x[1,6,4] reshaped to [x.shape[1] / 6, *last] (a shape shape inference leaves symbolic, as in
    the exports' attention), then unsqueezed at axis 1 and squeezed back."""
    ints = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)  # noqa: E731
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "one"], ["rows"], axis=0),
        helper.make_node("Div", ["rows", "six"], ["one_row"]),
        helper.make_node("Unsqueeze", ["one_row", "zero"], ["first"]),
        helper.make_node("Concat", ["first", "last"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape"),
        helper.make_node("Unsqueeze", ["y", "one_axis"], ["wide"]),
        helper.make_node("Squeeze", ["wide", "one_axis"], ["z"]),
    ]
    constants = [ints("one", 1), ints("six", 6), ints("zero", [0]), ints("last", last), ints("one_axis", [1])]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 4])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
        constants,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("last", [[2, -1], [0, 4], [24]], ids=["inferred", "copied", "merged"])
def test_reshape_to_a_shape_computed_from_static_shapes_follows_the_computed_shape(last):
    model = computed_reshape(last)
    x = np.random.default_rng(0).standard_normal((1, 6, 4)).astype(np.float32)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, {"x": x})[0]
    compiled = cimxdsl.compile(model, device="ideal", mode="exact")
    np.testing.assert_array_equal(compiled(x), expected)


def test_reshape_to_a_computed_shape_of_another_size_is_a_one_line_error():
    with pytest.raises(OnnxImportError, match=r"^Reshape node 'reshape': cannot reshape \[1, 6, 4\] into \[1, 5, 5\]$"):
        import_onnx(load_model(computed_reshape([5, 5])))
