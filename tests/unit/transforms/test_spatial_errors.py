"""Programs the spatial flow cannot compile get one clear line saying why."""

import numpy as np
import pytest
from xdsl.utils.exceptions import PassFailedException

from cimxdsl.flow.pim import compile_to_pim
from tests.unit.helpers import apply, parse
from tests.unit.spatial_programs import ProgramBuilder, conv_program, interpret


def lower_error(text: str, spec: str = "cinm-to-spatial{xbar-size=4}") -> str:
    module = parse(text)
    with pytest.raises(PassFailedException) as error:
        apply(module, spec)
    assert "\n" not in str(error.value)
    return str(error.value)


def test_a_model_too_large_for_the_cores_says_how_many_crossbars_it_needs():
    module = parse(conv_program())
    with pytest.raises(PassFailedException) as error:
        compile_to_pim(module, cores=2, crossbars_per_core=5, xbar_size=3, packing="kernel")
    assert str(error.value) == (
        "spatial-to-pim: the program needs 54 crossbars (largest layer: conv9, 54 crossbars), but 2 cores x 5 "
        "crossbars per core hold only 10: "
        "use at least 11 cores"
    )


def test_truncating_mean_of_signed_values_is_rejected():
    b = ProgramBuilder((1, 4, 4, 4))
    y = b.conv("%x", 4, 3, pad=1)
    message = lower_error(b.text(b.global_avg_pool(y)))
    assert message.startswith("cinm-to-spatial: arith.divsi truncates, spat.global_avgpool floors")
    # After a ReLU the values are non-negative and truncation is the floor.
    b = ProgramBuilder((1, 4, 4, 4))
    module = parse(b.text(b.global_avg_pool(b.relu(b.conv("%x", 4, 3, pad=1)))))
    x = np.random.default_rng(0).integers(-128, 128, (1, 4, 4, 4))
    (golden,) = interpret(module, [x])
    apply(module, "cinm-to-spatial{xbar-size=4}")
    np.testing.assert_array_equal(interpret(module, [x])[0], golden)


def test_max_pooling_must_pad_with_the_smallest_value():
    b = ProgramBuilder((1, 2, 4, 4))
    text = b.text(b.max_pool(b.conv("%x", 2, 1), 3, 2, 1)).replace(
        "arith.constant -2147483648 : i32", "arith.constant 0 : i32", 1
    )
    assert lower_error(text) == (
        "cinm-to-spatial: max pooling must pad with the smallest value -2147483648, got 0 ('linalg.pooling_nchw_max')"
    )


def test_a_flattened_image_feeds_only_a_gemm():
    b = ProgramBuilder((1, 2, 2, 2))
    flat = b.flatten(b.conv("%x", 2, 1))
    assert lower_error(b.text(b.binary("arith.addi", flat, flat))) == (
        "cinm-to-spatial: a flattened image can only feed a gemm ('arith.addi')"
    )


def transpose_program(location: str = "") -> str:
    b = ProgramBuilder((1, 2, 2, 2))
    y = b.conv("%x", 2, 1)
    transpose = (
        f"linalg.transpose ins({y} : tensor<1x2x2x2xi32>) outs(%x : tensor<1x2x2x2xi32>) permutation = [0, 1, 3, 2]"
    )
    return b.text(b.emit("%t", (1, 2, 2, 2), transpose + location))


def test_host_ops_that_cannot_run_on_cores_are_named():
    assert lower_error(transpose_program()) == "cinm-to-spatial: this op cannot run on PIM cores ('linalg.transpose')"


def test_a_compute_too_large_for_a_core():
    message = lower_error(
        conv_program(),
        "cinm-to-spatial{xbar-size=3 crossbars-per-compute=5},spatial-to-pim{cores=64 crossbars-per-core=4}",
    )
    assert message == (
        "spatial-to-pim: a spat.compute holds 5 crossbars, more than the 4 of a core: lower it with "
        "cinm-to-spatial{crossbars-per-compute=4}"
    )


def test_a_failing_op_with_a_location_is_named_by_file_line_and_column():
    assert lower_error(transpose_program(' loc("model.mlir":12:5)')) == (
        "model.mlir:12:5: cinm-to-spatial: this op cannot run on PIM cores ('linalg.transpose')"
    )
