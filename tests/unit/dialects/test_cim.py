"""The cim dialect's builders and every rule of its verifiers."""

import pytest
from xdsl.dialects.builtin import ModuleOp, TensorType, f32, i8, i32
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.test_value import create_ssa_value

from cimxdsl.dialects import cim
from cimxdsl.dialects.cim import FutureType


def value(t):
    return create_ssa_value(t)


def fails(op, message: str) -> None:
    with pytest.raises(VerifyException, match=message):
        op.verify()


def test_a_layer_acquires_a_device_and_crossbars_and_waits_for_futures():
    device = cim.AcquireDeviceOp(crossbars=4, fully_scheduled=True)
    crossbar = cim.AcquireCrossbarOp(device)
    a, b = value(TensorType(i8, (2, 3))), value(TensorType(i8, (3, 4)))
    gemm = cim.GemmOp(crossbar, a, b, FutureType(i32, (2, 4)))
    barrier = cim.BarrierOp(gemm)
    ops = [
        device,
        crossbar,
        a.owner,
        b.owner,
        gemm,
        barrier,
        cim.ReleaseCrossbarOp(crossbar),
        cim.ReleaseDeviceOp(device),
    ]
    ModuleOp(ops).verify()
    assert device.available_crossbar_count.value.data == 4 and device.is_fully_scheduled.value
    assert device.device_id.name_hint == "cim_dev" and crossbar.crossbar_id.name_hint == "cim_cbr"
    assert barrier.result.type == TensorType(i32, (2, 4))


def test_future_type_shape():
    future = FutureType(i32, (6, 6))
    assert future.get_shape() == (6, 6) and future.get_num_dims() == 2 and future.element_type == i32
    assert FutureType(i32, ()).get_shape() == ()
    assert cim.shape_and_element_type(future) == ((6, 6), i32)
    assert cim.shape_and_element_type(TensorType(i8, (3,))) == ((3,), i8)


def test_future_dimensions_must_be_static():
    with pytest.raises(VerifyException, match="dimensions must be static and non-negative"):
        FutureType(i32, (-1, 2))


def test_acquire_device_needs_a_crossbar():
    fails(cim.AcquireDeviceOp(crossbars=0), r"needs at least one crossbar \(availableCrossbarCount >= 1\)")


def test_barrier_result_must_match_the_future():
    future = value(FutureType(i32, (2, 2)))
    for result in (TensorType(i32, (2, 3)), TensorType(f32, (2, 2))):
        op = cim.BarrierOp.create(operands=[future], result_types=[result])
        fails(op, f"result type {result} does not match the future")


def product(op_type, lhs, rhs, result):
    crossbar = value(cim.CrossbarIdType())
    return op_type(crossbar, value(lhs), value(rhs), result)


@pytest.mark.parametrize("op_type", [cim.GemmOp, cim.GemvOp])
def test_element_types(op_type):
    rhs_shape = (3, 4) if op_type is cim.GemmOp else (3,)
    result_shape = (2, 4) if op_type is cim.GemmOp else (2,)
    lhs = TensorType(i8, (2, 3))
    fails(
        product(op_type, lhs, TensorType(i32, rhs_shape), FutureType(i32, result_shape)),
        "lhs and rhs must have the same element type",
    )
    fails(
        product(op_type, lhs, TensorType(i8, rhs_shape), FutureType(f32, result_shape)),
        "operands and result must have the same element type",
    )
    product(op_type, lhs, FutureType(i8, rhs_shape), FutureType(i32, result_shape)).verify()  # a future operand


@pytest.mark.parametrize(
    ("lhs", "rhs", "result", "message"),
    [
        ((2, 3), (3,), (2, 4), r"lhs and rhs must be matrices \(rank 2\)"),
        ((2, 3), (3, 4), (8,), r"result must be a matrix \(rank 2\)"),
        ((2, 3), (2, 4), (2, 4), "operands and result must have compatible shapes"),
        ((2, 3), (3, 4), (3, 4), "operands and result must have compatible shapes"),
        ((2, 3), (3, 4), (2, 5), "operands and result must have compatible shapes"),
    ],
)
def test_gemm_shapes(lhs, rhs, result, message):
    fails(product(cim.GemmOp, TensorType(i32, lhs), TensorType(i32, rhs), FutureType(i32, result)), message)


@pytest.mark.parametrize(
    ("lhs", "rhs", "result", "message"),
    [
        ((2, 3), (3, 1), (2,), r"lhs must be a matrix \(rank 2\) and rhs must be a vector \(rank 1\)"),
        ((2, 3), (3,), (2, 1), r"result must be a vector \(rank 1\)"),
        ((2, 3), (4,), (2,), "operands and result must have compatible shapes"),
        ((2, 3), (3,), (3,), "operands and result must have compatible shapes"),
    ],
)
def test_gemv_shapes(lhs, rhs, result, message):
    fails(product(cim.GemvOp, TensorType(i32, lhs), TensorType(i32, rhs), FutureType(i32, result)), message)
