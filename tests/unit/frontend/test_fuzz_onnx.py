"""Broken ONNX graphs (well-formed protobufs): a clean error or a correct result, never a traceback.

Seeded mutants of valid graphs (dropped initializers, bad attributes, wrong dims, dangling inputs,
cycles, unknown opsets, ops and dtypes) are compiled for both targets. Each must either raise the
project's error type (`CompileError`, `OnnxImportError`) or compute what onnxruntime computes on the
same graph; a sample also goes through `cim-compile`, which must print one line and exit with 1.
"""

import copy
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import AttributeProto, TensorProto, helper, numpy_helper

import cimxdsl
from cimxdsl.api import CompileError
from cimxdsl.frontend.onnx_importer import OnnxImportError, input_shape
from cimxdsl.tools.cim_compile import main as cim_compile
from tests.unit.frontend.models import make_model, small_cnn

MUTANTS = 120
"""Mutants per base graph and target."""
CLEAN = (CompileError, OnnxImportError)


def pim_cnn() -> onnx.ModelProto:
    """A graph the integer (PIM) import takes: conv, ReLU, max pool, residual add, dense."""
    rng = np.random.default_rng(1)
    init = {
        "w1": rng.normal(0, 0.5, (4, 2, 3, 3)),
        "b1": rng.normal(0, 0.1, 4),
        "w2": rng.normal(0, 0.3, (4, 4, 3, 3)),
        "fc": rng.normal(0, 0.5, (3, 16)),
        "fcb": rng.normal(0, 0.1, 3),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2], name="pool1"),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1], strides=[1, 1], name="conv2"),
        helper.make_node("Add", ["c2", "p1"], ["res"], name="residual"),
        helper.make_node("Flatten", ["res"], ["flat"], axis=1, name="flatten"),
        helper.make_node("Gemm", ["flat", "fc", "fcb"], ["y"], transB=1, name="fc"),
    ]
    return make_model(nodes, [("x", [1, 2, 4, 4])], [("y", [1, 3])], init)


def mlp() -> onnx.ModelProto:
    """Dense layers with the reshaping ops: MatMul, Add, Transpose, Concat, Reshape, LeakyRelu, Softmax."""
    rng = np.random.default_rng(2)
    init = {"w": rng.normal(0, 0.5, (6, 5)), "b": rng.normal(0, 0.1, 5)}
    shape = numpy_helper.from_array(np.array([1, 10], np.int64))
    nodes = [
        helper.make_node("Constant", [], ["shape"], value=shape, name="shape"),
        helper.make_node("MatMul", ["x", "w"], ["m"], name="matmul"),
        helper.make_node("Add", ["m", "b"], ["a"], name="bias"),
        helper.make_node("LeakyRelu", ["a"], ["l"], alpha=0.1, name="leaky"),
        helper.make_node("Transpose", ["l"], ["t"], perm=[1, 0], name="transpose"),
        helper.make_node("Transpose", ["t"], ["u"], perm=[1, 0], name="back"),
        helper.make_node("Concat", ["u", "l"], ["c"], axis=1, name="concat"),
        helper.make_node("Reshape", ["c", "shape"], ["r"], name="reshape"),
        helper.make_node("Softmax", ["r"], ["y"], axis=-1, name="softmax"),
    ]
    return make_model(nodes, [("x", [1, 6])], [("y", [1, 10])], init)


# ---- mutations: (rng, model) -> None, in place -------------------------------------------------------
def drop_initializer(rng, model):
    del model.graph.initializer[int(rng.integers(len(model.graph.initializer)))]


BAD_VALUES = [
    lambda rng, a: helper.make_attribute(a.name, int(rng.integers(-2, 3))),  # an int for anything
    lambda rng, a: helper.make_attribute(
        a.name, [int(v) for v in rng.integers(-1, 3, int(rng.integers(0, 6)))], attr_type=AttributeProto.INTS
    ),
    lambda rng, a: helper.make_attribute(a.name, [0] * max(1, len(a.ints))),
    lambda rng, a: helper.make_attribute(a.name, [-1] * max(1, len(a.ints))),
    lambda rng, a: helper.make_attribute(a.name, float(rng.normal())),
    lambda rng, a: helper.make_attribute(a.name, "SAME_SIDEWAYS"),
    lambda rng, a: helper.make_attribute(a.name, 10**6),
]
ADDED = ["pads", "strides", "dilations", "group", "axis", "perm", "kernel_shape", "auto_pad", "alpha", "transB"]


def bad_attribute(rng, model):
    node = model.graph.node[int(rng.integers(len(model.graph.node)))]
    if node.attribute and rng.random() < 0.7:
        index = int(rng.integers(len(node.attribute)))
        old = node.attribute[index]
    else:
        old = helper.make_attribute(str(rng.choice(ADDED)), 1)
        node.attribute.append(old)
        index = len(node.attribute) - 1
    new = BAD_VALUES[int(rng.integers(len(BAD_VALUES)))](rng, old)
    node.attribute[index].CopyFrom(new)


def wrong_dims(rng, model):
    if rng.random() < 0.5:
        dims = model.graph.input[0].type.tensor_type.shape.dim
        dims[int(rng.integers(len(dims)))].dim_value = int(rng.integers(0, 9))
        return
    init = model.graph.initializer[int(rng.integers(len(model.graph.initializer)))]
    array = numpy_helper.to_array(init)
    if array.ndim and rng.random() < 0.5:
        array = array.reshape(-1) if array.ndim > 1 else np.concatenate([array, array[:1]])
    else:
        array = array[..., None] if array.size else np.zeros(3, array.dtype)
    init.CopyFrom(numpy_helper.from_array(array, init.name))


def with_inputs(model) -> list[int]:
    return [i for i, node in enumerate(model.graph.node) if node.input]


def dangling_input(rng, model):
    node = model.graph.node[int(rng.choice(with_inputs(model)))]
    node.input[int(rng.integers(len(node.input)))] = "nowhere"


def cycle(rng, model):
    nodes = model.graph.node
    first = int(rng.choice(with_inputs(model)[:-1]))
    later = int(rng.integers(first + 1, len(nodes)))
    nodes[first].input[0] = nodes[later].output[0]


def unknown_opset(rng, model):
    choice = int(rng.integers(3))
    if choice == 0:
        model.opset_import[0].version = int(rng.choice([1, 5, 99, 1000]))
    elif choice == 1:
        model.graph.node[int(rng.integers(len(model.graph.node)))].domain = "com.example.unknown"
    else:
        model.graph.node[int(rng.integers(len(model.graph.node)))].op_type = "FancyOp"


DTYPES = [TensorProto.STRING, TensorProto.COMPLEX64, TensorProto.INT8, TensorProto.DOUBLE, TensorProto.FLOAT16]


def wrong_dtype(rng, model):
    dtype = int(rng.choice(DTYPES))
    if rng.random() < 0.5:
        model.graph.input[0].type.tensor_type.elem_type = dtype
    else:
        init = model.graph.initializer[int(rng.integers(len(model.graph.initializer)))]
        array = numpy_helper.to_array(init)
        if dtype in (TensorProto.STRING, TensorProto.COMPLEX64):
            init.data_type = dtype  # the payload no longer matches its type
        else:
            init.CopyFrom(numpy_helper.from_array(array.astype(helper.tensor_dtype_to_np_dtype(dtype)), init.name))


MUTATIONS = [drop_initializer, bad_attribute, wrong_dims, dangling_input, cycle, unknown_opset, wrong_dtype]


def mutants(base: onnx.ModelProto, seed: int):
    rng = np.random.default_rng(seed)
    for i in range(MUTANTS):
        model = copy.deepcopy(base)
        mutation = MUTATIONS[i % len(MUTATIONS)]
        mutation(rng, model)
        yield f"{mutation.__name__}-{i}", model


# ---- the reference -----------------------------------------------------------------------------------
def reference(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray | None:
    """onnxruntime's output, or None when it does not take the graph either."""
    try:
        session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        name = session.get_inputs()[0].name
        return session.run(None, {name: x})[0]
    except Exception:
        return None


def input_for(model: onnx.ModelProto) -> np.ndarray | None:
    tensor = model.graph.input[0].type.tensor_type
    if tensor.elem_type != TensorProto.FLOAT:
        return None
    shape = input_shape(model.graph.input[0])
    return np.random.default_rng(0).random(shape).astype(np.float32)


def check(model: onnx.ModelProto, target: str, tmp_path) -> str:
    """'error' or 'result' (checked against onnxruntime); fails on any other exception."""
    try:
        if target == "pim":
            compiled = cimxdsl.compile(model, target="pim", cores=4, out_dir=tmp_path / "pim")
        else:
            compiled = cimxdsl.compile(model, device="ideal", mode="exact")
        x = input_for(model)
        ours = None if x is None else compiled(x)
    except CLEAN as e:
        assert "\n" not in str(e) and str(e), repr(e)
        return "error"
    expected = reference(model, x) if x is not None else None
    if expected is None:
        return "result"  # we take a graph onnxruntime refuses: nothing to compare with
    ours = ours[0] if isinstance(ours, list) else ours
    if target == "pim":  # int8 codes with power-of-two scales: a step of the output's scale
        golden = compiled.program.dequantize(compiled.golden(x))[0]
        np.testing.assert_array_equal(ours, golden)
        tolerance = 2.0 ** (compiled.program.output_exponents[0] + 3) + 0.1 * float(np.abs(expected).max())
        np.testing.assert_allclose(ours.reshape(expected.shape), expected, atol=tolerance)
    else:
        np.testing.assert_allclose(ours.reshape(expected.shape), expected, rtol=1e-4, atol=1e-4)
    return "result"


CASES = [("memristor", small_cnn, 0), ("memristor", mlp, 1), ("pim", pim_cnn, 2)]


@pytest.mark.parametrize("target, base, seed", CASES, ids=[f"{t}-{b.__name__}" for t, b, _ in CASES])
def test_mutants_give_a_clean_error_or_a_correct_result(target, base, seed, tmp_path):
    outcomes = {"error": 0, "result": 0}
    for name, model in mutants(base(), seed):
        try:
            outcomes[check(model, target, tmp_path)] += 1
        except AssertionError as e:
            raise AssertionError(f"mutant {name}: {e}") from None
        except Exception as e:
            raise AssertionError(f"mutant {name}: {type(e).__name__}: {e}") from e
    assert outcomes["error"] >= MUTANTS // 2 and outcomes["result"] >= 1, outcomes


@pytest.mark.parametrize("target", ["memristor", "pim"])
def test_cim_compile_reports_mutants_in_one_line(target, tmp_path, capsys):
    """Every seventh mutant through the command line: one line on stderr and exit 1, or a run."""
    base = pim_cnn() if target == "pim" else small_cnn()
    for name, model in list(mutants(base, 3))[::7]:
        path = tmp_path / "m.onnx"
        onnx.save(model, path)
        args = [str(path), "--target", target, "--device", "ideal", "--cores", "4", "--random-inputs"]
        args += ["-o", str(tmp_path / "o")]
        try:
            cim_compile(args)
        except SystemExit as e:
            err = capsys.readouterr().err
            assert e.code == 1 and err.startswith("cim-compile: error: ") and err.count("\n") == 1, (name, err)
        else:
            capsys.readouterr()


def conv_model(**attributes) -> onnx.ModelProto:
    model = pim_cnn()
    conv = model.graph.node[0]
    del conv.attribute[:]
    for key, value in attributes.items():
        conv.attribute.append(value if isinstance(value, AttributeProto) else helper.make_attribute(key, value))
    return model


@pytest.mark.parametrize(
    "attributes, target, message",
    [
        ({"pads": 1}, "memristor", "Conv node 'conv1': attribute 'pads' must be a list of 4 integers ≥ 0, got 1"),
        ({"strides": [0, 0]}, "pim", "Conv node 'conv1': attribute 'strides' must be a list of 2 integers ≥ 1"),
    ],
)
def test_the_two_reported_tracebacks_are_one_line_errors(attributes, target, message, tmp_path):
    path = tmp_path / "bad.onnx"
    onnx.save(conv_model(**attributes), path)
    process = subprocess.run(
        [sys.executable, "-m", "cimxdsl.tools.cim_compile", str(path), "--target", target, "--random-inputs"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert process.returncode == 1 and "Traceback" not in process.stderr
    assert process.stderr.count("\n") == 1 and process.stderr.startswith(f"cim-compile: error: {message}")
