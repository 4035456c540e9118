"""The PIM target's 8-bit crossbar inputs: a layer whose input values fit 8 bits (the integer
importer's int8 codes, known from their bounds) reads them as 8-bit elements (`setbw 8, 32`: 8
DAC steps per `mvmul` instead of 32) and still gives exactly the interpreted integer program's
result; values that may not fit keep 32-bit inputs."""

import numpy as np
import onnxruntime
import pytest

import cimxdsl
from benchmarks.model_zoo import resnet
from cimxdsl.backend import read_artifacts, validate
from cimxdsl.backend.emit import write_program
from cimxdsl.dialects import pim
from cimxdsl.dialects import spatial as spat
from cimxdsl.dialects.utils import num_elements, shape_of
from cimxdsl.transforms.pim.value_bounds import INT8, UNBOUNDED, core_value_bounds, within
from tests.unit.backend.test_pim_pipeline import lower_and_check
from tests.unit.helpers import apply, parse
from tests.unit.spatial_programs import ProgramBuilder, interpret, resnet_program


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


def sent_bytes(cores) -> list[list[int]]:
    """Each core's `send` sizes in bytes, in order."""
    return [[op.size.value.data for op in core.instructions if isinstance(op, pim.SendOp)] for core in cores]


@pytest.mark.parametrize("cores", [8, 0])
def test_transfers_of_8_bit_values_move_8_bit_elements_and_widen_where_read_wide(cores, tmp_path):
    # `a` (int8 codes, negative ones too: no ReLU) feeds a convolution on another core and a
    # residual addition read at 32 bits; the input (no bounds) and the final sum move at 32 bits.
    b = ProgramBuilder((1, 4, 6, 6), seed=7)
    a = b.requantize(b.conv("%x", 8, 3, pad=1), 3)
    c = b.requantize(b.conv(a, 8, 3, pad=1), 3)
    text = b.text(b.conv(b.binary("arith.addi", c, a), 4, 1))
    x = np.random.default_rng(8).integers(-100, 100, (1, 4, 6, 6))
    module = parse(text)
    (golden,) = interpret(module, [x])
    apply(module, "cinm-to-spatial{xbar-size=16 crossbars-per-compute=3}")
    apply(module, f"spatial-to-pim{{cores={cores} crossbars-per-core=3}}")
    apply(module, "pim-bufferize")
    # what each send carries, from the values' bounds: one byte per element of an int8 value
    core_ops = sorted((op for op in module.walk() if isinstance(op, pim.CoreOp)), key=lambda c: c.get_core_id())
    bounds = core_value_bounds([list(core.body.block.ops) for core in core_ops])
    carried = [
        [
            (num_elements(shape_of(op.value)), within(bounds.get(op.value, UNBOUNDED), INT8))
            for op in core.body.block.ops
            if isinstance(op, spat.ChannelSendOp)
        ]
        for core in core_ops
    ]
    kinds = {narrow for sends in carried for _, narrow in sends}
    assert kinds == {True, False}  # 8-bit values and wider ones cross between cores
    expected = [[n * (1 if narrow else 4) for n, narrow in sends] for sends in carried]
    apply(module, "pim-codegen")
    write_program(module, tmp_path)
    artifacts = read_artifacts(tmp_path)
    assert sent_bytes(artifacts.cores) == expected
    (validated,) = validate(artifacts, [x]).outputs
    np.testing.assert_array_equal(validated, golden)
    assert golden.min() < 0
