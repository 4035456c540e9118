"""The `memristor` dialect: device-level crossbar operations on memrefs.

A tile (crossbar) is named by an integer id. `write_to_crossbar` programs a matrix B into it;
`gemm` computes `C(m,n) = A(m,k) · B(k,n)` and `gevm` computes `C(n) = A(k) · B(k,n)` with the
stored B; `barrier` waits until the tile has finished. Names and assembly formats follow the
Cinnamon compiler; each op knows the runtime function it lowers to (`library_call_name`).
"""

from __future__ import annotations

import re
from typing import ClassVar

from xdsl.dialects.builtin import IndexType, IntegerType, MemRefType
from xdsl.ir import Dialect, Operation, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def
from xdsl.utils.exceptions import VerifyException

from cimxdsl.dialects.utils import attribute_text, is_accumulator_type, precision_of, verify_precision

TileIdConstraint = IntegerType | IndexType


def _rank(value: SSAValue) -> int:
    assert isinstance(value.type, MemRefType)
    return value.type.get_num_dims()


class MemristorOp(IRDLOperation):
    """Base of the memristor ops; each takes the tile id as its first operand."""

    def library_call_name(self) -> str:
        """`memristor_<op>` suffixed with its precision, if it has one (`w<weight bits>a<input
        bits>`), and the element types of its memrefs: `memristor_gemm_i32`, `memristor_gemm_i8_i32`
        when int8 inputs accumulate in i32, `memristor_write_to_crossbar_w4a4_i32`."""
        element_types = dict.fromkeys(
            attribute_text(v.type.element_type) for v in self.operands if isinstance(v.type, MemRefType)
        )
        precision = precision_of(self)
        bits = [] if precision is None else ["w{}a{}".format(*precision)]
        return "_".join([self.name.replace(".", "_"), *bits, *element_types])


def call_precision(callee: str) -> tuple[int, int] | None:
    """The precision a runtime function's name carries (`library_call_name`), if any."""
    found = re.search(r"_w(\d+)a(\d+)(?:_|$)", callee)
    return None if found is None else (int(found[1]), int(found[2]))


@irdl_op_definition
class WriteToCrossbarOp(MemristorOp):
    """Programs the matrix `b` (K×N, contiguous) into crossbar `tile_id`."""

    name = "memristor.write_to_crossbar"

    tile_id = operand_def(TileIdConstraint)
    b = operand_def(MemRefType)

    assembly_format = "$tile_id `,` $b attr-dict `:` type($tile_id) `,` type($b)"

    def __init__(self, tile_id: SSAValue | Operation, b: SSAValue | Operation):
        super().__init__(operands=[tile_id, b])

    def verify_(self) -> None:
        verify_precision(self)
        if _rank(self.b) != 2:
            raise VerifyException("'memristor.write_to_crossbar' expects a matrix (rank 2 memref)")


class ProductOp(MemristorOp):
    """Base of `gemm`/`gevm`: `c = a · B` with B stored on the tile."""

    tile_id = operand_def(TileIdConstraint)
    a = operand_def(MemRefType)
    c = operand_def(MemRefType)

    assembly_format = "$tile_id `,` $a `,` $c attr-dict `:` type($tile_id) `,` type($a) `,` type($c)"

    RANK: ClassVar[int]

    def __init__(self, tile_id: SSAValue | Operation, a: SSAValue | Operation, c: SSAValue | Operation):
        super().__init__(operands=[tile_id, a, c])

    def verify_(self) -> None:
        verify_precision(self)
        kind = "matrices (rank 2)" if self.RANK == 2 else "vectors (rank 1)"
        if _rank(self.a) != self.RANK or _rank(self.c) != self.RANK:
            raise VerifyException(f"'{self.name}' expects a and c to be {kind}")
        a_type, c_type = self.a.type, self.c.type
        assert isinstance(a_type, MemRefType) and isinstance(c_type, MemRefType)
        if not is_accumulator_type(a_type.element_type, c_type.element_type):
            raise VerifyException(
                f"'{self.name}' result element type {c_type.element_type} cannot hold products of {a_type.element_type}"
            )
        if self.RANK == 2 and a_type.get_shape()[0] != c_type.get_shape()[0]:
            raise VerifyException(
                f"'{self.name}' a and c must have the same number of rows, got "
                f"{a_type.get_shape()[0]} and {c_type.get_shape()[0]}"
            )


@irdl_op_definition
class GemmOp(ProductOp):
    """`C(m,n) = A(m,k) · B(k,n)` with B the matrix stored on the tile."""

    name = "memristor.gemm"
    RANK: ClassVar[int] = 2


@irdl_op_definition
class GevmOp(ProductOp):
    """`C(n) = A(k) · B(k,n)`: a vector times the matrix stored on the tile."""

    name = "memristor.gevm"
    RANK: ClassVar[int] = 1


@irdl_op_definition
class BarrierOp(MemristorOp):
    """Blocks until tile `tile_id` has finished its operations."""

    name = "memristor.barrier"

    tile_id = operand_def(TileIdConstraint)

    assembly_format = "$tile_id attr-dict `:` type($tile_id)"

    def __init__(self, tile_id: SSAValue | Operation):
        super().__init__(operands=[tile_id])


Memristor = Dialect("memristor", [WriteToCrossbarOp, GemmOp, GevmOp, BarrierOp], [])
