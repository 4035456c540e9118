"""Binary and ternary networks (`Sign`, `Round(Clip(x, -1, 1))` after batch norms) in the integer
import for the PIM target: their thresholds decide as onnxruntime does, their ±1 products carry 1
weight bit and 2 input bits, and the bundled digits BNN and TNN compile for `--target pim` and run
instruction by instruction to the integer program's result."""

from pathlib import Path

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from cimxdsl.dialects.utils import precision_of
from cimxdsl.frontend.attributes import OnnxImportError
from cimxdsl.frontend.integer import import_integer
from cimxdsl.interpreters import run
from cimxdsl.tools.cim_compile import main as cim_compile
from cimxdsl.tools.cim_validate import main as cim_validate

EXAMPLES = Path(__file__).parents[3] / "examples"


def activation_model(activation: str) -> tuple:
    """x -> BatchNormalization (a negative, a zero and positive scales) -> Sign or Round(Clip(-1, 1))."""
    channels = 4
    gamma = np.array([1.5, -0.7, 0.0, 0.3], np.float32)
    beta = np.array([0.2, -0.1, 0.4, -0.6], np.float32)
    mean = np.array([0.5, -1.0, 0.0, 2.0], np.float32)
    var = np.array([1.0, 2.0, 0.5, 4.0], np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in zip((gamma, beta, mean, var), ("g", "b", "m", "v"), strict=True)]
    nodes = [helper.make_node("BatchNormalization", ["x", "g", "b", "m", "v"], ["z"], name="bn")]
    if activation == "Sign":
        nodes.append(helper.make_node("Sign", ["z"], ["y"], name="sign"))
    else:
        inits += [numpy_helper.from_array(np.float32(v), n) for v, n in ((-1.0, "lo"), (1.0, "hi"))]
        nodes += [helper.make_node("Clip", ["z", "lo", "hi"], ["c"]), helper.make_node("Round", ["c"], ["y"])]
    shape = (1, channels, 5, 5)
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), shape


@pytest.mark.parametrize("activation", ["Sign", "Round"])
def test_thresholds_after_a_batch_norm_equal_onnxruntime(activation):
    model, shape = activation_model(activation)
    rng = np.random.default_rng(0)
    inputs = [(rng.integers(-100, 101, shape) / 8).astype(np.float32) for _ in range(3)]  # exact int8 codes
    program = import_integer(model, [[x] for x in inputs])
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for x in inputs:
        expected = session.run(None, {"x": x})[0]
        ours = program.dequantize(run(program.module, program.quantize([x]), "ideal").outputs)[0]
        np.testing.assert_array_equal(ours, expected)
        assert set(np.unique(expected)) <= {-1.0, 0.0, 1.0} and len(np.unique(expected)) >= 2


def test_round_of_anything_but_a_unit_clip_is_refused():
    graph = helper.make_graph(
        [helper.make_node("Round", ["x"], ["y"], name="r")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 4))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 4))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(OnnxImportError, match=r"Round.*'r'.*Clip"):
        import_integer(model, [[np.ones((1, 4), np.float32)]])


@pytest.mark.parametrize("network", ["bnn", "tnn"])
def test_digits_network_agrees_with_onnxruntime_and_carries_ternary_bits(network):
    path = EXAMPLES / f"digits_{network}.onnx"
    data = np.load(EXAMPLES / "digits_test.npz")
    program = import_integer(path, [[x[None]] for x in data["calibration"][:16]])
    bits = [precision_of(op) for op in program.module.walk() if precision_of(op) is not None]
    assert bits == [(1, 2)] * 3
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for x in data["inputs"][:20]:
        logits = run(program.module, program.quantize([x[None]]), "ideal").outputs[0][0]
        expected = np.argmax(session.run(None, {"x": x[None]})[0])
        assert logits[expected] == logits.max()  # onnxruntime's class (int8 logits may tie)


@pytest.mark.parametrize("network", ["bnn", "tnn"])
def test_digits_network_compiles_for_pim_and_validates_exactly(network, tmp_path, capsys):
    path = EXAMPLES / f"digits_{network}.onnx"
    image = np.load(EXAMPLES / "digits_test.npz")["inputs"][:1]
    np.save(tmp_path / "x.npy", image)
    out = tmp_path / "out"
    given = f"x={tmp_path / 'x.npy'}"
    assert cim_compile([str(path), "--target", "pim", "--input", given, "-o", str(out)]) in (0, None)
    capsys.readouterr()
    expected = np.load(out / "expected_0.npy")
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert expected[0, np.argmax(session.run(None, {"x": image})[0])] == expected.max()
    assert cim_validate([str(out), "--input", str(out / "input_0.npy"), "--expect", str(out / "expected_0.npy")]) == 0
