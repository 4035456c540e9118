"""The spat dialect's builders, geometry helpers and effects."""

import pytest
from xdsl.dialects.builtin import MemRefType, ModuleOp, TensorType, i8, i32
from xdsl.traits import get_effects
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.test_value import create_ssa_value

from cimxdsl.dialects import spatial as spat
from cimxdsl.dialects.crossbar_ops import FilterGeometry


def test_geometry_output_size_and_input_pixels():
    geometry = FilterGeometry(kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))
    assert geometry.output_size(8, 8) == (4, 4)
    assert FilterGeometry(kernel=(2, 2), dilations=(2, 2)).output_size(5, 6) == (3, 4)
    assert list(geometry.kernel_positions())[:4] == [(0, 0, 0), (1, 0, 1), (2, 0, 2), (3, 1, 0)]
    # Output pixel (0, 0), kernel position (0, 0) reads the padding above-left of the image.
    assert geometry.input_pixel(0, 0, 0, 0) == (-1, -1)
    assert geometry.input_pixel(1, 2, 2, 1) == (3, 4)
    assert FilterGeometry().is_pointwise() and not geometry.is_pointwise()


def test_compute_with_apply_filters_builds_and_verifies():
    weights = [create_ssa_value(TensorType(i8, (3, 2))) for _ in range(2)]
    image = create_ssa_value(TensorType(i8, (4, 4, 3)))
    geometry = FilterGeometry(kernel=(3, 3), pads=(1, 1, 1, 1))
    out_type = TensorType(i32, (4, 4, 2))
    compute = spat.ComputeOp(weights, [image], [out_type])
    assert [a.type for a in compute.weight_args] == [w.type for w in weights]
    (x,) = compute.input_args
    filters = spat.ApplyFiltersOp(x, [0, -1, 1, -1, -1, -1, -1, -1, 0], out_type, geometry)
    relu = spat.VReluOp(filters.result)
    compute.body.block.add_ops([filters, relu, spat.YieldOp(relu.result)])
    ModuleOp([*(w.owner for w in weights), image.owner, compute]).verify()
    assert filters.geometry() == geometry
    assert filters.weight_index_list() == (0, -1, 1, -1, -1, -1, -1, -1, 0)


def test_apply_filters_weight_shape_is_checked_against_the_compute():
    weight = create_ssa_value(TensorType(i8, (3, 2)))
    compute = spat.ComputeOp([weight], [], [])
    rows = create_ssa_value(TensorType(i8, (5, 4)))
    compute.body.block.add_ops([rows.owner, spat.ApplyFiltersOp(rows, [0], TensorType(i32, (5, 2))), spat.YieldOp()])
    with pytest.raises(VerifyException, match="weight 0 must be 4x2"):
        ModuleOp([weight.owner, compute]).verify()


def test_result_types_are_inferred():
    x = create_ssa_value(TensorType(i8, (8, 8, 4)))
    pool = spat.MaxPoolOp(x, FilterGeometry(kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1)))
    assert pool.result.type == TensorType(i8, (4, 4, 4))
    avg = spat.AvgPoolOp(x, FilterGeometry(kernel=(2, 2), strides=(2, 2)), count_include_pad=True)
    assert avg.result.type == TensorType(i8, (4, 4, 4)) and avg.count_include_pad is not None
    assert spat.GlobalAvgPoolOp(x).result.type == TensorType(i8, (1, 1, 4))
    concat = spat.ConcatOp([pool.result, avg.result], axis=2)
    assert concat.result.type == TensorType(i8, (4, 4, 8))
    bias = create_ssa_value(TensorType(i8, (4,)))
    add = spat.VAddOp(x, bias)
    assert add.result.type == x.type and add.broadcasts()
    for op in (pool, avg, concat, add):
        op.verify()


def test_channel_ops_pair_up():
    channel = spat.ChannelNewOp()
    value = create_ssa_value(TensorType(i32, (2, 2)))
    send = spat.ChannelSendOp(value, channel.channel)
    receive = spat.ChannelReceiveOp(channel.channel, value.type)
    ModuleOp([channel, value.owner, send, receive]).verify()
    assert send.channel is channel.channel and send.value is value


def test_tensor_ops_are_pure_and_memref_ops_are_not():
    tensor = create_ssa_value(TensorType(i32, (4,)))
    memref = create_ssa_value(MemRefType(i32, (4,)))
    assert get_effects(spat.VAddOp(tensor, tensor)) == frozenset()
    assert get_effects(spat.VAddOp(memref, memref)) is None
