"""The memristor dialect's builders, runtime function names and every rule of its verifiers."""

import pytest
from xdsl.dialects.builtin import IndexType, MemRefType, f32, i8, i32, i64
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.test_value import create_ssa_value

from cimxdsl.dialects import memristor


def memref(*shape: int, element=i32):
    return create_ssa_value(MemRefType(element, shape))


def tile(t=None):
    return create_ssa_value(IndexType() if t is None else t)


def fails(op, message: str) -> None:
    with pytest.raises(VerifyException, match=message):
        op.verify()


def test_ops_build_and_name_their_runtime_functions():
    ops = [
        memristor.WriteToCrossbarOp(tile(), memref(3, 4, element=i8)),
        memristor.GemmOp(tile(i64), memref(2, 3, element=i8), memref(2, 4)),
        memristor.GevmOp(tile(i32), memref(3), memref(4)),
        memristor.BarrierOp(tile()),
    ]
    for op in ops:
        op.verify()
    names = [op.library_call_name() for op in ops]
    assert names == [
        "memristor_write_to_crossbar_i8",
        "memristor_gemm_i8_i32",
        "memristor_gevm_i32",
        "memristor_barrier",
    ]
    assert ops[1].tile_id is ops[1].operands[0] and ops[1].a is ops[1].operands[1] and ops[1].c is ops[1].operands[2]


def test_tile_ids_are_integers_or_indices():
    with pytest.raises(VerifyException):
        memristor.BarrierOp(tile(f32)).verify()


def test_write_to_crossbar_takes_a_matrix():
    fails(memristor.WriteToCrossbarOp(tile(), memref(12)), r"expects a matrix \(rank 2 memref\)")


@pytest.mark.parametrize(
    ("op_type", "a", "c", "message"),
    [
        (memristor.GemmOp, (2, 3), (8,), r"'memristor.gemm' expects a and c to be matrices \(rank 2\)"),
        (memristor.GemmOp, (3,), (2, 4), r"'memristor.gemm' expects a and c to be matrices \(rank 2\)"),
        (memristor.GevmOp, (3,), (1, 4), r"'memristor.gevm' expects a and c to be vectors \(rank 1\)"),
        (memristor.GevmOp, (1, 3), (4,), r"'memristor.gevm' expects a and c to be vectors \(rank 1\)"),
        (memristor.GemmOp, (2, 3), (3, 4), "a and c must have the same number of rows, got 2 and 3"),
    ],
)
def test_product_ranks_and_rows(op_type, a, c, message):
    fails(op_type(tile(), memref(*a), memref(*c)), message)


@pytest.mark.parametrize("op_type", [memristor.GemmOp, memristor.GevmOp])
def test_product_results_hold_the_products(op_type):
    shape = (2, 3) if op_type is memristor.GemmOp else (3,)
    fails(
        op_type(tile(), memref(*shape), memref(*shape, element=i8)),
        "result element type i8 cannot hold products of i32",
    )
    fails(op_type(tile(), memref(*shape), memref(*shape, element=f32)), "result element type f32 cannot hold products")
