"""`cim-to-memristor`: lower crossbar ids, futures and barriers to memristor tiles on memrefs.

Each `cim.acquire_crossbar` becomes an integer tile id (0, 1, … in program order, continuing
across devices, so that the layers' weights can stay resident on different crossbars; the runtime
wraps ids beyond the device's crossbars).
A `cim.op.gemm %x, %a, %b` becomes a fresh result tensor (a memref when its barriers give memrefs,
as in Cinnamon's main branch), `memristor.write_to_crossbar` of `b` and `memristor.gemm` into the
result's buffer; the result replaces the future. A
`cim.op.gemv %x, %m, %v` (`m·v`) writes `mᵀ` so that `memristor.gevm` (`v·B` with B stored)
computes `m·v`. A tile that already holds the same weights in the same orientation (the same
`StoredTile`) is not written again. The write and the product keep the precision of the product
(`weight_bits`, `input_bits`): the device programs and reads the tile at those bits. A `cim.barrier`
becomes `memristor.barrier` on the tile that computes its future.
"""

import functools
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, bufferization, memref, tensor
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, MemRefType, ModuleOp, TensorType, i32, i64
from xdsl.dialects.linalg.ops import TransposeOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import Rewriter

from cimxdsl.dialects import cim, memristor
from cimxdsl.dialects.utils import carry_precision, memref_type, shaped_type, with_shape
from cimxdsl.transforms.common.errors import pass_error
from cimxdsl.transforms.common.rewriting import replace_op
from cimxdsl.transforms.memristor.scheduling import StoredTile, stored_tile


def as_buffer(value: SSAValue) -> tuple[list[Operation], SSAValue]:
    """`value` as a memref: a memref as it is, a tensor through `bufferization.to_buffer`."""
    value_type = value.type
    if isinstance(value_type, MemRefType):
        return [], value
    assert isinstance(value_type, TensorType)
    op = bufferization.ToBufferOp.create(operands=[value], result_types=[memref_type(value_type)])
    return [op], op.results[0]


def transposed(matrix: SSAValue) -> tuple[list[Operation], SSAValue]:
    """`matrixᵀ`, a tensor or (for a memref) a new buffer."""
    matrix_type = matrix.type
    assert isinstance(matrix_type, TensorType | MemRefType)
    rows, cols = matrix_type.get_shape()
    permutation = DenseArrayBase.from_list(i64, (1, 0))
    if isinstance(matrix_type, MemRefType):
        init = memref.AllocOp([], [], with_shape(matrix_type, (cols, rows)))
        return [init, TransposeOp(matrix, init.memref, permutation)], init.memref
    init = tensor.EmptyOp([], with_shape(matrix_type, (cols, rows)))
    transpose = TransposeOp(matrix, init.tensor, permutation, init.tensor.type)
    return [init, transpose], transpose.results[0]


def new_result(op: cim.GemmOp | cim.GemvOp) -> Operation:
    """A fresh value for the product: a memref when its barriers give memrefs, else a tensor."""
    future = op.result.type
    assert isinstance(future, cim.FutureType)
    wants_memref = any(
        isinstance(u.operation, cim.BarrierOp) and isinstance(u.operation.result.type, MemRefType)
        for u in op.result.uses
    )
    if wants_memref:
        return memref.AllocOp([], [], shaped_type(MemRefType, future.element_type, future.get_shape()))
    result_type = shaped_type(TensorType, future.element_type, future.get_shape())
    return bufferization.AllocTensorOp.create(result_types=[result_type], properties=alloc_tensor_properties())


@functools.cache
def alloc_tensor_properties() -> dict[str, Attribute]:
    """The properties of a `bufferization.alloc_tensor` without operands (its operand segment
    sizes): one per tile's result, built from their parts (`create`)."""
    return dict(bufferization.AllocTensorOp(TensorType(i32, (1,))).properties)


@dataclass
class TileState:
    """What the lowering knows of the tiles so far, in program order (shared by the patterns)."""

    tile_index: dict[SSAValue, int] = field(default_factory=dict[SSAValue, int])
    """tile id value -> its index"""
    held_weights: dict[int, StoredTile] = field(default_factory=dict[int, StoredTile])
    """tile index -> the weights it holds, as stored"""
    tile_computing: dict[SSAValue, SSAValue] = field(default_factory=dict[SSAValue, SSAValue])
    """result tensor of a lowered crossbar op -> its tile id"""
    device_ops: list[Operation] = field(default_factory=list[Operation])
    """devices and releases, in program order"""


@dataclass
class AcquireToTile(RewritePattern):
    """A crossbar no op computes on is dropped; the others get consecutive tile ids."""

    state: TileState

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cim.AcquireCrossbarOp, rewriter: PatternRewriter) -> None:
        if not any(isinstance(use.operation, cim.GemmOp | cim.GemvOp) for use in op.crossbar_id.uses):
            for use in list(op.crossbar_id.uses):
                rewriter.erase(use.operation)  # its release
            rewriter.erase(op)
            return
        index = len(self.state.tile_index)
        constant = arith.ConstantOp(IntegerAttr(index, i32))
        constant.result.name_hint = f"tile{index}"
        replace_op(rewriter, op, constant)
        self.state.tile_index[constant.result] = index


@dataclass
class ProductToMemristor(RewritePattern):
    """A product on a tile: its weights written unless the tile holds them, then the product."""

    state: TileState

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cim.GemmOp | cim.GemvOp, rewriter: PatternRewriter) -> None:
        tile = op.crossbar_id
        if tile not in self.state.tile_index:
            raise pass_error("cim-to-memristor", f"'{op.name}' uses a crossbar that is not acquired in its block")
        for operand in (op.lhs, op.rhs):
            if isinstance(operand.type, cim.FutureType):
                raise pass_error("cim-to-memristor", f"an operand of '{op.name}' is a future no crossbar op computes")
        result = new_result(op)
        new_ops: list[Operation] = [result]
        kind = memristor.GemmOp if isinstance(op, cim.GemmOp) else memristor.GevmOp
        index, needed = self.state.tile_index[tile], stored_tile(op)
        write = self.state.held_weights.get(index) != needed
        weights = needed.value
        if write:
            self.state.held_weights[index] = needed
            if needed.transposed:
                transposition, weights = transposed(weights)
                new_ops += transposition
        # Buffers in operand order, then the write and the product (Cinnamon's order).
        inputs = op.lhs if isinstance(op, cim.GemmOp) else op.rhs
        order = [
            w
            for v in (op.lhs, op.rhs)
            for w in ([weights] if write and v is needed.value else []) + ([v] if v is inputs else [])
        ]
        buffers: dict[SSAValue, SSAValue] = {}
        for value in [*order, result.results[0]]:
            conversion, buffers[value] = as_buffer(value)
            new_ops += conversion
        if write:  # (`create`: an op per tile, from its parts)
            new_ops.append(memristor.WriteToCrossbarOp.create(operands=[tile, buffers[weights]]))
        new_ops.append(kind.create(operands=[tile, buffers[inputs], buffers[result.results[0]]]))
        carry_precision(op, *new_ops[-1 - write :])
        replace_op(rewriter, op, new_ops, [result.results[0]])
        self.state.tile_computing[result.results[0]] = tile


@dataclass
class BarrierToMemristor(RewritePattern):
    """A barrier on the tile that computes its future."""

    state: TileState

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cim.BarrierOp, rewriter: PatternRewriter) -> None:
        if op.value not in self.state.tile_computing:
            raise pass_error(
                "cim-to-memristor", "'cim.barrier' waits for a future that no crossbar op of its block computes"
            )
        barrier = memristor.BarrierOp.create(operands=[self.state.tile_computing[op.value]])
        replace_op(rewriter, op, barrier, [op.value])


@dataclass
class CollectDeviceOps(RewritePattern):
    """Devices and releases have no memristor counterpart: collected, then erased after the walk."""

    state: TileState

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, cim.ReleaseCrossbarOp | cim.ReleaseDeviceOp | cim.AcquireDeviceOp):
            self.state.device_ops.append(op)


@dataclass(frozen=True)
class CimToMemristorPass(ModulePass):
    """Lower `cim` devices, crossbars and ops to `memristor` tiles on memrefs."""

    name = "cim-to-memristor"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        state = TileState()
        patterns = [AcquireToTile(state), ProductToMemristor(state), BarrierToMemristor(state), CollectDeviceOps(state)]
        applier = GreedyRewritePatternApplier(patterns, dce_enabled=False)
        PatternRewriteWalker(applier, apply_recursively=False).rewrite_module(op)
        for device_op in reversed(state.device_ops):  # users first
            if device_op.parent is not None:
                Rewriter.erase_op(device_op)
