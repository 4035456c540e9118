"""What a cim op needs on its crossbar, as the crossbar physically holds it.

A gemm `x·B` streams its inputs through B (K×N) as given; a gemv `M·v` streams `v` through `Mᵀ`
(K×M), so that one input vector gives the M results. One matrix used by both is two crossbar
contents. `cim-to-memristor` writes a crossbar's weights only when the op needs another
`StoredTile` than the crossbar holds, and the list scheduler's cost model charges a write then.
"""

from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from cimxdsl.dialects.cim import CimValue, FutureType, GemmOp, GemvOp


@dataclass(frozen=True)
class StoredTile:
    """A matrix `value`, stored as is or `transposed`: equal tiles are the same crossbar contents."""

    value: SSAValue
    transposed: bool

    @property
    def shape(self) -> tuple[int, int]:
        """(K, N) as stored: K rows take the inputs, N columns give the results."""
        assert isinstance(self.value.type, CimValue | FutureType)
        rows, cols = self.value.type.get_shape()
        return (cols, rows) if self.transposed else (rows, cols)


def stored_tile(operation: Operation) -> StoredTile:
    """The tile the cim `operation` needs on its crossbar."""
    if isinstance(operation, GemmOp):
        return StoredTile(operation.rhs, transposed=False)
    if isinstance(operation, GemvOp):
        return StoredTile(operation.lhs, transposed=True)
    raise ValueError(f"'{operation.name}' stores no weights on a crossbar")
