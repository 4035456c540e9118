"""`spatial-to-pim`'s layer pipeline runs each core stage by stage: a value a core received for one
compute is used by a later compute of the core only if it arrives before that compute's body."""

import numpy as np

from cimxdsl.backend import read_artifacts, validate
from cimxdsl.backend.emit import write_program
from tests.unit.helpers import apply, parse
from tests.unit.spatial_programs import ProgramBuilder, interpret


def test_a_parallel_branch_in_an_earlier_stage_gets_the_value_in_time(tmp_path):
    """`v` feeds a chain of three convolutions ending in `x` (its residual is `v`) and, later in the
    program, the one convolution `y`: `x` and `y` share a core, `v` is made on another. `x` lies
    in stage 4 and receives `v` among that stage's inputs; `y`, placed after it, lies in stage 2,
    so the copy received for `x` comes after `y`'s body and `y` receives `v` itself. Both results
    equal the host program's after every pass and in the validator."""
    b = ProgramBuilder((1, 4, 6, 6), 3)

    def layer(value: str, kernel: int) -> str:
        return b.relu(b.requantize(b.conv(value, 4, kernel, pad=kernel // 2), 3))

    v = layer("%x", 3)
    x = b.binary("arith.addi", b.requantize(b.conv(layer(layer(v, 3), 3), 4, 1), 3), v)
    module = parse(b.text(x, layer(v, 1)))
    image = np.random.default_rng(7).integers(-128, 128, (1, 4, 6, 6))
    golden = interpret(module, [image])
    assert all(np.any(g != 0) for g in golden)
    stages = [
        "cinm-to-spatial{xbar-size=64 crossbars-per-compute=1 packing=im2col}",
        "spatial-to-pim{cores=0 crossbars-per-core=3}",
        "pim-bufferize",
        "pim-codegen",
    ]
    for stage in stages:
        apply(module, stage)
        for result, expected in zip(interpret(module, [image]), golden, strict=True):
            np.testing.assert_array_equal(result, expected, err_msg=f"after {stage}")
    write_program(module, tmp_path)
    artifacts = read_artifacts(tmp_path)
    assert len(artifacts.cores) == 2
    for result, expected in zip(validate(artifacts, [image]).outputs, golden, strict=True):
        np.testing.assert_array_equal(np.asarray(result).reshape(expected.shape), expected)
