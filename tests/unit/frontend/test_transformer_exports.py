"""Real model definitions as torch exports them (`examples/export_transformers.py`, committed under
`transformer_exports/`): HuggingFace BERT (sequence classification; also on token ids alone), GPT-2
and Llama (language-model heads) and torchvision's VisionTransformer, from the TorchScript and the
dynamo exporter, compile and equal onnxruntime in exact mode on `ideal`, and stay close to it in
int8 mode."""

from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import cimxdsl
from cimxdsl.frontend.attributes import OnnxImportError
from cimxdsl.frontend.onnx_importer import import_onnx, load_model
from cimxdsl.interpreters import entry_function

EXPORTS = Path(__file__).parent / "transformer_exports"
VOCAB = 100
HUGGINGFACE = ["bert_torchscript", "bert_dynamo", "bert_ids_torchscript"] + [
    f"{model}_{exporter}" for model in ("gpt2", "llama") for exporter in ("torchscript", "dynamo")
]
NAMES = [*HUGGINGFACE, "vit_torchscript", "vit_dynamo"]
SHOWN_OPS = {
    "bert_ids_torchscript": {"GatherElements", "Expand"},  # the token-type buffer gathered with the position ids
    "gpt2_torchscript": {"IsNaN", "And"},  # the softmax of a row that masks every key guarded
    "gpt2_dynamo": {"IsNaN", "GatherND", "And"},
    "llama_dynamo": {"IsNaN", "GatherND"},
}
"""Ops of the attention masks and embeddings that the exports exercise (checked, so that a new export
that loses them is noticed)."""


def session_of(name: str) -> onnxruntime.InferenceSession:
    return onnxruntime.InferenceSession(str(EXPORTS / f"{name}.onnx"), providers=["CPUExecutionProvider"])


def example_inputs(name: str, session: onnxruntime.InferenceSession) -> tuple[list[np.ndarray], np.ndarray]:
    """The inputs the export was traced with, in the model's order, and torch's output."""
    with np.load(EXPORTS / f"{name}.npz") as data:
        return [data[i.name] for i in session.get_inputs()], data["output"]


def random_inputs(examples: list[np.ndarray], names: list[str], rng: np.random.Generator) -> list[np.ndarray]:
    """Token ids anywhere in the vocabulary, token types 0 or 1, attention masks of random 0s and 1s
    that mask the first token (in a causal model, a row that masks every key), or standard-normal
    images."""
    inputs = []
    for example, name in zip(examples, names, strict=True):
        if name == "input_ids":
            inputs.append(rng.integers(0, VOCAB, example.shape).astype(np.int64))
        elif name in ("token_type_ids", "attention_mask"):
            values = rng.integers(0, 2, example.shape).astype(np.int64)
            if name == "attention_mask":
                values[:, 0] = 0
            inputs.append(values)
        else:
            inputs.append(rng.standard_normal(example.shape).astype(np.float32))
    return inputs


@pytest.mark.filterwarnings("error::RuntimeWarning")  # masked rows' NaNs are guarded, not warned about
@pytest.mark.parametrize("name", NAMES)
def test_export_compiles_and_equals_onnxruntime_in_exact_mode(name):
    """Within 1e-5 of the output's scale: float32 rounding (2⁻²⁴ per operation) accumulated over
    sums of at most 64 terms in each of two layers (measured: at most 3e-7)."""
    session = session_of(name)
    names = [i.name for i in session.get_inputs()]
    example, torch_output = example_inputs(name, session)
    np.testing.assert_allclose(session.run(None, dict(zip(names, example)))[0], torch_output, rtol=1e-4, atol=1e-5)
    assert SHOWN_OPS.get(name, set()) <= {node.op_type for node in onnx.load(EXPORTS / f"{name}.onnx").graph.node}
    compiled = cimxdsl.compile(EXPORTS / f"{name}.onnx", device="ideal", mode="exact")
    for inputs in (example, random_inputs(example, names, np.random.default_rng(0))):
        expected = session.run(None, dict(zip(names, inputs)))[0]
        assert np.isfinite(expected).all()
        np.testing.assert_allclose(compiled(*inputs), expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())
    assert compiled.last_run.device.report()["total"]["mvms"] > 0  # the linear layers ran on crossbars


@pytest.mark.parametrize("name", ["bert_dynamo", "gpt2_torchscript", "llama_dynamo"])
def test_export_in_int8_mode_stays_within_five_percent_of_onnxruntime(name):
    """int8 weights and activations of the linear layers (calibrated on 8 other random inputs): the
    relative RMS error of the logits stays below 5 % (measured: at most 4.1 % on 7 inputs each of
    every HuggingFace export)."""
    session = session_of(name)
    names = [i.name for i in session.get_inputs()]
    example, _ = example_inputs(name, session)
    rng = np.random.default_rng(3)
    calibration = [random_inputs(example, names, rng) for _ in range(8)]
    compiled = cimxdsl.compile(EXPORTS / f"{name}.onnx", device="ideal", calibration=calibration)
    for inputs in (example, random_inputs(example, names, rng)):
        expected = session.run(None, dict(zip(names, inputs)))[0]
        error = np.linalg.norm(compiled(*inputs) - expected) / np.linalg.norm(expected)
        assert error < 0.05


def test_int8_mode_without_calibration_data_calibrates_integer_inputs_in_range():
    """Token ids, token types and masks calibrate on 0s and 1s (standard-normal values, cast to
    integers, index outside BERT's 2 token types), and the note says so."""
    session = session_of("bert_dynamo")
    names = [i.name for i in session.get_inputs()]
    example, _ = example_inputs("bert_dynamo", session)
    compiled = cimxdsl.compile(EXPORTS / "bert_dynamo.onnx", device="ideal")
    assert "calibrated on 16 standard-normal (floats) and 0/1 (integers) random inputs" in compiled.notes[0]
    expected = session.run(None, dict(zip(names, example)))[0]
    assert np.linalg.norm(compiled(*example) - expected) / np.linalg.norm(expected) < 0.05


@pytest.mark.parametrize("name", ["gpt2_torchscript", "gpt2_dynamo"])
def test_the_ir_arguments_keep_the_model_input_names_when_reshaped_first(name):
    """Both exports reshape the inputs to their own shape first (no op): the arguments keep the
    input names, which `cim-run --input NAME=…` takes."""
    module = import_onnx(EXPORTS / f"{name}.onnx")
    assert [a.name_hint for a in entry_function(module, "main").body.block.args] == ["input_ids", "attention_mask"]


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
