"""The builders of `dialects.utils` that create per-tile ops and types from their parts give what
xDSL's own constructors give."""

from xdsl.dialects import tensor
from xdsl.dialects.builtin import MemRefType, TensorType, f32, i32
from xdsl.ir import Block

from cimxdsl.dialects.utils import memref_type, shaped_type, static_insert, static_slice, with_shape


def test_static_slices_and_inserts_print_as_the_constructors_build_them():
    block = Block(arg_types=[TensorType(f32, (4, 6)), TensorType(f32, (4, 6))])
    source, dest = block.args
    for offsets, sizes in (([0, 2], [4, 3]), ([1, 0], [2, 6]), ([3, 5], [1, 1])):
        ours = static_slice(source, offsets, sizes)
        theirs = tensor.ExtractSliceOp.from_static_parameters(source, offsets, sizes)
        block.add_ops([ours, theirs])
        assert str(ours).split("=", 1)[1] == str(theirs).split("=", 1)[1]
        ours_in = static_insert(ours.result, dest, offsets, sizes)
        theirs_in = tensor.InsertSliceOp.from_static_parameters(ours.result, dest, offsets, sizes)
        block.add_ops([ours_in, theirs_in])
        assert str(ours_in).split("=", 1)[1] == str(theirs_in).split("=", 1)[1]
        ours.verify(), ours_in.verify()


def test_shaped_types_are_shared_per_element_type_and_shape():
    a = shaped_type(TensorType, f32, (3, 4))
    assert a == TensorType(f32, (3, 4)) and shaped_type(TensorType, f32, (3, 4)) is a
    assert shaped_type(MemRefType, f32, (3, 4)) == MemRefType(f32, (3, 4))
    assert shaped_type(TensorType, i32, (3, 4)) != a and shaped_type(TensorType, f32, (4, 3)) != a
    # equal tensor types of their own give one buffer type; other types are their own buffers
    assert memref_type(TensorType(f32, (2, 5))) is memref_type(TensorType(f32, (2, 5))) == MemRefType(f32, (2, 5))
    assert memref_type(i32) is i32
    assert with_shape(MemRefType(i32, (7,)), (2, 3)) == MemRefType(i32, (2, 3))
