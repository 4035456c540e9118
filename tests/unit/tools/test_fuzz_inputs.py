"""Bad inputs in every face: a clear one-line error, never a traceback or a silent reshape.

Seeded mutants of a model's input arrays (other dimension orders, flattened, dimensions dropped,
added or off by one, the wrong batch, empty, scalar; non-numeric and complex values; floats for
integer token ids) go through `cim-compile`, `cim-run`, `cim-validate` (in process, `main(args)`),
the Python API (`CompiledModel`, `PimModel`) and calibration data (`calibration=`, `--calibrate`).
Every one must be refused with one line that names the input, the shape it takes and the shape it
got. `.npz` files with a missing or an extra array, devices that differ from the one the IR was
lowered for, and batches of images on both targets are checked against onnxruntime.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import cimxdsl
from cimxdsl.api import CompileError
from cimxdsl.data_io import InputError
from cimxdsl.device import load_device_config
from cimxdsl.parsing import make_context, parse_module_text
from cimxdsl.reference import onnxruntime_outputs
from cimxdsl.tools.cim_compile import main as cim_compile
from cimxdsl.tools.cim_opt import main as cim_opt
from cimxdsl.tools.cim_run import main as cim_run
from cimxdsl.tools.cim_validate import main as cim_validate
from cimxdsl.transforms.common.device_record import recorded_device
from cimxdsl.transforms.memristor.tile import TilePass
from tests.unit.frontend.models import small_cnn
from tests.unit.frontend.test_fuzz_onnx import pim_cnn

MLP = Path(__file__).resolve().parents[3] / "examples" / "mlp.mlir"
SEED = 23
SHAPE = (1, 3, 8, 8)
"""`small_cnn`'s input."""


def shape_mutants(shape: tuple[int, ...], rng: np.random.Generator, batch_ok: bool = False) -> list[np.ndarray]:
    """Arrays of every wrong shape kind for an input of `shape` (values drawn from `rng`)."""
    i = int(rng.integers(1, len(shape)))
    off = list(shape)
    off[i] += int(rng.choice([-1, 1]))
    shapes = [
        (shape[0], *shape[2:], shape[1]),  # channels last
        (int(np.prod(shape)),),  # flat
        shape[1:],  # no batch
        (1, *shape),  # one axis more
        tuple(off),  # one dimension off by one
        (*shape[:-1], shape[-1] * 2),  # a dimension doubled
        (0, *shape[1:]),  # no example
        (),  # a scalar
    ]
    if not batch_ok:
        shapes.append((shape[0] + int(rng.integers(1, 4)), *shape[1:]))  # another batch
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def dtype_mutants(shape: tuple[int, ...]) -> list[np.ndarray]:
    return [np.full(shape, "a"), np.zeros(shape, np.complex64)]


def one_line(text: str) -> str:
    assert text.count("\n") == 1 and "Traceback" not in text, text
    return text


def names_shapes(message: str, name: str, expected: str, given: np.ndarray) -> None:
    """The message names the input, the shape it takes and the shape it got."""
    assert f"'{name}'" in message and expected in message and str(list(given.shape)) in message, message


def refused(tool, args: list[str], capsys, prefix: str) -> str:
    """The one line a tool refused `args` with (exit status 1)."""
    try:
        code = tool(args)
    except SystemExit as e:
        code = e.code
    assert code == 1, f"accepted: {args}"
    return one_line(capsys.readouterr().err).removeprefix(prefix)


def token_model() -> onnx.ModelProto:
    """Token ids [1, 4] (int64) looked up in a table, then a product."""
    rng = np.random.default_rng(SEED)
    graph = helper.make_graph(
        [helper.make_node("Gather", ["wte", "ids"], ["e"]), helper.make_node("MatMul", ["e", "w"], ["y"])],
        "tokens",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 3])],
        [
            numpy_helper.from_array(rng.normal(size=(10, 6)).astype(np.float32), "wte"),
            numpy_helper.from_array(rng.normal(size=(6, 3)).astype(np.float32), "w"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def open_batch(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with a symbolic batch `N` on its input and output."""
    model = copy.deepcopy(model)
    for info in (model.graph.input[0], model.graph.output[0]):
        info.type.tensor_type.shape.dim[0].dim_param = "N"
    return model


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """The small CNN (fixed and open batch), its IR as imported and lowered for `ideal` and for
    `isaac`, and the PIM artifacts of `pim_cnn`."""
    root = tmp_path_factory.mktemp("fuzz-inputs")
    paths = {"cnn": root / "cnn.onnx", "open": root / "open.onnx", "pim": root / "pim.onnx"}
    onnx.save(small_cnn(), paths["cnn"])
    onnx.save(open_batch(small_cnn()), paths["open"])
    onnx.save(pim_cnn(), paths["pim"])
    for device in ("ideal", "isaac"):
        paths[device] = root / f"{device}.mlir"
        paths[device].write_text(cimxdsl.compile(small_cnn(), device=device).mlir("func"))
    paths["linalg"] = root / "linalg.mlir"
    paths["linalg"].write_text(cimxdsl.compile(small_cnn(), device="ideal", mode="exact").mlir("import"))
    paths["artifacts"] = root / "artifacts"
    cimxdsl.compile(pim_cnn(), target="pim", cores=4, out_dir=paths["artifacts"])
    return paths


# ---- wrong shapes and types, in every face ---------------------------------------------------------
def test_cim_compile_refuses_every_mutant_in_one_line(files, tmp_path, capsys):
    rng = np.random.default_rng(SEED)
    for k, x in enumerate(shape_mutants(SHAPE, rng)):
        np.save(tmp_path / f"x{k}.npy", x)
        for given in (f"x={tmp_path / f'x{k}.npy'}", str(tmp_path / f"x{k}.npy")):
            line = refused(cim_compile, [str(files["cnn"]), "--input", given], capsys, "cim-compile: error: ")
            names_shapes(line, "x", "[1, 3, 8, 8]", x)
    for k, x in enumerate(dtype_mutants(SHAPE)):
        np.save(tmp_path / f"d{k}.npy", x)
        line = refused(cim_compile, [str(files["cnn"]), "--input", f"x={tmp_path / f'd{k}.npy'}"], capsys, "")
        assert "input 'x' must hold numbers (float32)" in line and str(x.dtype) in line, line


def test_cim_compile_refuses_mutants_of_an_open_batch_and_a_batch_against_batch(files, tmp_path, capsys):
    rng = np.random.default_rng(SEED + 1)
    for k, x in enumerate(shape_mutants(SHAPE, rng, batch_ok=True)):
        np.save(tmp_path / f"x{k}.npy", x)
        line = refused(cim_compile, [str(files["open"]), "--input", str(tmp_path / f"x{k}.npy")], capsys, "")
        names_shapes(line, "x", "[N, 3, 8, 8]", x)
    np.save(tmp_path / "x4.npy", rng.standard_normal((4, *SHAPE[1:])).astype(np.float32))
    line = refused(cim_compile, [str(files["open"]), "--input", str(tmp_path / "x4.npy"), "--batch", "2"], capsys, "")
    assert line == "cim-compile: error: --batch 2, but the inputs given hold a batch of 4\n"
    line = refused(cim_compile, [str(files["cnn"]), "--random-inputs", "--batch", "2"], capsys, "")
    assert line == "cim-compile: error: --batch 2: the model's batch is fixed at 1\n"


def test_cim_run_refuses_every_mutant_in_one_line(files, tmp_path, capsys):
    rng = np.random.default_rng(SEED + 2)
    shapes = shape_mutants(SHAPE, rng)
    for k, x in enumerate([*shapes, *dtype_mutants(SHAPE)]):
        np.save(tmp_path / f"x{k}.npy", x)
        line = refused(cim_run, [str(files["linalg"]), "--input", f"x={tmp_path / f'x{k}.npy'}"], capsys, "")
        if k < len(shapes):
            names_shapes(line, "x", "[1, 3, 8, 8]", x)
        else:
            assert line.startswith("cim-run: error: input 'x' must hold numbers (float32)"), line


def test_cim_validate_refuses_every_mutant_in_one_line(files, tmp_path, capsys):
    rng = np.random.default_rng(SEED + 3)
    mutants = shape_mutants((1, 2, 4, 4), rng, batch_ok=True)
    for k, x in enumerate(mutants):
        np.save(tmp_path / f"x{k}.npy", np.rint(x * 10).astype(np.int32))
        line = refused(cim_validate, [str(files["artifacts"]), "--input", str(tmp_path / f"x{k}.npy")], capsys, "")
        names_shapes(line, "0", "[N, 2, 4, 4]", x)
    np.save(tmp_path / "f.npy", rng.standard_normal((1, 2, 4, 4)))
    line = refused(cim_validate, [str(files["artifacts"]), "--input", str(tmp_path / "f.npy")], capsys, "")
    assert line == "cim-validate: error: input '0' must hold integers (int64), got float64\n"


def test_the_api_refuses_every_mutant_in_one_line(files):
    rng = np.random.default_rng(SEED + 4)
    model = cimxdsl.compile(small_cnn(), device="ideal", mode="exact")
    shapes = shape_mutants(SHAPE, rng)
    for k, x in enumerate([*shapes, *dtype_mutants(SHAPE)]):
        with pytest.raises(InputError) as caught:
            model(x)
        message = one_line(str(caught.value) + "\n")
        if k < len(shapes):
            names_shapes(message, "x", "[1, 3, 8, 8]", x)
        else:
            assert message.startswith("input 'x' must hold numbers (float32)"), message
    with pytest.raises(InputError, match=r"^the model takes 1 input \(x\), got 2$"):
        model(np.zeros(SHAPE, np.float32), np.zeros(SHAPE, np.float32))
    tokens = cimxdsl.compile(token_model(), device="ideal", mode="exact")
    with pytest.raises(InputError, match=r"^input 'ids' must hold integers \(int64\), got float64$"):
        tokens(np.array([[1.0, 2.0, 3.0, 4.0]]))
    with pytest.raises(InputError, match=r"^input 'ids' holds values outside int64 \("):
        tokens(np.array([[1, 2, 3, 2**63]], np.uint64))
    with pytest.raises(InputError, match=r"^input 'ids' must have shape \[1, 4\], got \[4, 1\] \(the same dim"):
        tokens(np.array([[1], [2], [3], [4]]))
    pim = cimxdsl.compile(pim_cnn(), target="pim", cores=4, out_dir=files["artifacts"].parent / "api-pim")
    for x in shape_mutants((1, 2, 4, 4), rng):
        with pytest.raises(CompileError) as caught:
            pim(x)
        names_shapes(one_line(str(caught.value) + "\n"), "x", "[1, 2, 4, 4]", x)


def test_calibration_data_of_a_wrong_shape_is_refused(files, tmp_path, capsys):
    rng = np.random.default_rng(SEED + 5)
    for x in shape_mutants((64, 3, 8, 8), rng, batch_ok=True):
        if x.ndim == 5 and x.shape[1:] == SHAPE or x.ndim == 4 and x.shape[0] > 0 and x.shape[1:] == SHAPE[1:]:
            continue  # examples along the first axis, or whole inputs: the shapes calibration takes
        with pytest.raises(CompileError) as caught:
            cimxdsl.compile(small_cnn(), device="ideal", calibration=x)
        names_shapes(one_line(str(caught.value) + "\n"), "x", "[N, 3, 8, 8]", x)
    np.savez(tmp_path / "calibration.npz", calibration=rng.standard_normal((8, 8, 8, 3)).astype(np.float32))
    line = refused(cim_compile, [str(files["cnn"]), "--calibrate", str(tmp_path / "calibration.npz")], capsys, "")
    assert "calibration examples" not in line and "[N, 3, 8, 8]" in line and "[8, 8, 8, 3]" in line, line
    with pytest.raises(CompileError, match=r"^calibration input 'x' must have shape \[N, 3, 8, 8\], got \[3, 8, 8\]$"):
        cimxdsl.compile(small_cnn(), device="ideal", calibration=[[np.zeros((3, 8, 8), np.float32)]])
    args = [str(files["pim"]), "--target", "pim", "--calibrate", str(tmp_path / "calibration.npz")]
    pim = refused(cim_compile, args, capsys, "")
    assert "[N, 2, 4, 4]" in pim and "[8, 8, 8, 3]" in pim, pim


# ---- .npz files ------------------------------------------------------------------------------------
def test_npz_files_need_exactly_the_named_arrays(files, tmp_path, capsys):
    x = np.zeros(SHAPE, np.float32)
    np.savez(tmp_path / "other.npz", y=x)
    np.savez(tmp_path / "extra.npz", x=x, labels=np.zeros(1))
    for tool, model, prefix in ((cim_compile, "cnn", "cim-compile"), (cim_run, "ideal", "cim-run")):
        for given in (f"x={tmp_path / 'other.npz'}", str(tmp_path / "other.npz")):
            if tool is cim_run and "=" not in given:
                continue
            line = refused(tool, [str(files[model]), "--input", given], capsys, "")
            assert line == f"{prefix}: error: '{tmp_path / 'other.npz'}' has no array 'x' (it has: y)\n", line
        line = refused(tool, [str(files[model]), "--input", f"x={tmp_path / 'extra.npz'}"], capsys, "")
        expected = f"{prefix}: error: '{tmp_path / 'extra.npz'}' holds arrays other than 'x': labels"
        assert line == f"{expected} (it must hold only those)\n", line
    line = refused(cim_compile, [str(files["cnn"]), "--calibrate", str(tmp_path / "other.npz")], capsys, "")
    assert "has no array 'calibration', 'inputs', 'x' (it has: y)" in line, line
    line = refused(cim_compile, [str(files["cnn"]), "--dataset", str(tmp_path / "extra.npz")], capsys, "")
    assert "has no array 'inputs' (it has: x, labels)" in line, line


# ---- devices that differ from the IR's ------------------------------------------------------------
def test_cim_run_takes_the_recorded_device_and_names_another(files, capsys):
    assert 'cimxdsl.device = {name = "isaac", rows = 128 : i64, cols = 128 : i64' in files["isaac"].read_text()
    cim_run([str(files["isaac"]), "--random-inputs", "--report"])
    captured = capsys.readouterr()
    assert "device: isaac" in captured.out and captured.err == ""
    cim_run([str(files["ideal"]), "--random-inputs", "--device", "isaac"])
    note = one_line(capsys.readouterr().err)
    assert note.startswith("note: the IR was lowered for device 'ideal' (128×128 crossbars, 1 cell per weight")
    assert "not for 'isaac' (128×128 crossbars, 8 cells per weight" in note
    line = refused(cim_run, [str(files["isaac"]), "--random-inputs", "--device", "cinnamon"], capsys, "")
    assert line.startswith("cim-run: error: the IR was lowered for device 'isaac'") and "not for 'cinnamon'" in line


def test_the_device_is_recorded_by_tile_in_every_later_stage_and_saved_model(tmp_path, capsys):
    model = cimxdsl.compile(small_cnn(), device="isaac")
    stages = list(model.stages)
    for stage in stages:
        recorded = recorded_device(model.module(stage))
        assert recorded == (load_device_config("isaac") if stages.index(stage) >= stages.index("tile") else None)
    model.save(tmp_path / "m.cimx")
    assert recorded_device(cimxdsl.load(tmp_path / "m.cimx").module("func")) == load_device_config("isaac")
    custom = load_device_config("ideal").replace(name="wide", rows=256, cols=256)
    module = model.module("cinm").clone()
    TilePass.for_device(custom).apply(make_context(), module)
    assert recorded_device(module) == custom  # not a preset: the whole configuration
    TilePass(rows=64, cols=32).apply(make_context(), module)
    assert recorded_device(module) is None and "{rows = 64 : i64, cols = 32 : i64, cells_per_weight = 1" in str(module)
    cim_opt([str(MLP), "-p", "memristor{device=isaac}", "-o", str(tmp_path / "mlp.mlir")])
    assert recorded_device(parse_module_text((tmp_path / "mlp.mlir").read_text(), "mlp")) == load_device_config("isaac")


# ---- batches on both targets ------------------------------------------------------------------------
def test_an_open_batch_takes_the_batch_of_the_input(files, tmp_path, capsys):
    x = np.random.default_rng(SEED + 6).standard_normal((4, *SHAPE[1:])).astype(np.float32)
    np.save(tmp_path / "x4.npy", x)
    report = tmp_path / "report.json"
    args = [str(files["open"]), "--device", "ideal", "--mode", "exact", "--compare", "--report-json", str(report)]
    cim_compile([*args, "--input", str(tmp_path / "x4.npy"), "-o", str(tmp_path / "out")])
    capsys.readouterr()
    (expected,) = onnxruntime_outputs(str(files["open"]), {"x": x})
    with np.load(tmp_path / "out" / "outputs.npz") as outputs:
        (ours,) = [outputs[k] for k in outputs.files]
    assert ours.shape == (4, 5)
    np.testing.assert_allclose(ours, expected, rtol=1e-4, atol=1e-5)  # float32 products of 27..36 terms
    assert json.loads(report.read_text())["compare"]["max_abs_error"] < 1e-4
    compiled = cimxdsl.compile(open_batch(small_cnn()), device="ideal", mode="exact", batch=4)
    np.testing.assert_allclose(compiled(x), expected, rtol=1e-4, atol=1e-5)
    with pytest.raises(InputError, match=r"^input 'x' must have shape \[4, 3, 8, 8\], got \[2, 3, 8, 8\] \(a batch of 2"):
        compiled(x[:2])
    cim_compile([*args, "--random-inputs", "--batch", "3", "-o", str(tmp_path / "three")])
    with np.load(tmp_path / "three" / "outputs.npz") as outputs:
        assert [outputs[k].shape for k in outputs.files] == [(3, 5)]


def test_pim_streams_a_batch_image_after_image(files, tmp_path, capsys):
    rng = np.random.default_rng(SEED + 7)
    fixed = pim_cnn()
    for info in (fixed.graph.input[0], fixed.graph.output[0]):
        info.type.tensor_type.shape.dim[0].dim_value = 3
    x = rng.random((3, 2, 4, 4)).astype(np.float32)
    for model in (fixed, open_batch(pim_cnn())):
        compiled = cimxdsl.compile(model, target="pim", cores=4, out_dir=tmp_path / "pim")
        ours = compiled(x)
        golden = compiled.program.dequantize(compiled.golden(x))[0]
        np.testing.assert_array_equal(ours, golden)
        (expected,) = onnxruntime_outputs(model.SerializeToString(), {"x": x})
        tolerance = 2.0 ** (compiled.program.output_exponents[0] + 3) + 0.1 * float(np.abs(expected).max())
        np.testing.assert_allclose(ours, expected, atol=tolerance)
        report = compiled.report()
        assert report["images"] == 3 and sum(report["executed_instructions_per_image"]) == report["executed_instructions"]
    with pytest.raises(CompileError, match=r"^input 'x' must have shape \[3, 2, 4, 4\], got \[2, 2, 4, 4\]"):
        cimxdsl.compile(fixed, target="pim", cores=4, out_dir=tmp_path / "pim")(x[:2])
    np.save(tmp_path / "x3.npy", x)
    out = tmp_path / "cli"
    onnx.save(open_batch(pim_cnn()), tmp_path / "open_pim.onnx")
    cim_compile(
        [str(tmp_path / "open_pim.onnx"), "--target", "pim", "--cores", "4", "--input", str(tmp_path / "x3.npy")]
        + ["-o", str(out)]
    )
    assert "instruction-level execution equals" in capsys.readouterr().out
    assert np.load(out / "input_0.npy").shape == (3, 2, 4, 4) and np.load(out / "expected_0.npy").shape == (3, 3)
    assert cim_validate([str(out), "--input", str(out / "input_0.npy"), "--expect", str(out / "expected_0.npy")]) == 0
    assert "for 3 images, one after another; outputs [3, 3] match" in capsys.readouterr().out
