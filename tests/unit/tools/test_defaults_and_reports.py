"""One default device on every face; every report names the device, mode and bits it ran with;
a large error names the device limit that dominates it; the float reference is named; output files
carry the model's names."""

import inspect
import json
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

import cimxdsl
from cimxdsl.api import compile_pim
from cimxdsl.device import DEFAULT_DEVICE, crossbar_matmul, preset
from cimxdsl.tools.cim_compile import main as cim_compile
from cimxdsl.tools.cim_run import main as cim_run
from cimxdsl.transforms.common.linalg_to_cinm import LinalgToCinmPass
from cimxdsl.transforms.memristor.pipeline import MemristorPipelinePass
from cimxdsl.transforms.memristor.schedule import ScheduleListPass
from cimxdsl.transforms.pim.cinm_to_spatial import CinmToSpatialPass

ROOT = Path(__file__).resolve().parents[3]
DIGITS = ROOT / "examples" / "digits_cnn.onnx"
PRODUCT = ROOT / "tests" / "filecheck" / "tools" / "inputs" / "product.mlir"


def run_cli(tool, args: list, capsys) -> str:
    tool([str(a) for a in args])
    return capsys.readouterr().out


def first_image(tmp_path: Path) -> Path:
    path = tmp_path / "x.npy"
    np.save(path, np.load(ROOT / "examples" / "digits_test.npz")["inputs"][:1])
    return path


def test_the_api_and_the_passes_default_to_one_device():
    for function in (cimxdsl.compile, compile_pim):
        assert inspect.signature(function).parameters["device"].default == DEFAULT_DEVICE
    for pass_class in (MemristorPipelinePass, ScheduleListPass, LinalgToCinmPass, CinmToSpatialPass):
        assert pass_class().device == DEFAULT_DEVICE


def test_the_tools_run_on_the_default_device_and_say_so(tmp_path, capsys):
    out = run_cli(cim_run, [PRODUCT, "--random-inputs", "--report"], capsys)
    assert f"device: {DEFAULT_DEVICE}\n" in out
    out = run_cli(cim_compile, [DIGITS, "--input", first_image(tmp_path)], capsys)
    assert f"device: {DEFAULT_DEVICE}  mode: int8" in out


def test_the_default_device_computes_int8_products_exactly():
    """The reason it is the default: its ADC resolves every column sum, so the bit-sliced product of
    int8 operands (the extremes included) is the exact one."""
    config = preset(DEFAULT_DEVICE)
    rng = np.random.default_rng(0)
    rows, cols = config.tile_shape
    w = rng.integers(-128, 128, (rows, cols))
    w[:, 0], w[:, 1] = 127, -128
    x = rng.integers(-128, 128, (4, rows))
    x[0], x[1] = 127, -128
    assert not config.exact  # a lossy ADC in general: exact only because the sums fit it
    np.testing.assert_array_equal(crossbar_matmul(x, w, config, fast_path=False), x @ w)


def test_reports_say_which_device_mode_and_bits_they_ran_with(tmp_path, capsys):
    out = run_cli(cim_run, [PRODUCT, "--random-inputs", "--device", "cinnamon", "--report"], capsys)
    assert (
        "precision: device cinnamon: 4-bit weights in 2-bit cells, 4-bit inputs through 2-bit DACs, lossless ADC, "
        "noise none" in out
    )
    device = tmp_path / "noisy_adc.toml"
    device.write_text('preset = "prime"\nread_noise = 0.01\n')
    report_json = tmp_path / "report.json"
    out = run_cli(
        cim_compile, [DIGITS, "--input", first_image(tmp_path), "--device", device, "--report-json", report_json], capsys
    )
    assert "device: noisy_adc  mode: int8" in out  # a TOML device is named after its file, not its preset
    assert (
        "precision: mode int8 (weights quantized to 8 bits, inputs to 6); device noisy_adc: 8-bit weights in "
        "4-bit cells, 6-bit inputs through 3-bit DACs, 6-bit ADC (static_slice range), noise read_noise=0.01" in out
    )
    precision = json.loads(report_json.read_text())["precision"]
    assert precision["mode"] == "int8" and precision["quantized_bits"] == {"weights": 8, "inputs": 6}
    assert (precision["adc_bits"], precision["adc_range"], precision["noise"]) == (6, "static_slice", {"read_noise": 0.01})
    compiled = cimxdsl.compile(DIGITS, device="cinnamon")
    compiled(np.zeros((1, 1, 8, 8), np.float32))
    assert compiled.report()["precision"]["quantized_bits"] == {"weights": 4, "inputs": 4}


@pytest.mark.parametrize(
    "device, dominant",
    [
        ('preset = "isaac"\nadc_bits = 6\nread_noise = 0.001\n', "the ADC (6 bits, full range)"),
        ('preset = "isaac"\nprog_noise = 0.05\n', "noise (prog_noise=0.05)"),
        # the wires are a limit of their own, apart from the noise (which the no-noise run lifts alone)
        ('preset = "isaac"\nwire_resistance = 3e-5\nread_noise = 0.001\n', "IR drop (wire_resistance=3e-05)"),
        ('preset = "cinnamon"\n', "weight and input bits (4 and 4)"),
    ],
)
def test_a_large_error_names_the_limit_that_dominates_it(tmp_path, capsys, device, dominant):
    """Each device has one limit that clearly dominates: lifting it alone removes most of the error."""
    path = tmp_path / "device.toml"
    path.write_text(device)
    report_json = tmp_path / "report.json"
    args = [DIGITS, "--device", path, "--calibrate", ROOT / "examples" / "digits_train.npz", "--compare"]
    out = run_cli(cim_compile, [*args, "--input", first_image(tmp_path), "--report-json", report_json], capsys)
    assert f"; dominant: {dominant}\n" in out
    limits = json.loads(report_json.read_text())["limits"]
    assert limits["dominant"] == dominant and limits["error"] > 0.05
    lifted = min(limits["lifted"].values())
    assert lifted < limits["error"] / 2  # the limit's lifting removes most of the error
    if dominant.startswith("IR drop"):  # the no-noise run keeps the wires
        assert limits["lifted"]["no noise"] > limits["error"] / 2


def test_a_small_error_needs_no_explanation(tmp_path, capsys):
    report_json = tmp_path / "report.json"
    out = run_cli(cim_compile, [DIGITS, "--input", first_image(tmp_path), "--compare", "--report-json", report_json], capsys)
    assert "error sources" not in out and "limits" not in json.loads(report_json.read_text())


def test_the_float_reference_is_named_and_needed(tmp_path, capsys, monkeypatch):
    data = np.load(ROOT / "examples" / "digits_test.npz")
    subset = tmp_path / "subset.npz"
    np.savez(subset, inputs=data["inputs"][:8], labels=data["labels"][:8])
    import onnxruntime

    out = run_cli(cim_compile, [DIGITS, "--dataset", subset], capsys)
    assert f"float (onnxruntime {onnxruntime.__version__}) " in out
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if it were not installed
    with pytest.raises(SystemExit):
        cim_compile([str(DIGITS), "--dataset", str(subset)])
    err = capsys.readouterr().err
    assert err.startswith("cim-compile: error: the float reference needs onnxruntime") and err.count("\n") == 1
    assert err.rstrip().endswith("pip install onnxruntime")


def test_output_files_carry_the_model_names_and_the_inputs(tmp_path, capsys):
    x = first_image(tmp_path)
    run_cli(cim_compile, [DIGITS, "--input", x, "-o", tmp_path / "out"], capsys)
    output_name = onnx.load(DIGITS).graph.output[0].name
    compiled = cimxdsl.compile(DIGITS)
    with np.load(tmp_path / "out" / "outputs.npz") as outputs, np.load(tmp_path / "out" / "inputs.npz") as inputs:
        assert outputs.files == [output_name] and inputs.files == ["x"]
        np.testing.assert_array_equal(inputs["x"], np.load(x))
        np.testing.assert_allclose(outputs[output_name], compiled(np.load(x)), rtol=1e-6)


def test_output_dir_without_inputs_compiles_only(tmp_path, capsys):
    out = run_cli(cim_compile, [DIGITS, "-o", tmp_path / "out"], capsys)
    assert "no inputs given: compiled only" in out and "latency" not in out
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert written == sorted([*(f"{stage}.mlir" for stage in cimxdsl.api.STAGES), "model.cimx"])
    assert cimxdsl.load(tmp_path / "out" / "model.cimx").mlir("tile") == (tmp_path / "out" / "tile.mlir").read_text()


def test_plots_draw_every_layer_from_the_report(tmp_path, capsys):
    from cimxdsl.tools.layer_plots import layer_figures

    compiled = cimxdsl.compile(DIGITS, device="cinnamon")
    compiled(np.load(first_image(tmp_path)))
    report = compiled.report()
    layers = report["layers"]
    names = [layer["layer"] for layer in layers]
    figures = layer_figures(report)
    (latency,) = figures["latency"].axes
    assert [t.get_text() for t in latency.get_xticklabels()] == names
    assert [bar.get_height() for bar in latency.patches] == [layer["latency_ns"] for layer in layers]
    (energy,) = figures["energy"].axes
    stacked = np.zeros(len(layers))
    for bar in energy.patches:
        stacked[round(bar.get_x() + bar.get_width() / 2)] += bar.get_height()
    np.testing.assert_allclose(stacked, [layer["energy_pj"]["total"] for layer in layers], rtol=1e-9)
    writes, cells = figures["writes"].axes
    assert [bar.get_height() for bar in writes.patches] == [layer["writes"] for layer in layers]
    assert [bar.get_height() for bar in cells.patches] == [layer["cells_written"] for layer in layers]

    out = run_cli(cim_compile, [DIGITS, "--input", first_image(tmp_path), "--plot", tmp_path / "plots"], capsys)
    for stem in ("latency", "energy", "writes"):
        path = tmp_path / "plots" / f"{stem}.png"
        assert f"plot: {path}" in out and path.read_bytes().startswith(b"\x89PNG")


def test_plots_without_matplotlib_are_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(SystemExit):
        cim_compile([str(DIGITS), "--input", str(first_image(tmp_path)), "--plot", str(tmp_path / "plots")])
    assert capsys.readouterr().err == "cim-compile: error: --plot needs matplotlib: pip install matplotlib\n"
