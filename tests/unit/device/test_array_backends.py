"""The crossbar kernels on another array library: under `array_api_strict` (the standard's reference
implementation, which rejects anything beyond the standard) every integer-valued product, a small
compiled CNN's outputs and its metrics are bitwise those of NumPy; noise is drawn from the same
seeded stream on the host; programmed tiles stay resident; and a backend or device that cannot be
used is one line naming it. PyTorch on the CPU runs the same checks where it is installed."""

import dataclasses
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import cimxdsl
from benchmarks.model_zoo import MODELS
from cimxdsl.api import CompileError
from cimxdsl.data import DIGITS_MODEL, DIGITS_TEST
from cimxdsl.device import Device, preset
from cimxdsl.device import backend as backends
from cimxdsl.device.backend import ArrayBackend, ArrayBackendError, array_backend
from cimxdsl.device.crossbar import exact_matmul, observed_spans, program_tile, sliced_product, stack_tiles
from cimxdsl.device.device import calibrate_tile

pytest.importorskip("array_api_strict")

BASE = preset("cinnamon").replace(weight_bits=8, input_bits=8, adc_bits=8)
KERNEL_CONFIGS = {
    "full ADC": BASE,
    "lossless ADC": BASE.replace(adc_bits=0),
    "full_pow2 ADC": BASE.replace(adc_range="full_pow2"),
    "calibrated ADC": BASE.replace(adc_range="calibrated"),
    "4-bit ADC": BASE.replace(adc_bits=4),
    "analog subtraction": BASE.replace(subtraction="analog"),
    "offset weights": BASE.replace(encoding="offset"),
    "two's complement inputs": BASE.replace(input_encoding="twos_complement"),
    "sign-magnitude inputs": BASE.replace(input_encoding="sign_magnitude"),
    "bipolar inputs": BASE.replace(input_encoding="bipolar"),
    "3-bit DACs, 1-bit cells": BASE.replace(dac_bits=3, cell_bits=1),
}
BACKENDS = ["array_api_strict"]


def other_backends() -> list[str]:
    """The strict namespace, and PyTorch on the CPU where it is installed."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return BACKENDS
    return [*BACKENDS, "torch"]


def tiled(w: np.ndarray, config, backend=backends.NUMPY, spans=None):
    """The stacked product of `w` cut into the device's tiles."""
    kt, nt = config.tile_shape
    grid = [
        [program_tile(w[a : a + kt, b : b + nt], config) for b in range(0, w.shape[1], nt)]
        for a in range(0, w.shape[0], kt)
    ]
    return stack_tiles(grid, spans, config, backend)


@pytest.mark.parametrize("backend", other_backends())
@pytest.mark.parametrize("name", KERNEL_CONFIGS)
def test_sliced_kernels_match_numpy_bitwise(name, backend):
    """Several K-blocks and column blocks (partial last ones), signed and unsigned rows."""
    config = KERNEL_CONFIGS[name]
    rng = np.random.default_rng(len(name))
    w = rng.integers(-127, 128, (300, 70))
    x = rng.integers(-128, 128, (40, 300)).astype(np.int8)
    x[::3] = np.abs(x[::3].astype(np.int16)).clip(0, 127)  # some rows without a negative entry
    expected = sliced_product(x, tiled(w, config), config)
    got = sliced_product(x, tiled(w, config, array_backend(backend)), config)
    assert isinstance(got, np.ndarray) and got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)
    if config.adc_bits == 0:
        np.testing.assert_array_equal(got, x.astype(np.int64) @ w)  # (a lossless ADC is exact)


@pytest.mark.parametrize("backend", other_backends())
def test_sums_beyond_32_bits_come_back_exact(backend):
    """A product's result moves to the host in 32 bits only where every value fits them."""
    config = BASE.replace(weight_bits=16, input_bits=16, adc_bits=0)
    rng = np.random.default_rng(7)
    w, x = rng.integers(-32767, 32768, (300, 20)), rng.integers(-32768, 32768, (6, 300))
    x[0], w[:, 0] = 32767, 32767  # (a sum of 300 × 2**30)
    for rows in (x, x // 1024):  # beyond 2**31, and within it
        exact = rows.astype(np.int64) @ w
        np.testing.assert_array_equal(sliced_product(rows, tiled(w, config, array_backend(backend)), config), exact)
    assert np.abs(x.astype(np.int64) @ w).max() >= 2**31


@pytest.mark.parametrize("backend", other_backends())
def test_static_adc_spans_match_numpy_bitwise(backend):
    config = BASE.replace(adc_range="static_column", adc_bits=6)
    rng = np.random.default_rng(5)
    w, x = rng.integers(-127, 128, (128, 32)), rng.integers(-128, 128, (20, 128))
    spans = [[observed_spans(program_tile(w, config), x[:8], config)]]
    expected = sliced_product(x, tiled(w, config, spans=spans), config)
    np.testing.assert_array_equal(sliced_product(x, tiled(w, config, array_backend(backend), spans), config), expected)


@pytest.mark.parametrize("backend", other_backends())
def test_exact_products_match_numpy(backend):
    rng = np.random.default_rng(6)
    x, w = rng.integers(-128, 128, (9, 200)), rng.integers(-127, 128, (200, 30))
    chosen = array_backend(backend)
    np.testing.assert_array_equal(exact_matmul(x, w, backend=chosen), x @ w)
    xf, wf = rng.standard_normal((9, 200)).astype(np.float32), rng.standard_normal((200, 30)).astype(np.float32)
    got = exact_matmul(xf, wf, backend=chosen)
    assert got.dtype == np.float32
    # float32 sums in another order: within 2·γ_K·(|x|·|w|) (Higham 2002, §3.1)
    u, k = np.finfo(np.float32).eps / 2, xf.shape[1]
    np.testing.assert_array_less(np.abs(got - xf @ wf), 2 * k * u / (1 - k * u) * (np.abs(xf) @ np.abs(wf)) + 1e-30)


def test_noise_is_drawn_from_the_same_stream_as_on_numpy():
    """Programming, read and output noise: the strict namespace computes in float64 as NumPy does,
    so the same draws give the same values bitwise."""
    config = BASE.replace(prog_noise=0.05, read_noise=0.02, output_noise=0.01, input_noise=0.01, seed=3)
    rng = np.random.default_rng(7)
    w, x = rng.integers(-127, 128, (128, 32)), rng.integers(-128, 128, (6, 128))
    results = []
    for backend in ("numpy", "array_api_strict"):
        device = Device(config, backend=backend)
        device.write(0, w)
        results.append([device.mvm(0, x), device.mvm(0, x)])  # (two reads: two draws)
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    assert not np.array_equal(results[0][0], results[0][1])  # the noise is there


@pytest.fixture(scope="module")
def digits():
    return np.load(DIGITS_TEST)["inputs"][:4].astype(np.float32)


CNN_CONFIGS = {
    "8-bit ADC": (BASE, "int8"),
    "lossless": (BASE.replace(adc_bits=0), "int8"),
    "calibrated 5-bit ADC": (BASE.replace(adc_range="calibrated", adc_bits=5), "int8"),
    "ideal int8": (preset("ideal"), "int8"),
    "ideal exact": (preset("ideal"), "exact"),
}


@pytest.mark.parametrize("backend", other_backends())
@pytest.mark.parametrize("name", CNN_CONFIGS)
def test_compiled_cnn_outputs_and_metrics_match_numpy(digits, name, backend):
    config, mode = CNN_CONFIGS[name]
    if mode == "exact" and backend != "array_api_strict":
        pytest.skip("float products: another BLAS sums in another order (the integer paths are the check)")
    reference = cimxdsl.compile(DIGITS_MODEL, device=config, mode=mode, calibration=digits, batch=len(digits))
    other = cimxdsl.compile(
        DIGITS_MODEL, device=config, mode=mode, calibration=digits, batch=len(digits), backend=backend
    )
    expected, got = reference(digits), other(digits)
    assert other.resident.backend.name == backend
    if mode == "exact":  # the same NumPy BLAS under the strict namespace, in other row chunks
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())
    else:
        np.testing.assert_array_equal(got, expected)
    assert other.report()["total"] == reference.report()["total"]


ZOO = {
    "ResNet-18 (pads, max pooling, residual adds, global average pooling)": ("resnet18", 4),
    "MobileNetV2 (depthwise layers, clamps, layers of one tile)": ("mobilenetv2", 2),
}
"""Each model and its stem width (MobileNetV2's depthwise layers make a product per channel)."""


@pytest.mark.parametrize("backend", other_backends())
@pytest.mark.parametrize("name", ZOO)
def test_values_stay_on_the_backend_from_layer_to_layer(name, backend, monkeypatch):
    """The values a layer's product makes stay on the backend through the host's operations between
    layers (layouts, pads, poolings, residual adds, clamps, requantization) up to the next product:
    a steady call brings back only the global pooling's input (its float sum runs on the host), the
    outputs, bitwise those of NumPy, and the least and largest of each product's inputs (their check)."""
    model_name, width = ZOO[name]
    model = MODELS[model_name](size=32, width=width, classes=10)
    x = np.random.default_rng(4).normal(size=(2, 3, 32, 32)).astype(np.float32)
    other = cimxdsl.compile(model, device=BASE, calibration=x[:1], batch=2, backend=backend)
    # the same compiled stages on NumPy (the backend plays no part in compiling), prepared and run apart
    reference = dataclasses.replace(
        other, backend="numpy", array_device=None, stages=dict(other.stages), programs={}, resident=None
    )
    expected = reference(x)
    other(x)  # (programs the tiles)
    assert reference.resident.backend.name == "numpy" and other.resident.backend.name == backend
    back, original = [], ArrayBackend.to_numpy
    monkeypatch.setattr(ArrayBackend, "to_numpy", lambda self, a: (back.append(tuple(a.shape)), original(self, a))[1])
    np.testing.assert_array_equal(other(x), expected)
    values = [shape for shape in back if shape != (2,)]
    assert values == [(2, values[0][1], 1, 1), expected.shape] and len(back) > len(values)


def test_programmed_tiles_stay_resident_across_inferences(digits, monkeypatch):
    """After the first call, later calls (and other batches of the same program) move no weights."""
    model = cimxdsl.compile(
        DIGITS_MODEL, device=BASE, calibration=digits, batch=len(digits), backend="array_api_strict"
    )
    moved = []
    original = ArrayBackend.reserve
    monkeypatch.setattr(ArrayBackend, "reserve", lambda self, nbytes: (moved.append(nbytes), original(self, nbytes)))
    first = model(digits)
    assert moved, "the first call moves the programmed tiles"
    moved.clear()
    np.testing.assert_array_equal(model(digits), first)
    np.testing.assert_array_equal(model(digits[::-1]), first[::-1])
    assert moved == []


# ---- bad input: one line naming the backend or the device ---------------------------------------------
@pytest.fixture
def fresh_backends():
    backends._backend.cache_clear()
    backends._BY_DEVICE.clear()
    yield
    backends._backend.cache_clear()
    backends._BY_DEVICE.clear()


def test_unknown_backend_and_device_strings(fresh_backends):
    with pytest.raises(ArrayBackendError, match=r"unknown backend 'jax' \(backends: numpy, torch, cupy"):
        array_backend("jax")
    with pytest.raises(ArrayBackendError, match="unknown array device 'tpu:0'"):
        array_backend("torch", "tpu:0")
    with pytest.raises(ArrayBackendError, match="backend 'numpy' runs on the host only"):
        array_backend("numpy", "cuda:0")


def fake_module(monkeypatch, name: str, module) -> None:
    """`import name` gives `module` (None: the import fails)."""
    monkeypatch.setitem(sys.modules, name, module)


def test_cupy_without_cupy(fresh_backends, monkeypatch):
    fake_module(monkeypatch, "cupy", None)
    with pytest.raises(ArrayBackendError) as error:
        array_backend("cupy", "cuda:0")
    assert str(error.value) == "array backend: backend 'cupy' needs cupy installed (pip install 'cimxdsl[gpu]')"


def fake_cupy(count: int):
    def device_count():
        if count == 0:
            raise RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")
        return count

    runtime = types.SimpleNamespace(getDeviceCount=device_count)
    return types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime, Device=lambda i: i))


def fake_torch(count: int):
    cuda = types.SimpleNamespace(is_available=lambda: count > 0, device_count=lambda: count)
    return types.SimpleNamespace(cuda=cuda, device=lambda *args: args)


def test_cupy_or_torch_without_a_gpu(fresh_backends, monkeypatch):
    fake_module(monkeypatch, "cupy", fake_cupy(0))
    fake_module(monkeypatch, "torch", fake_torch(0))
    with pytest.raises(ArrayBackendError, match=r"^array backend: backend 'cupy' found no CUDA GPU for device 'cuda'$"):
        array_backend("cupy")
    with pytest.raises(ArrayBackendError, match=r"backend 'torch' found no CUDA GPU for device 'cuda:0'$"):
        array_backend("torch", "cuda:0")
    with pytest.raises(ArrayBackendError, match="backend 'cupy' runs on a GPU only"):
        array_backend("cupy", "cpu")


def test_a_gpu_index_that_does_not_exist(fresh_backends, monkeypatch):
    fake_module(monkeypatch, "cupy", fake_cupy(2))
    fake_module(monkeypatch, "torch", fake_torch(1))
    message = r"device 'cuda:2' does not exist: backend 'cupy' found 2 CUDA GPUs \(cuda:0\.\.cuda:1\)$"
    with pytest.raises(ArrayBackendError, match=message):
        array_backend("cupy", "cuda:2")
    with pytest.raises(ArrayBackendError, match=r"device 'cuda:1' does not exist: backend 'torch' found 1 CUDA GPU \("):
        array_backend("torch", "cuda:1")


def test_a_device_too_small_for_the_resident_weights(monkeypatch):
    monkeypatch.setattr(ArrayBackend, "free_bytes", lambda self: 1000)
    rng = np.random.default_rng(8)
    device = Device(BASE, backend="array_api_strict")
    device.write(0, rng.integers(-127, 128, (128, 32)))
    needed = 128 * 32 * 2 * BASE.cells_per_weight * 4  # float32 levels of both arrays' cell slices
    message = rf"^crossbar 0: array backend: device cpu \(array_api_strict\) is too small for the model's resident weights: {needed} bytes needed \({needed} more\), 1000 bytes free$"
    with pytest.raises(ValueError, match=message):
        device.mvm(0, rng.integers(-128, 128, (2, 128)))


def test_faces_report_backend_errors_in_one_line(fresh_backends, monkeypatch, capsys, digits):
    from cimxdsl.tools import cim_compile, cim_run

    fake_module(monkeypatch, "cupy", None)
    with pytest.raises(CompileError, match=r"^array backend: backend 'cupy' needs cupy installed"):
        cimxdsl.compile(DIGITS_MODEL, device=BASE, calibration=digits, backend="cupy")
    product = Path(__file__).resolve().parents[2] / "filecheck" / "tools" / "inputs" / "product.mlir"
    for main, args in ((cim_compile.main, [str(DIGITS_MODEL)]), (cim_run.main, [str(product)])):
        with pytest.raises(SystemExit):
            main([*args, "--backend", "cupy", "--random-inputs"])
        err = capsys.readouterr().err.strip()
        assert err.endswith("backend 'cupy' needs cupy installed (pip install 'cimxdsl[gpu]')") and "\n" not in err


def test_calibration_spans_do_not_depend_on_the_backend():
    """(Calibration records exact spans on the host: `calibrate_tile` takes no backend.)"""
    rng = np.random.default_rng(9)
    w, x = rng.integers(-127, 128, (64, 16)), rng.integers(-128, 128, (5, 64))
    config = BASE.replace(adc_range="static_slice")
    spans = calibrate_tile(config, w, x)
    devices = [Device(config, adc_spans=spans, backend=b) for b in ("numpy", "array_api_strict")]
    for device in devices:
        device.write(0, w)
    np.testing.assert_array_equal(devices[0].mvm(0, x), devices[1].mvm(0, x))


# ---- sweeps -------------------------------------------------------------------------------------------
SWEEP = {
    "model": "digits",
    "data": "digits",
    "limit": 16,
    "device": {"preset": "cinnamon", "weight_bits": 8, "input_bits": 8},
    "axes": {"adc_bits": [0, 5], "prog_noise": [0.0, 0.1]},
}


def test_a_sweep_on_another_backend_gives_numpy_rows(monkeypatch):
    from cimxdsl.explore import execution, explore

    used = []
    original = execution.run_chunks
    monkeypatch.setattr(execution, "run_chunks", lambda *args: (used.append(args[-1]), original(*args))[1])
    columns = ("point", "seed_index", "accuracy", "agreement", "latency_ns", "energy_pj")
    rows = [
        [{c: r[c] for c in columns} for r in explore(sweep).rows]
        for sweep in (SWEEP, {**SWEEP, "backend": "array_api_strict"})
    ]
    assert rows[0] == rows[1]
    assert {b.name for b in used} == {"numpy", "array_api_strict"}


def test_sweep_points_take_the_array_devices_in_turn(fresh_backends, monkeypatch):
    from cimxdsl.explore import load_sweep
    from cimxdsl.explore.context import Context
    from cimxdsl.explore.sweep import SweepError

    fake_module(monkeypatch, "torch", fake_torch(2))
    monkeypatch.setattr(backends, "_compat", lambda name: None)
    sweep = load_sweep({**SWEEP, "backend": "torch", "array_device": ["cuda:0", "cuda:1"]})
    context = types.SimpleNamespace(backend=sweep.backend, array_device=sweep.array_device)
    assert [Context.array_backend(context, i).device for i in range(5)] == ["cuda:0", "cuda:1"] * 2 + ["cuda:0"]
    with pytest.raises(SweepError, match=r"^sweep file: 'array_device' must be a device \('cpu', 'cuda:0'\) or a list"):
        load_sweep({**SWEEP, "array_device": [0, 1]})
    with pytest.raises(SweepError, match=r"^sweep file: 'backend' must be one of numpy, torch, cupy"):
        load_sweep({**SWEEP, "backend": "jax"})


def test_a_sweep_on_a_backend_that_cannot_run_stops_before_any_work(fresh_backends, monkeypatch):
    from cimxdsl.explore import explore
    from cimxdsl.explore.sweep import SweepError

    fake_module(monkeypatch, "cupy", fake_cupy(1))
    monkeypatch.setattr(backends, "_compat", lambda name: None)
    with pytest.raises(SweepError, match=r"^sweep file: 'array_device': array backend: device 'cuda:3' does not exist"):
        explore({**SWEEP, "backend": "cupy", "array_device": ["cuda:0", "cuda:3"]})


def test_a_device_on_another_backend_shares_its_programmed_tiles():
    rng = np.random.default_rng(10)
    w, x = rng.integers(-127, 128, (128, 32)), rng.integers(-128, 128, (4, 128))
    device = Device(BASE)
    device.write(0, w)
    expected = device.mvm(0, x)
    other = device.on_backend("array_api_strict")
    assert other.tile(0) is device.tile(0) and other.backend.name == "array_api_strict"
    assert other.report(per_crossbar=False)["total"]["writes"] == 0  # its metrics start from zero
    np.testing.assert_array_equal(other.mvm(0, x), expected)
    assert device.report(per_crossbar=False)["total"]["mvms"] == 1  # the first device's are its own
