"""The spatial flow end to end: every level interprets to the cinm-level (host) result, and the
artifact directory, executed instruction by instruction by the validator, gives exactly that
result too."""

import numpy as np
import pytest

from cimxdsl.backend import read_artifacts, validate
from cimxdsl.backend.emit import write_program
from cimxdsl.device.chip import load_chip_config
from cimxdsl.dialects import pim
from cimxdsl.dialects import spatial as spat
from cimxdsl.flow.pim import compile_to_pim
from cimxdsl.tools.cim_validate import main as cim_validate
from tests.unit.helpers import apply, parse
from tests.unit.spatial_programs import ProgramBuilder, conv_program, gemm_program, interpret, resnet_program


def count(module, op_type) -> int:
    return sum(isinstance(op, op_type) for op in module.walk())


def lower_and_check(
    text: str, x: np.ndarray, xbar: int, per_compute: int, cores: int, per_core: int, out_dir, forward: bool = True
) -> tuple:
    """Lower with `per_compute` crossbars per spat.compute onto `cores` cores of `per_core`
    crossbars (`forward`: relaying values that skip a stage), interpreting after every pass; the
    golden result, the number of computes, the artifacts and the final module."""
    module = parse(text)
    (golden,) = interpret(module, [x])
    stages = [
        f"cinm-to-spatial{{xbar-size={xbar} crossbars-per-compute={per_compute}}}",
        f"spatial-to-pim{{cores={cores} crossbars-per-core={per_core} forward={str(forward).lower()}}}",
        "pim-bufferize",
        "pim-codegen",
    ]
    computes = 0
    for stage in stages:
        apply(module, stage)
        if stage.startswith("cinm-to-spatial"):
            computes = count(module, spat.ComputeOp)
        (result,) = interpret(module, [x])
        np.testing.assert_array_equal(result, golden, err_msg=f"after {stage}")
    write_program(module, out_dir)
    artifacts = read_artifacts(out_dir)
    (validated,) = validate(artifacts, [x]).outputs
    np.testing.assert_array_equal(validated, golden, err_msg="validator")
    return golden, computes, artifacts, module


def reference_conv_relu(x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """ReLU of a 3×3 convolution with zero padding 1, by direct loops over the kernel positions."""
    _, _, h, w = x.shape
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((1, weights.shape[0], h, w), np.int64)
    for ky in range(3):
        for kx in range(3):
            out += np.einsum("nchw,fc->nfhw", padded[:, :, ky : ky + h, kx : kx + w], weights[:, :, ky, kx])
    return np.maximum(out, 0)


@pytest.mark.parametrize(
    "xbar, per_compute, cores, per_core",
    [(3, 5, 4, 16), (4, 4, 3, 8)],
    ids=["xbar3-54-crossbars-11-computes-on-4-cores", "xbar4-18-crossbars-5-computes-on-3-cores"],
)
def test_conv_3x3_8_filters_4_channels(tmp_path, xbar, per_compute, cores, per_core):
    rng = np.random.default_rng(11)
    weights = rng.integers(1, 8, (8, 4, 3, 3)) * rng.choice([-1, 1], (8, 4, 3, 3))
    x = rng.integers(-128, 128, (1, 4, 5, 5))
    text = conv_program(channels=4, filters=8, size=5, weights=weights)
    golden, computes, artifacts, module = lower_and_check(text, x, xbar, per_compute, cores, per_core, tmp_path)
    np.testing.assert_array_equal(golden, reference_conv_relu(x, weights))
    assert np.any(golden != 0)
    # The convolution is split across cores, and with more computes than cores they were merged.
    assert len(artifacts.cores) == cores < computes
    assert sum(len(c.groups) for c in artifacts.cores) == 9 * (-(-4 // xbar)) * (-(-8 // xbar))
    counts = artifacts.instruction_counts()
    assert counts["send"] == counts["recv"] > 0
    # Weight skipping: per image row 2 + 3 + 3 + 3 + 2 = 13 (output row, kernel row) pairs meet the
    # image instead of 5 · 3 = 15, so 13 · 13 (pixel, position) pairs per crossbar tile pair.
    tiles = (-(-4 // xbar)) * (-(-8 // xbar))
    assert counts["mvmul"] == 13 * 13 * tiles
    assert all(isinstance(core.instructions[0], pim.SetbwOp) for core in artifacts.cores)
    assert count(module, pim.MvmulOp) == counts["mvmul"]


def test_gemm_with_bias_relu_and_requantization(tmp_path):
    x = np.random.default_rng(5).integers(-128, 128, (3, 10))
    golden, computes, artifacts, _ = lower_and_check(
        gemm_program(rows=3), x, xbar=4, per_compute=2, cores=2, per_core=8, out_dir=tmp_path
    )
    assert np.any(golden != 0) and computes > 2
    counts = artifacts.instruction_counts()
    # One mvmul per row and crossbar: 10 -> 9 is 3 x 3 tiles, 9 -> 7 is 3 x 2 tiles.
    assert counts["mvmul"] == 3 * (3 * 3 + 3 * 2)
    assert counts["vvsra"] > 0 and counts["vvmax"] > 0


def test_resnet18_shaped_model(tmp_path):
    x = np.random.default_rng(2).integers(-128, 128, (1, 3, 8, 8))
    golden, computes, artifacts, _ = lower_and_check(
        resnet_program(), x, xbar=4, per_compute=9, cores=6, per_core=24, out_dir=tmp_path
    )
    assert golden.shape == (1, 5) and np.any(golden != 0)
    counts = artifacts.instruction_counts()
    # Pooling windows (lmv, vvmax), global average pooling (vavg), requantization (vvsra).
    assert {"lmv", "vvmax", "vavg", "vvsra", "send", "recv", "ld", "st"} <= set(counts)
    assert 1 < len(artifacts.cores) <= 6 < computes
    # The command line agrees, and notices a wrong expectation.
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", golden)
    assert (
        cim_validate([str(tmp_path), "--input", str(tmp_path / "x.npy"), "--expect", str(tmp_path / "y.npy"), "-q"])
        == 0
    )
    wrong = golden.copy()
    wrong[0, 3] += 1
    np.save(tmp_path / "wrong.npy", wrong)
    assert (
        cim_validate([str(tmp_path), "--input", str(tmp_path / "x.npy"), "--expect", str(tmp_path / "wrong.npy")]) == 1
    )


def skipping_transfers(artifacts) -> set[tuple[int, int]]:
    """The pairs of cores (sender, receiver) that a send joins although a chain of other transfers
    leads from the sender to the receiver too (a transfer that skips a stage)."""
    edges = {
        (core.core_id, op.core.value.data)
        for core in artifacts.cores
        for op in core.instructions
        if isinstance(op, pim.SendOp)
    }

    def reaches(start: int, end: int, without: tuple[int, int]) -> bool:
        seen, todo = set(), [b for a, b in edges if a == start and (a, b) != without]
        while todo:
            core = todo.pop()
            if core == end:
                return True
            if core not in seen:
                seen.add(core)
                todo += [b for a, b in edges if a == core]
        return False

    return {edge for edge in edges if reaches(*edge, without=edge)}


@pytest.mark.parametrize("forward", [False, True])
def test_residual_inputs_are_relayed_through_the_stages_between(tmp_path, forward):
    # One compute per core: a residual's input skips the block's convolutions unless relayed;
    # relayed, every transfer goes to a next stage, and the results stay bitwise equal.
    x = np.random.default_rng(3).integers(-128, 128, (1, 3, 8, 8))
    golden, _, artifacts, _ = lower_and_check(
        resnet_program(), x, xbar=4, per_compute=9, cores=0, per_core=9, out_dir=tmp_path, forward=forward
    )
    assert np.any(golden != 0) and len(artifacts.cores) > 6
    assert bool(skipping_transfers(artifacts)) != forward


def test_streamed_images_leave_at_the_pace_of_the_busiest_core(tmp_path):
    # Replicated on 16 cores, cores hold the bands of two layers and relay the residuals; each core
    # receives what an image needs before computing it (no sender waits for an unrelated compute of
    # its receiver), so in a stream the images leave one per busiest core's time, and the
    # artifacts stay exact.
    text = resnet_program(size=16, width=4)
    x = np.random.default_rng(6).integers(-128, 128, (1, 3, 16, 16))
    (golden,) = interpret(parse(text), [x])
    chip = load_chip_config("pimcomp")
    report = compile_to_pim(
        parse(text), cores=16, crossbars_per_core=8, xbar_size=8, out_dir=tmp_path, mapping="greedy", chip=chip
    )
    performance = report["performance"]
    assert report["cores_used"] == 16 and "replicated" in report["mapping"]
    assert performance["throughput"] == pytest.approx(performance["throughput_bound"], rel=1e-3)
    (validated,) = validate(read_artifacts(tmp_path), [x]).outputs
    np.testing.assert_array_equal(validated, golden)


def test_a_gemm_on_a_flattened_image(tmp_path):
    """VGG's classifier: a [1, C, H, W] activation flattened to [1, C·H·W] feeds a gemm, which runs as
    a convolution whose kernel covers the whole image (1×1 output)."""
    b = ProgramBuilder((1, 3, 4, 4), seed=9)
    y = b.requantize(b.conv("%x", 4, 3, pad=1), 3)
    out = b.gemm(b.flatten(b.relu(y)), 5)
    x = np.random.default_rng(9).integers(-128, 128, (1, 3, 4, 4))
    golden, _, artifacts, _ = lower_and_check(
        b.text(out), x, xbar=8, per_compute=4, cores=4, per_core=16, out_dir=tmp_path
    )
    assert golden.shape == (1, 5) and np.any(golden != 0)
    # 64 flattened inputs on 8-row crossbars: 4 channels x 16 kernel positions, one crossbar each.
    assert artifacts.instruction_counts()["mvmul"] >= 16


def test_spatial_ir_size_does_not_depend_on_the_image_size():
    sizes = {}
    for size in (4, 16):
        module = parse(conv_program(size=size))
        apply(module, "cinm-to-spatial{xbar-size=3 crossbars-per-compute=5}")
        sizes[size] = sum(1 for _ in module.walk())
    assert sizes[4] == sizes[16]


def test_compile_to_pim_reports_counts_utilization_and_time(tmp_path):
    module = parse(conv_program(size=4))
    report = compile_to_pim(module, cores=12, crossbars_per_core=5, xbar_size=3, out_dir=tmp_path, packing="kernel")
    assert report["cores_used"] == 11 and report["core_utilization"] == 11 / 12
    assert report["crossbars_used"] == 54 == sum(report["crossbars_per_core_used"])
    assert report["instructions"] == sum(report["instruction_counts"].values())
    assert set(report["compile_time_s"]) >= {"cinm-to-spatial", "spatial-to-pim", "pim-codegen", "total"}
    assert report["crossbar_utilization"] == 54 / 55
    assert (tmp_path / "config.json").is_file() and (tmp_path / "core_10.json").is_file()
    # the module is left bufferized (cores with regions inside functions): every op counted
    assert report["ir_ops"]["pim-bufferize"] == sum(1 for _ in module.walk()) > 54


def test_channel_concat_and_the_pim_pipeline(tmp_path):
    """Two branches joined with tensor.concat (inception-style), through the named `pim` pipeline."""
    b = ProgramBuilder((1, 3, 4, 4), seed=4)
    left = b.relu(b.conv("%x", 5, 3, pad=1))
    right = b.conv("%x", 2, 1)
    joined = b.emit(
        "%cat",
        (1, 7, 4, 4),
        f"tensor.concat dim(1) {left}, {right} : (tensor<1x5x4x4xi32>, tensor<1x2x4x4xi32>) -> tensor<1x7x4x4xi32>",
    )
    module = parse(b.text(b.conv(joined, 3, 3, pad=1)))
    x = np.random.default_rng(9).integers(-128, 128, (1, 3, 4, 4))
    (golden,) = interpret(module, [x])
    apply(module, "pim{xbar-size=3 cores=6 crossbars-per-core=12}")
    write_program(module, tmp_path)
    assert count(module, pim.MvmulOp) > 0 and count(module, spat.ComputeOp) == 0
    (got,) = validate(read_artifacts(tmp_path), [x]).outputs
    np.testing.assert_array_equal(got, golden)
    np.testing.assert_array_equal(interpret(module, [x])[0], golden)


def test_tosa_clamp_reshape_flatten_and_folded_constants(tmp_path):
    """Forms an ONNX importer may produce: `tosa.clamp` as ReLU/requantization clamp, flatten as
    `tensor.reshape`, and a bias built on the host from constants (folded at compile time)."""
    b = ProgramBuilder((1, 3, 4, 4), seed=6)
    y = b.conv("%x", 4, 3, pad=1)
    y = b.emit(
        "%relu",
        (1, 4, 4, 4),
        f"tosa.clamp {y} {{min_val = 0 : i32, max_val = 2147483647 : i32}} : "
        "(tensor<1x4x4x4xi32>) -> tensor<1x4x4x4xi32>",
    )
    y = b.binary("arith.shrsi", y, b.splat(3, (1, 4, 4, 4)))
    y = b.emit(
        "%q",
        (1, 4, 4, 4),
        f"tosa.clamp {y} {{min_val = -128 : i32, max_val = 127 : i32}} : (tensor<1x4x4x4xi32>) -> tensor<1x4x4x4xi32>",
    )
    g = b.global_avg_pool(y)
    shape = b.emit("%shape", (2,), "arith.constant dense<[1, 4]> : tensor<2xi64>")
    flat = b.emit(
        "%flat", (1, 4), f"tensor.reshape {g}({shape}) : (tensor<1x4x1x1xi32>, tensor<2xi64>) -> tensor<1x4xi32>"
    )
    bias = b.emit("%b", (3,), "arith.constant dense<[5, -6, 7]> : tensor<3xi32>")
    bias_shape = b.emit("%bs", (2,), "arith.constant dense<[1, 3]> : tensor<2xi64>")
    bias2 = b.emit(
        "%b2", (1, 3), f"tensor.reshape {bias}({bias_shape}) : (tensor<3xi32>, tensor<2xi64>) -> tensor<1x3xi32>"
    )
    out = b.binary("arith.addi", b.gemm(flat, 3, bias=False), bias2)
    module = parse(b.text(out))
    x = np.random.default_rng(8).integers(-128, 128, (1, 3, 4, 4))
    (golden,) = interpret(module, [x])
    report = compile_to_pim(module, cores=4, crossbars_per_core=16, xbar_size=4, out_dir=tmp_path)
    assert report["instruction_counts"]["vrelu"] > 0
    (got,) = validate(read_artifacts(tmp_path), [x]).outputs
    np.testing.assert_array_equal(got, golden)


def test_compile_to_pim_writes_the_files_the_pim_codegen_ir_gives(tmp_path):
    """`compile_to_pim` keeps the instructions packed; the `pim-codegen` pass builds them as ops
    and `write_program` writes those: the two directories are byte for byte the same."""
    text = resnet_program(size=6, width=4)
    options = {"cores": 16, "crossbars_per_core": 4, "xbar_size": 8, "packing": "kernel"}
    compile_to_pim(parse(text), out_dir=tmp_path / "packed", **options)
    module = apply(parse(text), "pim{xbar-size=8 cores=16 crossbars-per-core=4 packing=kernel}")
    write_program(module, tmp_path / "ops")
    files = sorted(p.name for p in (tmp_path / "packed").iterdir())
    assert files == sorted(p.name for p in (tmp_path / "ops").iterdir()) and "core_11.json" in files
    for name in files:
        assert (tmp_path / "packed" / name).read_bytes() == (tmp_path / "ops" / name).read_bytes(), name
