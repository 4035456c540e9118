"""The `cim` dialect: device-agnostic compute-in-memory operations on acquired crossbars.

A program acquires a device and crossbars on it, issues `cim.op.gemm`/`cim.op.gemv` that return
futures, and waits for them with `cim.barrier`. Names, types, assembly formats and verifier
messages follow the Cinnamon compiler's `cim` dialect. Operands are tensors or futures (Cinnamon's
thesis-era flow, bufferized in `cim-to-memristor`) or memrefs (its main branch, which bufferizes
before `convert-cinm-to-cim`); a barrier gives a tensor or a memref.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    IntAttr,
    IntegerAttr,
    MemRefType,
    TensorType,
    i32,
)
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    param_def,
    prop_def,
    result_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from cimxdsl.dialects.utils import is_accumulator_type, shaped_type, verify_precision


@irdl_attr_definition
class DeviceIdType(ParametrizedAttribute, TypeAttribute):
    """Represents an acquired cim device."""

    name = "cim.deviceId"


@irdl_attr_definition
class CrossbarIdType(ParametrizedAttribute, TypeAttribute):
    """Represents an acquired cim crossbar."""

    name = "cim.crossbarId"


@irdl_attr_definition
class FutureType(ParametrizedAttribute, TypeAttribute):
    """A value a crossbar is computing: `!cim.future<6x6xi32>`, or `!cim.future<i32>` for a scalar."""

    name = "cim.future"

    shape: ArrayAttr[IntAttr] = param_def()
    element_type: Attribute = param_def()

    def __init__(self, element_type: Attribute, shape: Sequence[int]):
        super().__init__(ArrayAttr(IntAttr(d) for d in shape), element_type)

    def get_shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape.data)

    def get_num_dims(self) -> int:
        return len(self.shape.data)

    def verify(self) -> None:
        if any(d < 0 for d in self.get_shape()):
            raise VerifyException(f"'cim.future' dimensions must be static and non-negative, got {self.get_shape()}")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[ArrayAttr[IntAttr], Attribute]:
        with parser.in_angle_brackets():
            pos = parser.pos
            shape, element_type = parser.parse_ranked_shape()
            if any(d < 0 for d in shape):
                parser.raise_error("'cim.future' dimensions must be static", pos, parser.pos)
        return ArrayAttr(IntAttr(d) for d in shape), element_type

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string("".join(f"{d}x" for d in self.get_shape()))
            printer.print_attribute(self.element_type)


CimValue = TensorType | MemRefType
"""What a barrier gives and what a crossbar op reads besides futures: tensors or memrefs."""


def shape_and_element_type(t: Attribute) -> tuple[tuple[int, ...], Attribute]:
    """Shape and element type of a tensor, memref or future (the `OpInput` of Cinnamon's cim ops)."""
    assert isinstance(t, CimValue | FutureType)
    return t.get_shape(), t.element_type


@irdl_op_definition
class AcquireDeviceOp(IRDLOperation):
    """Acquires a cim device with `availableCrossbarCount` crossbars."""

    name = "cim.acquire_device"

    available_crossbar_count = prop_def(
        IntegerAttr.constr(i32), default_value=IntegerAttr(1, i32), prop_name="availableCrossbarCount"
    )
    is_fully_scheduled = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False), prop_name="isFullyScheduled")
    device_id = result_def(DeviceIdType)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict `->` type($device_id)"

    def __init__(self, crossbars: int = 1, fully_scheduled: bool = False):
        super().__init__(
            result_types=[DeviceIdType()],
            properties={
                "availableCrossbarCount": IntegerAttr(crossbars, i32),
                "isFullyScheduled": BoolAttr.from_bool(fully_scheduled),
            },
        )
        self.device_id.name_hint = "cim_dev"

    def verify_(self) -> None:
        if self.available_crossbar_count.value.data < 1:
            raise VerifyException("'cim.acquire_device' needs at least one crossbar (availableCrossbarCount >= 1)")


@irdl_op_definition
class ReleaseDeviceOp(IRDLOperation):
    """Releases an acquired device."""

    name = "cim.release_device"

    device_id = operand_def(DeviceIdType)

    assembly_format = "$device_id attr-dict `:` type($device_id)"

    def __init__(self, device_id: SSAValue | Operation):
        super().__init__(operands=[device_id])


@irdl_op_definition
class AcquireCrossbarOp(IRDLOperation):
    """Acquires one crossbar of a device."""

    name = "cim.acquire_crossbar"

    device_id = operand_def(DeviceIdType)
    crossbar_id = result_def(CrossbarIdType)

    assembly_format = "$device_id attr-dict `:` type($device_id) `->` type($crossbar_id)"

    def __init__(self, device_id: SSAValue | Operation):
        super().__init__(operands=[device_id], result_types=[CrossbarIdType()])
        self.crossbar_id.name_hint = "cim_cbr"


@irdl_op_definition
class ReleaseCrossbarOp(IRDLOperation):
    """Releases an acquired crossbar."""

    name = "cim.release_crossbar"

    crossbar_id = operand_def(CrossbarIdType)

    assembly_format = "$crossbar_id attr-dict `:` type($crossbar_id)"

    def __init__(self, crossbar_id: SSAValue | Operation):
        super().__init__(operands=[crossbar_id])


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """Blocks until the value of the future is present and returns it as a tensor or a memref.

    Barriers also fix where a scheduled crossbar op must have finished."""

    name = "cim.barrier"

    value = operand_def(FutureType)
    result = result_def(CimValue)

    assembly_format = "$value attr-dict `:` type($value) `->` type($result)"

    def __init__(self, value: SSAValue | Operation, kind: type[TensorType | MemRefType] = TensorType):
        super().__init__(operands=[value], result_types=[barrier_type(SSAValue.get(value).type, kind)])

    def verify_(self) -> None:
        future, result = self.value.type, self.result.type
        assert isinstance(future, FutureType) and isinstance(result, CimValue)
        if future.get_shape() != result.get_shape() or future.element_type != result.element_type:
            raise VerifyException(f"'cim.barrier' result type {result} does not match the future {future}")


def barrier_type(future: Attribute, kind: type[TensorType | MemRefType] = TensorType) -> Attribute:
    """The value (a tensor or memref, `kind`) that a barrier on a future of type `future` gives: one
    attribute per element type and shape (`shaped_type`)."""
    assert isinstance(future, FutureType)
    return shaped_type(kind, future.element_type, future.get_shape())


class CimMatrixOp(IRDLOperation):
    """Base of `cim.op.gemm`/`cim.op.gemv`: a crossbar, two tensor, memref or future operands, a future."""

    crossbar_id = operand_def(CrossbarIdType)
    lhs = operand_def(CimValue | FutureType)
    rhs = operand_def(CimValue | FutureType)
    result = result_def(FutureType)

    assembly_format = (
        "$crossbar_id `,` $lhs `,` $rhs attr-dict `:` type($crossbar_id) `,` type($lhs) `,` type($rhs) "
        "`->` type($result)"
    )

    def __init__(
        self,
        crossbar_id: SSAValue | Operation,
        lhs: SSAValue | Operation,
        rhs: SSAValue | Operation,
        result_type: FutureType,
    ):
        super().__init__(operands=[crossbar_id, lhs, rhs], result_types=[result_type])

    def verify_element_types(self) -> None:
        verify_precision(self)
        (_, lhs), (_, rhs), (_, result) = (shape_and_element_type(v.type) for v in (self.lhs, self.rhs, self.result))
        if lhs != rhs:
            raise VerifyException("lhs and rhs must have the same element type")
        if not is_accumulator_type(lhs, result):
            raise VerifyException("operands and result must have the same element type")


@irdl_op_definition
class GemmOp(CimMatrixOp):
    """`result = lhs · rhs` on a crossbar that holds `rhs`."""

    name = "cim.op.gemm"

    def verify_(self) -> None:
        self.verify_element_types()
        lhs, rhs, result = (shape_and_element_type(v.type)[0] for v in (self.lhs, self.rhs, self.result))
        if len(lhs) != 2 or len(rhs) != 2:
            raise VerifyException("lhs and rhs must be matrices (rank 2)")
        if len(result) != 2:
            raise VerifyException("result must be a matrix (rank 2)")
        if lhs[1] != rhs[0] or lhs[0] != result[0] or rhs[1] != result[1]:
            raise VerifyException("operands and result must have compatible shapes")


@irdl_op_definition
class GemvOp(CimMatrixOp):
    """`result = lhs · rhs`: an M×K matrix times a K-vector gives an M-vector."""

    name = "cim.op.gemv"

    def verify_(self) -> None:
        self.verify_element_types()
        lhs, rhs, result = (shape_and_element_type(v.type)[0] for v in (self.lhs, self.rhs, self.result))
        if len(lhs) != 2 or len(rhs) != 1:
            raise VerifyException("lhs must be a matrix (rank 2) and rhs must be a vector (rank 1)")
        if len(result) != 1:
            raise VerifyException("result must be a vector (rank 1)")
        if lhs[1] != rhs[0] or lhs[0] != result[0]:
            raise VerifyException("operands and result must have compatible shapes")


Cim = Dialect(
    "cim",
    [
        AcquireDeviceOp,
        ReleaseDeviceOp,
        AcquireCrossbarOp,
        ReleaseCrossbarOp,
        BarrierOp,
        GemmOp,
        GemvOp,
    ],
    [DeviceIdType, CrossbarIdType, FutureType],
)
