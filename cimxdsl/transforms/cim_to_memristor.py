"""`cim-to-memristor`: lower crossbar ids, futures and barriers to memristor tiles on memrefs.

Each `cim.acquire_crossbar` becomes an integer tile id (0, 1, … in program order, continuing
across devices, so that the layers' weights can stay resident on different crossbars; the runtime
wraps ids beyond the device's crossbars).
A `cim.op.gemm %x, %a, %b` becomes a fresh result tensor, `memristor.write_to_crossbar` of `b` and
`memristor.gemm` into the result's buffer; the result tensor replaces the future. A
`cim.op.gemv %x, %m, %v` (`m·v`) writes `mᵀ` so that `memristor.gevm` (`v·B` with B stored)
computes `m·v`. A tile that already holds the same weights in the same orientation (the same
`StoredTile`) is not written again. A `cim.barrier`
becomes `memristor.barrier` on the tile that computes its future.
"""

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, bufferization, tensor
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, MemRefType, ModuleOp, TensorType, i32, i64
from xdsl.dialects.linalg.ops import TransposeOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from cimxdsl.dialects import cim, memristor
from cimxdsl.transforms.errors import pass_error
from cimxdsl.transforms.scheduling import StoredTile, stored_tile


def to_buffer(value: SSAValue) -> Operation:
    value_type = value.type
    assert isinstance(value_type, TensorType)
    memref = MemRefType(value_type.element_type, value_type.get_shape())
    return bufferization.ToBufferOp.create(operands=[value], result_types=[memref])


def transposed(matrix: SSAValue) -> list[Operation]:
    matrix_type = matrix.type
    assert isinstance(matrix_type, TensorType)
    rows, cols = matrix_type.get_shape()
    init = tensor.EmptyOp([], TensorType(matrix_type.element_type, (cols, rows)))
    return [init, TransposeOp(matrix, init.tensor, DenseArrayBase.from_list(i64, (1, 0)))]


@dataclass
class MemristorLowering:
    """Lowers the cim ops of one block in program order, remembering what each tile holds."""

    tile_index: dict[SSAValue, int] = field(default_factory=dict)
    """tile id value -> its index"""
    held_weights: dict[int, StoredTile] = field(default_factory=dict)
    """tile index -> the weights it holds, as stored"""
    tile_computing: dict[SSAValue, SSAValue] = field(default_factory=dict)
    """result tensor of a lowered crossbar op -> its tile id"""

    def lower_block(self, block: Block) -> None:
        for op in list(block.ops):
            match op:
                case cim.AcquireCrossbarOp():
                    self.lower_acquire(op)
                case cim.GemmOp() | cim.GemvOp():
                    self.lower_product(op)
                case cim.BarrierOp():
                    self.lower_barrier(op)
                case _:
                    for region in op.regions:
                        for inner in region.blocks:
                            self.lower_block(inner)
        for op in reversed(list(block.ops)):
            if isinstance(op, cim.ReleaseCrossbarOp | cim.ReleaseDeviceOp | cim.AcquireDeviceOp):
                Rewriter.erase_op(op)

    def lower_acquire(self, op: cim.AcquireCrossbarOp) -> None:
        """A crossbar no op computes on is dropped; the others get consecutive tile ids."""
        if not any(isinstance(use.operation, cim.GemmOp | cim.GemvOp) for use in op.crossbar_id.uses):
            for use in list(op.crossbar_id.uses):
                Rewriter.erase_op(use.operation)  # its release
            Rewriter.erase_op(op)
            return
        index = len(self.tile_index)
        constant = arith.ConstantOp(IntegerAttr(index, i32))
        constant.result.name_hint = f"tile{index}"
        Rewriter.replace_op(op, constant)
        self.tile_index[constant.result] = index

    def lower_product(self, op: cim.GemmOp | cim.GemvOp) -> None:
        tile = op.crossbar_id
        if tile not in self.tile_index:
            raise pass_error("cim-to-memristor", f"'{op.name}' uses a crossbar that is not acquired in its block")
        for operand in (op.lhs, op.rhs):
            if isinstance(operand.type, cim.FutureType):
                raise pass_error("cim-to-memristor", f"an operand of '{op.name}' is a future no crossbar op computes")
        future = op.result.type
        assert isinstance(future, cim.FutureType)
        result = bufferization.AllocTensorOp(TensorType(future.element_type, future.get_shape()))
        new_ops: list[Operation] = [result]
        inputs, kind = (op.lhs, memristor.GemmOp) if isinstance(op, cim.GemmOp) else (op.rhs, memristor.GevmOp)
        index, needed = self.tile_index[tile], stored_tile(op)
        if self.held_weights.get(index) != needed:
            self.held_weights[index] = needed
            weights = needed.value
            if needed.transposed:
                new_ops += transposed(weights)
                weights = new_ops[-1].results[0]
            stored = to_buffer(weights)
            new_ops += [stored, memristor.WriteToCrossbarOp(tile, stored)]
        input_buffer, result_buffer = to_buffer(inputs), to_buffer(result.tensor)
        new_ops += [input_buffer, result_buffer, kind(tile, input_buffer, result_buffer)]
        Rewriter.replace_op(op, new_ops, [result.tensor])
        self.tile_computing[result.tensor] = tile

    def lower_barrier(self, op: cim.BarrierOp) -> None:
        if op.value not in self.tile_computing:
            raise pass_error(
                "cim-to-memristor", "'cim.barrier' waits for a future that no crossbar op of its block computes"
            )
        Rewriter.replace_op(op, memristor.BarrierOp(self.tile_computing[op.value]), [op.value])


@dataclass(frozen=True)
class CimToMemristorPass(ModulePass):
    """Lower `cim` devices, crossbars and ops to `memristor` tiles on memrefs."""

    name = "cim-to-memristor"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for inner in op.body.blocks:
            MemristorLowering().lower_block(inner)
