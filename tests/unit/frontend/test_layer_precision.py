"""Per-layer precision from the API, a precision file and the command line, checked against an
independent NumPy model of per-layer post-training quantization (per-tensor activations,
per-channel symmetric weights, integer products, dequantization), on bit-sliced devices of
1-, 2- and 4-bit cells and 1- and 2-bit DACs."""

from pathlib import Path

import numpy as np
import pytest
from onnx import helper

import cimxdsl
from cimxdsl.api import CompileError
from cimxdsl.device import DeviceConfig
from cimxdsl.tools.cim_compile import main as cim_compile
from tests.unit.frontend.models import make_model

ROOT = Path(__file__).resolve().parents[3]
BATCH, K, H, N = 4, 16, 24, 10


def mlp(seed: int = 0):
    """x → Gemm (layer `fc1`) → ReLU → Gemm (layer `fc2`): signed inputs to the first layer,
    non-negative ones to the second."""
    rng = np.random.default_rng(seed)
    weights = {"w1": rng.normal(0, 0.4, (K, H)), "b1": rng.normal(0, 0.1, H), "w2": rng.normal(0, 0.4, (H, N)), "b2": rng.normal(0, 0.1, N)}
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["fc1"], name="fc1"),
        helper.make_node("Relu", ["fc1"], ["relu"], name="relu"),
        helper.make_node("Gemm", ["relu", "w2", "b2"], ["fc2"], name="fc2"),
    ]
    return make_model(nodes, [("x", [BATCH, K])], [("fc2", [BATCH, N])], weights), weights


def reference(weights: dict, calibration: list[np.ndarray], x: np.ndarray, bits: dict) -> np.ndarray:
    """The quantized MLP in NumPy: each layer's input range from the float model on the calibration
    inputs, `bits[layer]` = (weight bits, input bits)."""

    def layer(v, w, b, seen, w_bits, a_bits):
        low, high = float(min(s.min() for s in seen)), float(max(s.max() for s in seen))
        if low >= 0:
            scale, codes_low, codes_high = high / (2**a_bits - 1), 0, 2**a_bits - 1
        else:
            top = 2 ** (a_bits - 1) - 1
            scale, codes_low, codes_high = max(-low, high) / top, -top, top
        x_codes = np.clip(np.rint(v / np.float32(scale)), codes_low, codes_high).astype(np.int64)
        limit = max(2 ** (w_bits - 1) - 1, 1)
        w_scales = np.abs(w).max(axis=0) / limit
        w_codes = np.clip(np.rint(w / w_scales), -limit, limit).astype(np.int64)
        return (x_codes @ w_codes) * (scale * w_scales) + b

    w1, b1, w2, b2 = (weights[k].astype(np.float32) for k in ("w1", "b1", "w2", "b2"))
    hidden_seen = [np.maximum(c @ w1 + b1, 0) for c in calibration]
    h = np.maximum(layer(x, w1, b1, calibration, *bits["fc1"]), 0)
    return layer(h, w2, b2, hidden_seen, *bits["fc2"])


def sliced_device(cell_bits: int, dac_bits: int) -> DeviceConfig:
    """8-bit weights and inputs by default; an ADC wide enough to be exact, so every product goes
    through the bit-sliced model (cell slices, DAC digits, shift-and-add)."""
    return DeviceConfig(
        name=f"c{cell_bits}d{dac_bits}", rows=32, cols=128, crossbars=16, weight_bits=8, input_bits=8,
        cell_bits=cell_bits, dac_bits=dac_bits, adc_bits=20, adc_range="full",
    )


CALIBRATION = [np.random.default_rng(i).normal(0, 1, (BATCH, K)).astype(np.float32) for i in range(4)]
X = np.random.default_rng(9).normal(0, 1, (BATCH, K)).astype(np.float32)


@pytest.mark.parametrize(("cell_bits", "dac_bits"), [(1, 1), (2, 2), (4, 1)])
def test_mixed_bits_across_layers_match_the_numpy_reference(cell_bits, dac_bits):
    model, weights = mlp()
    bits = {"fc1": (3, 5), "fc2": (6, 2)}
    compiled = cimxdsl.compile(model, device=sliced_device(cell_bits, dac_bits), calibration=CALIBRATION, precision=bits)
    got = compiled(X)
    want = reference(weights, CALIBRATION, X, bits)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    layers = {layer["layer"]: layer for layer in compiled.report()["layers"]}
    for name, (w_bits, a_bits) in bits.items():
        assert (layers[name]["weight_bits"], layers[name]["input_bits"]) == (w_bits, a_bits)
        k, n = (K, H) if name == "fc1" else (H, N)
        assert layers[name]["cells_written"] == k * n * -(-w_bits // cell_bits) * 2  # a differential pair
        assert layers[name]["input_slices"] == BATCH * -(-a_bits // dac_bits)


def test_layers_no_rule_names_run_at_the_device_bits_and_globs_apply_in_order(tmp_path):
    model, weights = mlp()
    file = tmp_path / "bits.toml"
    file.write_text('["*"]\nweight_bits = 5\ninput_bits = 6\n\n[fc2]\ninput_bits = 3\n')
    compiled = cimxdsl.compile(model, device=sliced_device(2, 1), calibration=CALIBRATION, precision=file)
    want = reference(weights, CALIBRATION, X, {"fc1": (5, 6), "fc2": (5, 3)})
    np.testing.assert_allclose(compiled(X), want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    only = cimxdsl.compile(model, device=sliced_device(2, 1), calibration=CALIBRATION, precision={"fc1": (4, 4)})
    want = reference(weights, CALIBRATION, X, {"fc1": (4, 4), "fc2": (8, 8)})
    np.testing.assert_allclose(only(X), want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    assert "w4a4" in only.mlir("func") and "w8a8" not in only.mlir("func")


@pytest.mark.parametrize(
    ("precision", "message"),
    [
        ({"fc1": (9, 4)}, "precision: layer 'fc1': weight_bits must be an integer from 1 to 8, got 9"),
        ({"fc1": {"input_bits": 0}}, "precision: layer 'fc1': input_bits must be an integer from 1 to 8, got 0"),
        ({"conv*": (4, 4)}, "precision: 'conv*' matches no layer (layers: fc1, fc2)"),
        ({"fc1": {"bits": 4}}, "precision: layer 'fc1': unknown setting 'bits' (settings: weight_bits, input_bits)"),
        ({"fc1": (4, 1)}, "layer 'fc1': 1-bit inputs must be non-negative (or ternary, on bipolar DACs), but its inputs reach"),
    ],
)
def test_bad_precisions_are_one_line_errors_naming_the_layer(precision, message):
    model, _ = mlp()
    with pytest.raises(CompileError) as error:
        cimxdsl.compile(model, device=sliced_device(2, 1), calibration=CALIBRATION, precision=precision)
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


def test_a_precision_needs_int8_mode():
    with pytest.raises(CompileError, match="a per-layer precision needs mode 'int8'"):
        cimxdsl.compile(mlp()[0], device="ideal", mode="exact", precision={"fc1": (4, 4)})


def test_the_command_line_takes_a_precision_file(tmp_path, capsys):
    digits = ROOT / "examples" / "digits_cnn.onnx"
    image = tmp_path / "x.npy"
    np.save(image, np.load(ROOT / "examples" / "digits_test.npz")["inputs"][:1])
    good = tmp_path / "good.toml"
    good.write_text('["conv*"]\nweight_bits = 4\ninput_bits = 4\n')
    cim_compile([str(digits), "--device", "cinnamon", "--input", str(image), "--precision", str(good)])
    table = capsys.readouterr().out.split("layer  placement  weight_bits  input_bits")[1].splitlines()
    rows = {line.split()[0]: line.split()[1:3] for line in table[1:]}
    assert rows == {"conv1": ["4", "4"], "conv2": ["4", "4"], "fc": ["4", "4"]}  # fc: cinnamon's 4 bits
    for text, message in [
        ("[conv9]\nweight_bits = 4\n", f"{tmp_path / 'bad.toml'}: 'conv9' matches no layer (layers: conv1, conv2, fc)"),
        ("[fc]\nweight_bits = 12\n", f"{tmp_path / 'bad.toml'}: layer 'fc': weight_bits must be an integer from 1 to 8, got 12"),
    ]:
        (tmp_path / "bad.toml").write_text(text)
        with pytest.raises(SystemExit):
            cim_compile([str(digits), "--input", str(image), "--precision", str(tmp_path / "bad.toml")])
        err = capsys.readouterr().err
        assert err == f"cim-compile: error: {message}\n"


def pim_reference(weights: dict, calibration: list[np.ndarray], x: np.ndarray, bits: dict) -> np.ndarray:
    """The MLP as the PIM target's integer program computes it (power-of-two scales, int8 codes),
    with each layer's weights at its own bits and its input shifted (rounding) to its input bits
    (unsigned after the ReLU, signed for the network input, which the host quantizes so)."""

    def exponent(peak, limit=127):
        return int(np.ceil(np.log2(peak / limit)))

    w1, b1, w2, b2 = (weights[k].astype(np.float32).astype(np.float64) for k in ("w1", "b1", "w2", "b2"))
    hidden = [c.astype(np.float64) @ w1 + b1 for c in calibration]
    logits = [np.maximum(h, 0) @ w2 + b2 for h in hidden]
    peak = lambda values: max(float(np.abs(v).max()) for v in values)  # noqa: E731

    def layer(codes, e_x, w, b, w_bits, out_peak):
        limit = max(2 ** (w_bits - 1) - 1, 1)
        e_w = exponent(float(np.abs(w).max()), limit)
        w_codes = np.clip(np.rint(w / 2.0**e_w), -limit, limit).astype(np.int64)
        e_acc = e_x + e_w
        e_out = max(exponent(out_peak), e_acc)
        shift = e_out - e_acc
        acc = codes @ w_codes + np.rint(b / 2.0**e_acc).astype(np.int64) + (2 ** (shift - 1) if shift else 0)
        return np.clip(acc >> shift, -128, 127), e_out

    (w_a, a_a), (w_b, a_b) = bits["fc1"], bits["fc2"]
    e_x = exponent(peak(calibration)) + (8 - a_a)  # the host quantizes x to a_a signed bits
    top = 2 ** (a_a - 1) - 1
    x_codes = np.clip(np.rint(x.astype(np.float64) / 2.0**e_x), -top, top).astype(np.int64)
    h, e_h = layer(x_codes, e_x, w1, b1, w_a, peak(hidden))
    h = np.maximum(h, 0)
    shift = 7 - a_b  # non-negative after the ReLU: unsigned a_b-bit codes
    h = np.clip((h + 2 ** (shift - 1)) >> shift, 0, 2**a_b - 1)
    y, e_y = layer(h, e_h + shift, w2, b2, w_b, peak(logits))
    return y * 2.0**e_y


def test_the_pim_target_takes_per_layer_bits_and_times_them():
    from cimxdsl.api import compile_pim
    from cimxdsl.backend.artifacts import read_artifacts
    from cimxdsl.dialects import pim

    model, weights = mlp()
    samples = [c[i : i + 1] for c in CALIBRATION for i in range(BATCH)]  # images, as the target streams them
    bits = {"fc1": (3, 5), "fc2": (6, 4)}
    compiled = compile_pim(model, calibration=samples, precision=bits)
    np.testing.assert_array_equal(compiled(X), pim_reference(weights, samples, X, bits))
    mbiw = {group.origin.split(":")[0]: group.precision for core in read_artifacts(compiled.directory).cores for group in core.groups}
    assert mbiw == bits
    streams = [core.instructions for core in read_artifacts(compiled.directory).cores]
    mvmul = pim.MvmulOp.OPCODE
    assert sorted({int(v) for s in streams for v in s.column("mbiw")[s.opcodes == mvmul]}) == [3, 6]

    wide = compile_pim(model, calibration=samples, precision={"*": (8, 8)}).report()["performance"]
    narrow = compile_pim(model, calibration=samples, precision={"*": (4, 4)}).report()["performance"]
    # pimcomp: 2-bit cells, 1-bit DACs: 4 weight slices and 8 input passes per mvmul against 2 and 4
    assert narrow["energy_pj"]["crossbar"] == pytest.approx(wide["energy_pj"]["crossbar"] / 4)
    assert narrow["latency_ns"] < wide["latency_ns"]


def qdq_matmul(codes: np.ndarray, element: int, opset: int):
    """x → QuantizeLinear/DequantizeLinear (int8) → MatMul with weights DequantizeLinear(codes)."""
    from onnx import TensorProto, numpy_helper

    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
        helper.make_node("DequantizeLinear", ["wq", "ws"], ["wd"]),
        helper.make_node("MatMul", ["xd", "wd"], ["y"], name="mm"),
    ]
    graph = helper.make_graph(
        nodes, "qdq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, K])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [BATCH, N])],
        [
            numpy_helper.from_array(np.array(0.05, np.float32), "xs"),
            numpy_helper.from_array(np.array(0, np.int8), "xz"),
            helper.make_tensor("wq", element, codes.shape, codes.flatten().tolist()),
            numpy_helper.from_array(np.array(0.1, np.float32), "ws"),
        ],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


@pytest.mark.parametrize(("element", "opset"), [("INT4", 21), ("INT8", 17)])
def test_a_qdq_model_whose_weight_codes_take_4_bits_runs_them_at_4_bits(element, opset):
    """4-bit weight codes (an INT4 type, or int8 codes within ±7) make the layer's weights 4-bit;
    the model's own scales stay, so the result is onnxruntime's."""
    import onnxruntime
    from onnx import TensorProto

    codes = np.random.default_rng(3).integers(-7, 8, (K, N))
    model = qdq_matmul(codes, getattr(TensorProto, element), opset)
    compiled = cimxdsl.compile(model, device=sliced_device(2, 1), calibration=CALIBRATION)
    session = onnxruntime.InferenceSession(model.SerializeToString())
    (want,) = session.run(None, {"x": X})
    np.testing.assert_allclose(compiled(X), want, rtol=1e-5, atol=1e-6)
    (layer,) = compiled.report()["layers"]
    assert (layer["weight_bits"], layer["input_bits"]) == (4, 8)
    assert layer["cells_written"] == K * N * 2 * 2  # 4-bit weights in two 2-bit cells, differential


def two_runtime_products():
    """s = a·b, then s·c: two products of run-time tensors (batch × heads × tokens × width, as
    attention's), named as torch names two MatMuls of one module (`attn/MatMul`, `attn/MatMul_1`)."""
    nodes = [
        helper.make_node("MatMul", ["a", "b"], ["s"], name="attn/MatMul"),
        helper.make_node("MatMul", ["s", "c"], ["y"], name="attn/MatMul_1"),
    ]
    shapes = [("a", [1, 2, 4, 8]), ("b", [1, 2, 8, 4]), ("c", [1, 2, 4, 8])]
    return make_model(nodes, shapes, [("y", [1, 2, 4, 8])], {})


def runtime_operands(rng: np.random.Generator) -> tuple[list[list[np.ndarray]], list[np.ndarray]]:
    """Three calibration samples and the inputs of `two_runtime_products`."""
    shapes = ((1, 2, 4, 8), (1, 2, 8, 4), (1, 2, 4, 8))
    calibration = [[rng.normal(0, 1, s).astype(np.float32) for s in shapes] for _ in range(3)]
    return calibration, [rng.normal(0, 1, x.shape).astype(np.float32) for x in calibration[0]]


def runtime_reference(calibration, inputs, bits):
    """The two run-time products in NumPy: per-tensor signed codes of both operands (the left at
    the layer's input bits, the right at its weight bits), an integer product, dequantized."""

    def product(left, right, left_seen, right_seen, w_bits, a_bits):
        l_scale = max(np.abs(v).max() for v in left_seen) / (2 ** (a_bits - 1) - 1)
        r_scale = max(np.abs(v).max() for v in right_seen) / (2 ** (w_bits - 1) - 1)
        top_l, top_r = 2 ** (a_bits - 1) - 1, 2 ** (w_bits - 1) - 1
        l_codes = np.clip(np.rint(left / np.float32(l_scale)), -top_l, top_l).astype(np.int64)
        r_codes = np.clip(np.rint(right / np.float32(r_scale)), -top_r, top_r).astype(np.int64)
        return (l_codes @ r_codes) * (l_scale * r_scale)

    s_seen = [a @ b for a, b, _ in calibration]
    a, b, c = inputs
    s = product(a, b, [x[0] for x in calibration], [x[1] for x in calibration], *bits["attn_MatMul"])
    return product(s, c, s_seen, [x[2] for x in calibration], *bits["attn_MatMul.1"])


def test_runtime_products_on_the_host_take_and_report_their_own_bits():
    """Placed on the host, each product of two run-time tensors still quantizes its operands at its
    own bits, and its layer row reports those bits (not the device's)."""
    calibration, inputs = runtime_operands(np.random.default_rng(4))
    bits = {"attn_MatMul": (8, 8), "attn_MatMul.1": (3, 5)}
    compiled = cimxdsl.compile(
        two_runtime_products(), device=sliced_device(2, 2).replace(weight_bits=6, input_bits=6),
        calibration=calibration, placement="host", precision=bits,
    )  # fmt: skip
    want = runtime_reference(calibration, inputs, bits)
    np.testing.assert_allclose(compiled(*inputs), want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    layers = {layer["layer"]: layer for layer in compiled.report()["layers"]}
    for name, layer_bits in bits.items():
        assert layers[name]["placement"] == "host"
        assert (layers[name]["weight_bits"], layers[name]["input_bits"]) == layer_bits


def test_runtime_products_on_crossbars_take_their_own_bits():
    """`MatMul` and `MatMul_1` are two layers (an SSA name drops a `_1` suffix: the second is
    `attn_MatMul.1`), and each product of two run-time tensors placed on crossbars runs at its own
    bits: fewer DAC passes for fewer input bits, fewer cell slices for fewer weight bits."""
    calibration, inputs = runtime_operands(np.random.default_rng(3))
    bits = {"attn_MatMul": (8, 8), "attn_MatMul.1": (3, 5)}
    compiled = cimxdsl.compile(
        two_runtime_products(), device=sliced_device(2, 2), calibration=calibration, placement="crossbar",
        precision={"attn_MatMul.1": bits["attn_MatMul.1"]},
    )  # fmt: skip
    want = runtime_reference(calibration, inputs, bits)
    np.testing.assert_allclose(compiled(*inputs), want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    layers = {layer["layer"]: layer for layer in compiled.report()["layers"]}
    assert set(layers) == set(bits)
    for name, (w_bits, a_bits) in bits.items():
        layer = layers[name]
        assert layer["placement"] == "crossbar"
        assert (layer["weight_bits"], layer["input_bits"]) == (w_bits, a_bits)
        k, n = (8, 4) if name == "attn_MatMul" else (4, 8)
        assert layer["cells_written"] == 2 * k * n * -(-w_bits // 2) * 2  # two heads, a differential pair
        assert layer["input_slices"] == 2 * 4 * -(-a_bits // 2)
