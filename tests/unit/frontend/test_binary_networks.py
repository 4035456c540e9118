"""Binary and ternary networks as exported (`examples/digits_{bnn,tnn}.onnx`: Sign activations,
weights Sign or Where(|W| > Δ, Sign(W), 0) of float weights, batch normalisation): imported,
recognised as 1-bit layers and run on binary cells, against onnxruntime and a NumPy model."""

from pathlib import Path

import numpy as np
import onnx
import onnx.shape_inference
import onnx.utils
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import cimxdsl
from cimxdsl.device import DeviceConfig, preset
from cimxdsl.models import CompileError

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
BNN, TNN = EXAMPLES / "digits_bnn.onnx", EXAMPLES / "digits_tnn.onnx"
IMAGES = 6


def binary_device(encoding: str, **changes) -> DeviceConfig:
    """1-bit cells with a finite on/off ratio, bipolar DACs and a lossless ADC."""
    return preset("isaac").replace(
        name=f"binary-{encoding}", weight_bits=1, input_bits=2, cell_bits=1, input_encoding="bipolar",
        encoding=encoding, on_off_ratio=20.0, adc_bits=0, **changes,
    )  # fmt: skip


@pytest.fixture(scope="module")
def images() -> np.ndarray:
    with np.load(EXAMPLES / "digits_test.npz") as data:
        return data["inputs"][:IMAGES]


def truncated(path: Path, output: str) -> onnx.ModelProto:
    """The model up to the tensor `output`."""
    model = onnx.shape_inference.infer_shapes(onnx.load(path))
    return onnx.utils.Extractor(model).extract_model(["x"], [output])


def onnxruntime_outputs(model: onnx.ModelProto | Path, images: np.ndarray) -> np.ndarray:
    source = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    session = onnxruntime.InferenceSession(source, providers=["CPUExecutionProvider"])
    return np.concatenate([session.run(None, {"x": image[None]})[0] for image in images])


def cim_outputs(model, images: np.ndarray, device) -> tuple[np.ndarray, dict]:
    compiled = cimxdsl.compile(model, device=device, calibration=EXAMPLES / "digits_train.npz")
    outputs = np.concatenate([compiled(image[None]) for image in images])
    return outputs, compiled.report()


def numpy_hidden(path: Path, images: np.ndarray, layer: int) -> np.ndarray:
    """The integer pre-activations of layer `layer` (1-based), from the float weights: an
    independent NumPy model of the exported network (sign, ±1/0 weights, batch norm, sign/round)."""
    weights = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in onnx.load(path).graph.initializer}
    ternary = "w1_delta" in weights
    h = np.sign(images.reshape(len(images), -1).astype(np.float64) - 0.4)
    for i in range(1, layer + 1):
        w = weights[f"w{i}_float"]
        if ternary:
            w = np.where(np.abs(w) > weights[f"w{i}_delta"], np.sign(w), 0.0)
        else:
            w = np.sign(w)
        product = h.astype(np.int64) @ w.astype(np.int64)
        if i == layer:
            return product
        g, b, m, v = (weights[f"bn{i}_{p}"] for p in ("gamma", "beta", "mean", "var"))
        normed = (product - m) / np.sqrt(v + 1e-5) * g + b
        h = np.round(np.clip(normed, -1, 1)) if ternary else np.sign(normed)
    raise AssertionError("unreachable")


@pytest.mark.parametrize(
    ("path", "device"),
    [
        (BNN, "isaac"),  # offset encoding: 1-bit ternary weights held in 2 bits
        (BNN, binary_device("differential")),
        (BNN, binary_device("reference")),
        (TNN, binary_device("differential", subtraction="analog")),
    ],
    ids=["bnn-isaac", "bnn-pair", "bnn-reference", "tnn-pair-analog"],
)
def test_binary_layers_are_exact_integers_on_binary_cells(path, device, images):
    # The second layer's product (±1/0 inputs times ±1/0 weights) is an integer: bitwise equal to
    # onnxruntime's and to the NumPy model's.
    got, report = cim_outputs(truncated(path, "fc2"), images, device)
    np.testing.assert_array_equal(got, onnxruntime_outputs(truncated(path, "fc2"), images))
    np.testing.assert_array_equal(got, numpy_hidden(path, images, 2))
    # ternary inputs: a sign and one bit of magnitude, one pass of bipolar 1-bit DACs; elsewhere
    # 2-bit signed codes, two passes of ISAAC's 1-bit DACs (per crossbar read)
    bipolar = not isinstance(device, str) and device.input_encoding == "bipolar"
    assert [(r["weight_bits"], r["input_bits"]) for r in report["layers"]] == [(1, 1 if bipolar else 2)] * 2
    assert [r["input_slices"] / r["mvms"] for r in report["layers"]] == [1 if bipolar else 2] * 2
    # the smallest ADC that converts any full read exactly: signed sums of ±128 (binary devices),
    # or unsigned sums up to 128 x 3 (ISAAC's 2-bit cells): 9 bits either way
    assert report["precision"]["lossless_adc_bits"] == 9


@pytest.mark.parametrize("path", [BNN, TNN], ids=["bnn", "tnn"])
def test_logits_match_onnxruntime(path, images):
    # Integer products are exact; the batch norm runs in float32 on the host, as onnxruntime's:
    # a few float32 roundings of values below 100.
    got, _ = cim_outputs(path, images, binary_device("differential"))
    expected = onnxruntime_outputs(path, images)
    np.testing.assert_allclose(got, expected, rtol=0, atol=16 * np.finfo(np.float32).eps * np.abs(expected).max())
    assert (got.argmax(1) == expected.argmax(1)).all()


def test_a_ternary_weight_on_the_reference_mapping_names_the_layer():
    with pytest.raises(CompileError) as error:
        cimxdsl.compile(TNN, device=binary_device("reference"), calibration=EXAMPLES / "digits_train.npz")
    assert str(error.value) == (
        "layer 'fc1': weight 0 is not binary, but device 'binary-reference' maps weights with "
        "'encoding'='reference' (-1 and +1 only)"
    )


def batch_norm_model(params, nodes, shape, inits=(), **attributes) -> onnx.ModelProto:
    """x → BatchNormalization (`params`: γ, β, μ, σ²; node "bn", output "n") → `nodes` → y."""
    inits = [*(numpy_helper.from_array(v, n) for v, n in zip(params, "gbmv", strict=True)), *inits]
    norm = helper.make_node("BatchNormalization", ["x", "g", "b", "m", "v"], ["n"], name="bn", **attributes)
    graph = helper.make_graph(
        [norm, *nodes],
        "batch_norm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_sign_and_round_import_like_onnxruntime():
    values = np.array([[-2.5, -1.5, -0.5, -0.0, 0.0, 0.3, 0.5, 1.5, 2.5, 3.7]], np.float32)
    nodes = [
        helper.make_node("Sign", ["x"], ["s"]),
        helper.make_node("Round", ["x"], ["r"]),
        helper.make_node("Add", ["s", "r"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "sign_round",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = cimxdsl.compile(model, device="ideal", mode="exact")(values)
    np.testing.assert_array_equal(got, session.run(None, {"x": values})[0])


def test_sign_of_batch_norm_folds_into_per_channel_thresholds():
    # γ of either sign: sign(γ (x - μ) / √(σ² + ε) + β) flips for γ < 0; the thresholds
    # τ = μ - β √(σ² + ε) / γ are 3, 0.75, 0.4 and 5 here. Inputs on both sides of each, and on
    # some (sign 0).
    gamma = np.array([2.0, -0.5, 1.0, 4.0], np.float32)
    beta = np.array([-1.0, 0.5, -0.2, -3.0], np.float32)
    mean = np.array([2.0, -0.25, 0.0, 2.0], np.float32)
    var = np.array([4.0 - 1e-5, 1.0 - 1e-5, 4.0 - 1e-5, 16.0 - 1e-5], np.float32)
    model = batch_norm_model((gamma, beta, mean, var), [helper.make_node("Sign", ["n"], ["y"], name="sign")], [8, 4])
    x = np.array([[k, -k, k / 4, 2 * k] for k in (-3, -2, -1, 0, 1, 2, 3, 4)], np.float32)
    x[:, 2] = [-1, 0, 0.25, 0.375, 0.5, 1, 2, 3]
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, {"x": x})[0]
    assert {-1.0, 1.0} <= set(np.unique(expected).tolist())  # (0 where x is a threshold)
    got = cimxdsl.compile(model, device="ideal", mode="exact")(x)
    np.testing.assert_array_equal(got, expected)

    from cimxdsl.frontend.folding import fold_sign_thresholds

    constants = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    fold_sign_thresholds(model.graph, constants)
    np.testing.assert_allclose(
        -constants["bn_threshold_bias"] * constants["bn_threshold_scale"], [3.0, 0.75, 0.4, 5.0], rtol=1e-6
    )
    np.testing.assert_array_equal(constants["bn_threshold_scale"], [1, -1, 1, 1])


def test_a_ternary_round_of_batch_norm_folds_into_two_thresholds_per_channel():
    # Round(Clip(g (x - τ), -1, 1)), g = γ / √(σ² + ε): thresholds τ ± 1/(2|g|), here 3 ± 0.5,
    # 0.75 ∓ 1 (γ < 0) and 0.5 ± 1; inputs on both sides of each and on them (Round(±0.5) = 0),
    # every value a short binary fraction, so that float32 rounds nothing.
    gamma = np.array([2.0, -0.5, 1.0], np.float32)
    beta = np.array([-1.0, 0.5, -0.25], np.float32)
    mean = np.array([2.0, -0.25, 0.0], np.float32)
    var = np.array([4.0, 1.0, 4.0], np.float32)
    nodes = [
        helper.make_node("Clip", ["n", "lo", "hi"], ["c"], name="clip"),
        helper.make_node("Round", ["c"], ["y"], name="round"),
    ]
    bounds = [numpy_helper.from_array(np.array(v, np.float32), n) for v, n in ((-1.0, "lo"), (1.0, "hi"))]
    model = batch_norm_model((gamma, beta, mean, var), nodes, [9, 3], bounds, epsilon=0.0)
    x = np.array(
        [[2.0, -1.0, -1.0], [2.5, -0.25, -0.5], [2.75, 0.0, 0.0], [3.0, 0.75, 0.5], [3.25, 1.0, 1.0],
         [3.5, 1.75, 1.5], [3.75, 2.0, 1.75], [4.0, -0.5, -2.0], [1.0, 3.0, 3.0]],
        np.float32,
    )  # fmt: skip
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, {"x": x})[0]
    assert set(np.unique(expected).tolist()) == {-1.0, 0.0, 1.0}
    got = cimxdsl.compile(model, device="ideal", mode="exact")(x)
    np.testing.assert_array_equal(got, expected)

    from cimxdsl.frontend.folding import fold_sign_thresholds

    constants = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    fold_sign_thresholds(model.graph, constants)
    assert [n.op_type for n in model.graph.node] == ["BatchNormalization", "BatchNormalization", "Sign", "Sign",
                                                     "Add", "Mul", "Round"]  # fmt: skip
    scale = constants["bn_threshold_scale"]
    np.testing.assert_array_equal(scale, [1, -1, 1])
    upper, lower = -constants["bn_threshold_bias"] * scale, -constants["bn_threshold_low_bias"] * scale
    np.testing.assert_allclose(np.sort([upper, lower], axis=0), [[2.5, -0.25, -0.5], [3.5, 1.75, 1.5]], rtol=1e-6)
