"""The PIM target's 8-bit crossbar inputs: a layer whose input values fit 8 bits (the integer
importer's int8 codes, known from their bounds) reads them as 8-bit elements (`setbw 8, 32`: 8
DAC steps per `mvmul` instead of 32) and still gives exactly the interpreted integer program's
result; values that may not fit keep 32-bit inputs."""

import numpy as np
import onnxruntime
import pytest

import cimxdsl
from benchmarks.model_zoo import resnet
from cimxdsl.backend import read_artifacts
from cimxdsl.dialects import pim
from tests.unit.backend.test_pim_pipeline import lower_and_check
from tests.unit.spatial_programs import resnet_program


def mvmul_input_bits(stream: pim.InstructionStream) -> list[int]:
    """The `ibiw` in force at each `mvmul` of the stream (32 before any `setbw`)."""
    bits, found = 32, []
    for code, fields in zip(stream.opcodes.tolist(), stream.fields.tolist(), strict=True):
        if code == pim.SetbwOp.OPCODE:
            bits = fields[0]
        elif code == pim.MvmulOp.OPCODE:
            found.append(bits)
    return found


@pytest.mark.parametrize("packing", ["im2col", "kernel"])
def test_int8_layers_feed_8_bit_inputs_to_their_crossbars_and_stay_exact(packing, tmp_path):
    # Widths 8 to 64: 3×3 convolutions of 1, 2, 3 and 5 crossbars of 128 rows (im2col), partial sums
    # added in each output pixel; residual additions, max pooling, global pooling and a Gemm.
    model = resnet(depth=18, size=16, width=8, classes=10)
    rng = np.random.default_rng(5)
    calibration = rng.standard_normal((4, 3, 16, 16)).astype(np.float32)
    compiled = cimxdsl.compile(model, target="pim", calibration=calibration, packing=packing, out_dir=tmp_path)
    cores = read_artifacts(tmp_path).cores
    bits = [b for core in cores for b in mvmul_input_bits(core.instructions)]
    assert len(bits) > 100 and set(bits) == {8}
    narrowing = sum(int(np.count_nonzero(core.instructions.opcodes == pim.VvsraOp.OPCODE)) for core in cores)
    assert narrowing >= 20  # each convolution's and the Gemm's input narrowed (and the requantizations)
    reference = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for x in rng.standard_normal((2, 1, 3, 16, 16)).astype(np.float32):
        ours = compiled(x)
        np.testing.assert_array_equal(compiled.last_result.outputs[0], compiled.golden(x)[0])
        expected = reference.run(None, {model.graph.input[0].name: x})[0]
        assert np.abs(ours - expected).max() <= 0.25 * np.abs(expected).max()


def test_inputs_without_bounds_keep_32_bit_crossbar_inputs(tmp_path):
    """The program's input carries no bounds: the first convolution reads it as 32-bit values (here
    beyond 8 bits); the layers after its requantization read 8-bit ones."""
    x = np.random.default_rng(6).integers(-1000, 1000, (1, 3, 8, 8))
    _, _, artifacts, _ = lower_and_check(
        resnet_program(), x, xbar=4, per_compute=9, cores=6, per_core=24, out_dir=tmp_path
    )
    bits = [b for core in artifacts.cores for b in mvmul_input_bits(core.instructions)]
    assert bits[0] == 32 and 8 in bits
