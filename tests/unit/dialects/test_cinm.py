"""The cinm dialect's builders and every rule of its verifiers."""

import pytest
from xdsl.dialects import test as test_dialect
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    BoolAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerAttr,
    ModuleOp,
    Region,
    TensorType,
    f32,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Block
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.test_value import create_ssa_value

from cimxdsl.dialects import cinm
from cimxdsl.dialects.cinm import ElementwiseKind, ReduceMethod, ScanMethod, SimilarityMetric


def tensor(*shape: int, element=i32):
    return create_ssa_value(TensorType(element, shape))


def fails(op, message: str) -> None:
    with pytest.raises(VerifyException, match=message):
        op.verify()


# builders ----------------------------------------------------------------------------------------
def test_products_infer_their_result_types():
    a, b, v = tensor(6, 4, element=i8), tensor(4, 3, element=i8), tensor(4, element=i8)
    gemm, gemv = cinm.GemmOp(a, b), cinm.GemvOp(a, v)
    assert gemm.result.type == TensorType(i8, (6, 3)) and gemm.bias is None
    assert gemv.result.type == TensorType(i8, (6,))
    wide = cinm.GemmOp(a, b, tensor(6, 3), TensorType(i32, (6, 3)))
    assert wide.bias is not None
    for op in (gemm, gemv, wide):
        op.verify()


def test_im2col_infers_the_patch_matrix():
    op = cinm.Im2colOp(tensor(2, 3, 8, 7), kernel=(3, 2), strides=(2, 1), dilations=(1, 2))
    # 8 rows: (8 - 3) // 2 + 1 = 3; 7 columns: (7 - 2 - 1) // 1 + 1 = 5.
    assert op.result.type == TensorType(i32, (2 * 3 * 5, 3 * 3 * 2))
    assert op.kernel.get_values() == (3, 2) and op.dilations.get_values() == (1, 2)
    op.verify()
    assert cinm.im2col_shape((1, 1, 2, 2), (3, 3), (1, 1), (1, 1)) is None


def test_elementwise_ops_take_the_type_of_lhs():
    a, s = tensor(2, 3, element=f32), create_ssa_value(f32)
    for op_type in (cinm.AddOp, cinm.SubOp, cinm.MulOp, cinm.DivOp):
        op = op_type(a, a)
        assert op.result.type == a.type
        op.verify()
    for op_type in (cinm.AddsOp, cinm.SubsOp, cinm.MulsOp, cinm.DivsOp):
        op = op_type(a, s)
        assert op.result.type == a.type
        op.verify()


def test_compute_yields_its_results():
    a = tensor(2, 2)
    add = cinm.AddOp(a, a)
    compute = cinm.ComputeOp([a.type], Region(Block([add, cinm.YieldOp(add)])))
    ModuleOp([a.owner, compute]).verify()
    assert compute.workgroup_shape.get_values() == (2, 32, 16)  # Cinnamon's default


def test_quantize_and_dequantize_builders():
    x = tensor(2, 3, element=f32)
    scale = DenseIntOrFPElementsAttr.from_list(TensorType(f32, (3,)), [0.5, 1.0, 2.0])
    quantize = cinm.QuantizeOp(x, scale, TensorType(i8, (2, 3)), bits=4, signed=False, axis=1)
    assert quantize.bits.value.data == 4 and not quantize.signed.value
    dequantize = cinm.DequantizeOp(quantize.result, scale, TensorType(f32, (2, 3)))
    quantize.verify()
    dequantize.verify()


def test_sim_search_builder():
    a = tensor(4, element=f32)
    op = cinm.SimSearchOp(SimilarityMetric.COS, 2, a, a)
    assert op.metric.data is SimilarityMetric.COS and op.k.value.data == 2
    assert op.result_indices.type == TensorType(IndexType(), (DYNAMIC_INDEX,))
    op.verify()


# verifiers ---------------------------------------------------------------------------------------
def test_compute_verifier():
    a = tensor(2)
    fails(cinm.ComputeOp([a.type], Region(Block([test_dialect.TestTermOp()]))), "body must end with 'cinm.yield'")
    fails(
        cinm.ComputeOp([TensorType(i32, (3,))], Region(Block([cinm.YieldOp(a)]))),
        r"yields \(tensor<2xi32>\) but has results \(tensor<3xi32>\)",
    )


def test_yield_outside_compute():
    with pytest.raises(VerifyException, match=r"expects parent op to be one of 'cinm\.compute', 'cinm\.compute_block'"):
        ModuleOp([cinm.YieldOp()]).verify()


@pytest.mark.parametrize(
    ("left", "right", "bias", "result", "message"),
    [
        (tensor(6), tensor(6, 2), None, TensorType(i32, (1, 2)), r"operands and result must be matrices \(rank 2\)"),
        (tensor(2, 3), tensor(3, 2), None, TensorType(i32, (2, 2, 1)), "operands and result must be matrices"),
        (tensor(2, 3), tensor(3, 2, element=i16), None, TensorType(i32, (2, 2)), "left and right must have the same"),
        (
            tensor(2, 3),
            tensor(3, 2),
            None,
            TensorType(i8, (2, 2)),
            "result element type i8 cannot hold products of i32",
        ),
        (
            tensor(6, 4),
            tensor(5, 2),
            None,
            TensorType(i32, (6, 2)),
            "inner dimensions differ: left is 6x4, right is 5x2",
        ),
        (tensor(6, 4), tensor(4, 2), None, TensorType(i32, (6, 3)), "result must be 6x2, got 6x3"),
        (tensor(6, 4), tensor(4, 2), tensor(6, 3), TensorType(i32, (6, 2)), r"bias type tensor<6x3xi32> must be the result type tensor<6x2xi32>"),
    ],
)
def test_gemm_verifier(left, right, bias, result, message):
    fails(cinm.GemmOp(left, right, bias, result), message)


@pytest.mark.parametrize(
    ("left", "right", "result", "message"),
    [
        (tensor(6, 4), tensor(4, 2), TensorType(i32, (6,)), r"left must be a matrix \(rank 2\) and right a vector"),
        (tensor(6, 4), tensor(4), TensorType(i32, (6, 1)), r"result must be a vector \(rank 1\)"),
        (tensor(6, 4), tensor(4, element=i8), TensorType(i32, (6,)), "left and right must have the same element type"),
        (tensor(6, 4), tensor(4), TensorType(f32, (6,)), "result element type f32 cannot hold products of i32"),
        (tensor(6, 4), tensor(3), TensorType(i32, (6,)), "inner dimensions differ: matrix is 6x4, vector has 3"),
        (tensor(6, 4), tensor(4), TensorType(i32, (4,)), r"result must have 6 elements \(the matrix rows\), got 4"),
    ],
)
def test_gemv_verifier(left, right, result, message):
    fails(cinm.GemvOp(left, right, None, result), message)


def im2col(input_shape, result_shape, kernel=(3, 3), strides=(1, 1), element=i32):
    return cinm.Im2colOp.create(
        operands=[tensor(*input_shape)],
        result_types=[TensorType(element, result_shape)],
        properties={
            "kernel": DenseArrayBase.from_list(i64, kernel),
            "strides": DenseArrayBase.from_list(i64, strides),
            "dilations": DenseArrayBase.from_list(i64, (1, 1)),
        },
    )


def test_im2col_verifier():
    fails(im2col((4, 8, 8), (36, 36)), r"input must be an NCHW image \(rank 4\), got rank 3")
    fails(im2col((1, 4, 8, 8), (36, 36), kernel=(3, 0)), "kernel, strides and dilations must be two positive integers")
    fails(im2col((1, 4, 8, 8), (36, 36), strides=(1,)), "kernel, strides and dilations must be two positive integers")
    fails(im2col((1, 4, 2, 2), (1, 36)), r"kernel \[3, 3\] does not fit the 2x2 image")
    fails(im2col((1, 4, 8, 8), (36, 35)), "result must be 36x36 of i32, got tensor<36x35xi32>")
    fails(im2col((1, 4, 8, 8), (36, 36), element=i8), "result must be 36x36 of i32, got tensor<36x36xi8>")
    im2col((1, 4, 8, 8), (36, 36)).verify()


def scale(*values: float):
    return DenseIntOrFPElementsAttr.from_list(TensorType(f32, (len(values),)), list(values))


def test_quantize_verifier():
    x = tensor(2, 3, element=f32)
    fails(cinm.QuantizeOp(x, scale(1, 2), TensorType(i8, (2, 3)), axis=1), "has 2 scales, which must match dimension 1")
    fails(cinm.QuantizeOp(x, scale(1, 2), TensorType(i8, (2, 3)), axis=2), "has 2 scales, which must match dimension 2")
    fails(cinm.QuantizeOp(x, scale(1), TensorType(f32, (2, 3))), "result must be a tensor of integers")
    fails(cinm.QuantizeOp(x, scale(1), TensorType(i8, (3, 2))), "result must have the input's shape")
    fails(cinm.QuantizeOp(x, scale(1), TensorType(i8, (2, 3)), bits=9), r"bits must be in 1..8, got 9")
    fails(cinm.QuantizeOp(x, scale(1), TensorType(i8, (2, 3)), bits=0), r"bits must be in 1..8, got 0")
    cinm.QuantizeOp(x, scale(1, 2), TensorType(i8, (2, 3)), axis=0).verify()


def test_dequantize_verifier():
    x = tensor(2, 3)
    fails(cinm.DequantizeOp(x, scale(1, 2, 3), TensorType(f32, (2, 3)), axis=0), "has 3 scales")
    fails(cinm.DequantizeOp(x, scale(1), TensorType(f32, (6,))), "result must have the input's shape")


def test_elementwise_binary_operands_and_result_share_one_type():
    fails(cinm.AddOp.create(operands=[tensor(2), tensor(3)], result_types=[TensorType(i32, (2,))]), "T")


def test_elementwise_scalar_verifier():
    a = tensor(2)
    fails(
        cinm.AddsOp.create(operands=[a, create_ssa_value(i32)], result_types=[TensorType(i32, (3,))]),
        "result type must match lhs type tensor<2xi32>",
    )
    fails(cinm.MulsOp(a, create_ssa_value(i64)), r"rhs must have the element type of lhs \(i32\), got i64")


def unary(op_type, attribute, operand, result_type, **properties):
    return op_type.create(
        operands=[operand], result_types=[result_type], properties={"method": attribute, **properties}
    )


def test_element_wise_and_scan_keep_the_operand_type():
    a = tensor(4, element=f32)
    unary(cinm.ElementWiseOp, cinm.ElementwiseKindAttr(ElementwiseKind.ERF), a, a.type).verify()
    unary(cinm.ScanOp, cinm.ScanMethodAttr(ScanMethod.ADD), a, a.type).verify()
    with pytest.raises(VerifyException):
        unary(cinm.ElementWiseOp, cinm.ElementwiseKindAttr(ElementwiseKind.EXP), a, TensorType(f32, (5,))).verify()
    with pytest.raises(VerifyException):
        unary(cinm.ScanOp, cinm.ScanMethodAttr(ScanMethod.MUL), a, TensorType(i32, (4,))).verify()


def test_reduce_verifier():
    add = cinm.ReduceMethodAttr(ReduceMethod.ADD)

    def reduce(operand, result_type, dimensions=(-1,)):
        return unary(cinm.ReduceOp, add, operand, result_type, dimensions=DenseArrayBase.from_list(i64, dimensions))

    reduce(tensor(4), i32).verify()
    reduce(tensor(4, 2), TensorType(i32, (2,)), (0,)).verify()
    fails(reduce(create_ssa_value(TensorType(i32, ())), i32), "input must have rank 1 or more")
    fails(reduce(tensor(4, 2), TensorType(i32, (4,)), (2,)), "dimension 2 is out of range for rank 2")
    fails(reduce(tensor(4, 2), TensorType(i32, (4,)), (-3,)), "dimension -3 is out of range for rank 2")
    fails(reduce(tensor(4), f32), "result element type f32 must match the input's i32")
    fails(reduce(tensor(4, 2), TensorType(i32, (2,)), (0, -2)), r"dimensions must be distinct, got \[0, -2\]")
    fails(
        reduce(tensor(4, 2), TensorType(i32, (7,)), (0,)),
        r"result must have shape \[2\] \(the input's without the reduced dimensions\), got tensor<7xi32>",
    )
    fails(reduce(tensor(4, 2), i32, (0,)), r"result must have shape \[2\]")
    reduce(tensor(4, 2), i32, (0, 1)).verify()


def test_top_k_verifier():
    def top_k(values, indices):
        return cinm.TopKOp.create(operands=[tensor(4), create_ssa_value(i64)], result_types=[values, indices])

    dynamic = (DYNAMIC_INDEX,)
    top_k(TensorType(i32, dynamic), TensorType(IndexType(), dynamic)).verify()
    fails(
        top_k(TensorType(f32, dynamic), TensorType(IndexType(), dynamic)), "values must have the input's element type"
    )
    fails(top_k(TensorType(i32, dynamic), TensorType(i32, dynamic)), "indices must be a tensor of index")


def test_sim_search_verifier():
    op = cinm.SimSearchOp(SimilarityMetric.DOT, 2, tensor(4), tensor(5))
    fails(op, "left and right must have the same type")


def test_pop_count_verifier():
    def pop_count(operand):
        return cinm.PopCountOp.create(operands=[operand], result_types=[i64])

    pop_count(tensor(8, element=i1)).verify()
    fails(pop_count(tensor(8)), "operand must be a tensor of i1")


def test_transpose_builds_from_operands():
    op = cinm.TransposeOp.create(operands=[tensor(2, 3), tensor(2)], result_types=[TensorType(i32, (3, 2))])
    op.verify()
    assert op.input1.type == TensorType(i32, (2, 3))


def test_quantize_defaults():
    op = cinm.QuantizeOp(tensor(2, element=f32), scale(1), TensorType(i8, (2,)))
    assert op.bits == IntegerAttr(8, i64) and op.signed == BoolAttr.from_bool(True) and op.axis.value.data == 1
