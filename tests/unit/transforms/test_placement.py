"""Where products of two run-time tensors (attention's Q·Kᵀ and P·V) run: `host` (the digital
unit), `crossbar` (the run-time operand written before each product) or `auto`, on BERT- and
GPT-2-style blocks (`models.transformer_block`) against onnxruntime."""

import json
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import cimxdsl
from cimxdsl.api import CompileError, apply_passes
from cimxdsl.device import Device, preset
from cimxdsl.device.placement import cheaper_placement, crossbar_cost, host_cost
from cimxdsl.dialects import cinm
from cimxdsl.frontend.onnx_importer import import_onnx
from cimxdsl.interpreters import run
from cimxdsl.parsing import make_context, parse_module_text
from cimxdsl.transforms.common.linalg_to_cinm import LinalgToCinmPass
from tests.unit.frontend.models import transformer_block
from tests.unit.frontend.test_transformers import reference, token_ids

SEQ, HIDDEN, HEADS = 8, 16, 2
HEAD = HIDDEN // HEADS
BLOCKS = [False, True]
IDS = ["bert", "gpt2"]


def placements(compiled) -> list[str]:
    return [cinm.placement(op) for op in compiled.module("cinm").walk() if cinm.placement(op)]


@pytest.mark.parametrize("placement", ["host", "crossbar", "auto"])
@pytest.mark.parametrize("causal", BLOCKS, ids=IDS)
def test_exact_mode_equals_onnxruntime_under_every_placement(causal, placement):
    model = transformer_block(causal)
    compiled = cimxdsl.compile(model, device="ideal", mode="exact", placement=placement)
    for seed in (1, 2):
        ids = token_ids(np.random.default_rng(seed))
        expected = reference(model, ids)
        np.testing.assert_allclose(compiled(ids), expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())
    # on `ideal` (no energy) the crossbar is never strictly cheaper: auto keeps the host
    assert placements(compiled) == ["crossbar" if placement == "crossbar" else "host"] * 2


@pytest.mark.parametrize("causal", BLOCKS, ids=IDS)
def test_crossbar_writes_per_inference_are_the_sizes_of_k_and_v_per_head(causal):
    """After a first inference the linear layers' weights are resident: a second one writes only
    Kᵀ (HEAD × SEQ) and V (SEQ × HEAD) of every head; on the host it writes nothing and the digital
    unit does 2 · HEADS · SEQ · HEAD · SEQ MACs."""
    model = transformer_block(causal)
    rng = np.random.default_rng(4)
    config = preset("ideal")
    cells = config.cells_per_weight * config.arrays_per_crossbar
    expected_cells = HEADS * (HEAD * SEQ + SEQ * HEAD) * cells
    counts = {}
    for placement in ("host", "crossbar"):
        compiled = cimxdsl.compile(model, device=config, mode="exact", placement=placement)
        compiled(token_ids(rng))
        compiled(token_ids(rng))
        counts[placement] = compiled.last_run.device.report()["total"]
        products = compiled.report()["runtime_products"]
        assert [p["layer"] for p in products["products"]] == ["qk", "pv"]
        assert {p["placement"] for p in products["products"]} == {placement}
        assert products["writes"] == (2 * HEADS if placement == "crossbar" else 0)
        assert products["cells_written"] == (expected_cells if placement == "crossbar" else 0)
    assert counts["crossbar"]["writes"] == 2 * HEADS
    assert counts["crossbar"]["cells_written"] == expected_cells
    assert counts["crossbar"]["digital_macs"] == 0
    assert counts["host"]["writes"] == counts["host"]["cells_written"] == 0
    assert counts["host"]["digital_macs"] == 2 * HEADS * SEQ * HEAD * SEQ
    assert counts["host"]["energy_pj"]["digital"] == 0  # ideal: no costs


def test_auto_follows_the_write_cost_of_the_device():
    """Two exact devices that differ only in the energy of a cell write: free writes make the
    crossbar cheaper (energy-delay product 0), costly ones the digital unit."""
    cheap = preset("ideal").replace(name="cheap-writes", digital_pj_per_mac=1.0)
    costly = cheap.replace(name="costly-writes", write_pj_per_cell=1000.0)
    model = transformer_block(False)
    ids = token_ids(np.random.default_rng(5))
    expected = reference(model, ids)
    chosen = {}
    for config in (cheap, costly):
        compiled = cimxdsl.compile(model, device=config, mode="exact", placement="auto")
        np.testing.assert_allclose(compiled(ids), expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())
        chosen[config.name] = placements(compiled)
    assert chosen == {"cheap-writes": ["crossbar"] * 2, "costly-writes": ["host"] * 2}


def test_the_cost_model_counts_what_the_device_counts():
    """The crossbar estimate of 3 heads of an M×K by K×N product is the energy and the latency the
    device model reports for writing their tiles on separate crossbars and reading M rows; the
    host's is 3·M·K·N MACs at the device's figures, one after another."""
    config = preset("cinnamon").replace(digital_macs_per_ns=4.0)
    heads, m, k, n = 3, 5, 200, 70  # per head: two row tiles (128 + 72) × two column tiles (64 + 6)
    device = Device(config)
    rows, cols = config.tile_shape
    crossbar = 0
    for _ in range(heads):
        for k0 in range(0, k, rows):
            for n0 in range(0, n, cols):
                weights = np.ones((min(rows, k - k0), min(cols, n - n0)), np.int64)
                device.write(crossbar, weights)
                device.mvm(crossbar, np.ones((m, weights.shape[0]), np.int64))
                crossbar += 1
    assert crossbar == 12 <= config.crossbars
    estimate = crossbar_cost(config, m, k, n, heads)
    assert estimate.energy_pj == pytest.approx(device.report()["total"]["energy_pj"]["total"])
    assert estimate.latency_ns == pytest.approx(device.latency_ns)
    host = host_cost(config, m, k, n, heads)
    assert host.latency_ns == heads * m * k * n / 4.0
    assert host.energy_pj == pytest.approx(heads * m * k * n * (0.2 + 0.03))  # Horowitz, ISSCC 2014: 8-bit mult + add
    assert cheaper_placement(config, m, k, n, heads) == "host"
    assert cheaper_placement(config.replace(digital_pj_per_mac=1e6), m, k, n, heads) == "crossbar"


def test_tiles_beyond_the_crossbars_take_rounds_of_write_and_read():
    """7 one-tile products on 3 crossbars take ceil(7 / 3) = 3 rounds, each a full tile's write
    (K rows at `write_ns_per_row`) then its read (the pipeline fill, then one cycle per input
    slice of each of the M rows): the latency from the device parameters, and the device model's
    for the tiles written and read in turn on crossbars 0, 1, 2, 0, …"""
    config = preset("cinnamon").replace(crossbars=3, crossbars_per_core=3)
    heads, m, k, n = 7, 5, 100, 20
    write = k * config.write_ns_per_row
    read = (config.pipeline_fill_cycles + config.input_slices * m - 1) * config.cycle_ns
    estimate = crossbar_cost(config, m, k, n, heads)
    assert estimate.latency_ns == pytest.approx(3 * (write + read), rel=1e-12)
    device = Device(config)
    for head in range(heads):
        device.write(head % 3, np.ones((k, n), np.int64))
        device.mvm(head % 3, np.ones((m, k), np.int64))
    assert estimate.latency_ns == pytest.approx(device.latency_ns, rel=1e-12)
    assert estimate.energy_pj == pytest.approx(device.report()["total"]["energy_pj"]["total"], rel=1e-12)


@pytest.mark.parametrize("placement", ["host", "crossbar"])
def test_linalg_to_cinm_keeps_the_program_s_results(placement):
    """The imported block before and after the pass, in the interpreter, on the same ids."""
    module = import_onnx(transformer_block(True))
    ids = token_ids(np.random.default_rng(6)).astype(np.float32)
    before = run(module, [ids], "ideal").outputs[0]
    LinalgToCinmPass(placement=placement).apply(make_context(), module)
    module.verify()
    after = run(module, [ids], "ideal")
    np.testing.assert_array_equal(after.outputs[0], before)
    assert [layer.get("placement") for layer in after.layers] == (["host", "host"] if placement == "host" else [])


def test_int8_on_crossbars_stays_close_to_onnxruntime():
    """int8 mode quantizes both run-time operands; on `ideal` the crossbar product of the codes is
    exact, so the error is the quantization's (below 5 %, as on the host)."""
    model = transformer_block(False)
    rng = np.random.default_rng(7)
    compiled = cimxdsl.compile(
        model, device="ideal", calibration=[[token_ids(rng)] for _ in range(16)], placement="crossbar"
    )
    ids = token_ids(rng)
    expected = reference(model, ids)
    assert np.linalg.norm(compiled(ids) - expected) / np.linalg.norm(expected) < 0.05
    assert compiled.report()["runtime_products"]["crossbar"] == 2


def test_an_unknown_placement_is_a_one_line_error():
    with pytest.raises(CompileError, match="unknown placement 'gpu' \\(placements: host, crossbar, auto\\)"):
        cimxdsl.compile(transformer_block(False), device="ideal", mode="exact", placement="gpu")


def cim_compile(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cimxdsl.tools.cim_compile", *args], capture_output=True, text=True, check=False
    )


def test_cim_compile_reports_where_each_product_ran(tmp_path):
    path = tmp_path / "gpt2.onnx"
    onnx.save(transformer_block(True), path)
    ids = tmp_path / "ids.npy"
    np.save(ids, token_ids(np.random.default_rng(8)))
    report = tmp_path / "report.json"
    result = cim_compile(
        str(path), "--device", "ideal", "--mode", "exact", "--placement", "crossbar", "--input", f"ids={ids}",
        "--report-json", str(report),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    rows = {line.split()[0]: line.split() for line in lines if line.split()[:1] in (["qk"], ["pv"])}
    assert rows["qk"][1] == rows["pv"][1] == "crossbar"
    assert rows["qk"][2:4] == rows["pv"][2:4] == ["float", "float"]  # weight and input bits (exact mode)
    assert rows["qk"][4] == rows["pv"][4] == str(HEADS)  # writes
    cells = HEADS * HEAD * SEQ * 2  # differential pair of ideal 1-cell weights
    assert (
        f"2 on crossbars; crossbar writes they caused per inference: {2 * HEADS} ({2 * cells} cells)" in result.stdout
    )
    products = json.loads(report.read_text())["runtime_products"]
    assert [(p["layer"], p["placement"], p["cells_written"]) for p in products["products"]] == [
        ("qk", "crossbar", cells),
        ("pv", "crossbar", cells),
    ]


def layer_norm_model() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8])
    scale = helper.make_tensor("g", TensorProto.FLOAT, [8], np.ones(8, np.float32))
    node = helper.make_node("LayerNormalization", ["x", "g"], ["y"], axis=-1, name="ln_f")
    graph = helper.make_graph([node], "ln", [x], [y], [scale])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (
            lambda: transformer_block(False),
            "--target pim does not support MatMul of two run-time tensors (attention) yet (node 'qk')",
        ),
        (layer_norm_model, "--target pim does not support LayerNormalization yet (node 'ln_f')"),
    ],
    ids=["attention", "layernorm"],
)
def test_the_pim_target_names_attention_and_layer_norm_in_one_line(tmp_path, model, message):
    path = tmp_path / "model.onnx"
    onnx.save(model(), path)
    result = cim_compile(str(path), "--target", "pim", "--random-inputs")
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [f"cim-compile: error: {message}; use --target memristor"]


BIASED = """
func.func @main(%a: tensor<3x2x4xf32>, %b: tensor<3x4x5xf32>, %c: tensor<3x2x5xf32>) -> tensor<3x2x5xf32> {
  %s = linalg.batch_matmul ins(%a, %b : tensor<3x2x4xf32>, tensor<3x4x5xf32>) outs(%c : tensor<3x2x5xf32>) -> tensor<3x2x5xf32>
  return %s : tensor<3x2x5xf32>
}
"""


@pytest.mark.parametrize("placement", ["host", "crossbar"])
def test_a_batch_matmul_onto_a_non_zero_init_adds_it_per_entry(placement):
    """`outs` that is not zero is each gemm's `plus`; the lowered program on a device computes
    a·b + c per batch entry (NumPy's reference)."""
    rng = np.random.default_rng(9)
    a, b, c = (rng.standard_normal(shape).astype(np.float32) for shape in ((3, 2, 4), (3, 4, 5), (3, 2, 5)))
    module = parse_module_text(BIASED, "<biased>")
    apply_passes(module, f"memristor{{device=ideal placement={placement}}}")
    result = run(module, [a, b, c], "ideal")
    np.testing.assert_allclose(result.outputs[0], a @ b + c, rtol=1e-6, atol=1e-6)
    assert result.device.report()["total"]["writes"] == (3 if placement == "crossbar" else 0)
    assert result.device.report()["total"]["digital_macs"] == (0 if placement == "crossbar" else 3 * 2 * 4 * 5)


@pytest.mark.parametrize("mode", ["int8", "exact"])
def test_cinm_to_linalg_keeps_the_host_s_products_layers_and_metrics(mode):
    """`cinm-to-linalg` lowers the host's computes to `linalg.matmul`s: the `func` stage holds no
    cinm compute or product (in exact mode no cinm op at all; int8 mode keeps the host's
    `cinm.op.quantize`/`dequantize`), and it runs as the `schedule` stage (before the lowering) does, on the same device:
    the same layer rows (digital MACs, latency, energy), totals and outputs (bitwise in int8 mode,
    where the crossbars compute on integers; in exact mode within float32 rounding, as the
    crossbar layers run through the runtime's calls in one stage and `cim` ops in the other)."""
    model = transformer_block(True)
    # exact mode needs an exact device: `ideal` with a digital unit that costs time and energy
    config = (
        preset("isaac") if mode == "int8" else preset("ideal").replace(digital_pj_per_mac=0.25, digital_macs_per_ns=4.0)
    )
    compiled = cimxdsl.compile(model, device=config, mode=mode, placement="host")
    ir = compiled.mlir("func")
    assert "cinm.compute" not in ir and "cinm.op.gemm" not in ir and ("cinm." not in ir or mode == "int8")
    assert ir.count('cimxdsl.placement = "host"') == 2 * HEADS
    ids = token_ids(np.random.default_rng(7))
    before = compiled.run(ids, stage="schedule", device=Device(config))
    after = compiled.run(ids, stage="func", device=Device(config))
    # the runtime's calls record no layers (the report's crossbar rows come from `schedule`): the
    # host's rows are those the lowered program records
    host = [layer for layer in before.layers if layer.get("placement") == "host"]
    assert [layer["layer"] for layer in host] == ["qk", "pv"]
    assert all(layer["digital_macs"] == HEADS * SEQ * HEAD * SEQ for layer in host)
    assert all(layer["energy_pj"]["digital"] > 0 and layer["latency_ns"] > 0 for layer in host)
    assert after.layers == host
    assert after.device.report() == before.device.report()
    if mode == "int8":
        np.testing.assert_array_equal(after.outputs[0], before.outputs[0])
    else:
        scale = np.abs(before.outputs[0]).max()
        np.testing.assert_allclose(after.outputs[0], before.outputs[0], rtol=1e-5, atol=1e-6 * scale)
