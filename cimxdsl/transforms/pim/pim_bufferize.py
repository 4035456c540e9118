"""`pim-bufferize`: local buffers inside `pim.core`s (M. Miotti, "Channel-Wise Lowering of ONNX-Based Deep Learning Models for ReRAM Architectures", Master's thesis, Politecnico di Milano, 2025, §4.6, "Bufferization").

Every tensor a core computes becomes a memref, i.e. a buffer of the core's local memory:
`tensor.empty` becomes `memref.alloc`; `pim.load`, the spat vector, pooling, concat and channel ops
and `pim.store` work on memrefs (a spat op on memrefs writes a fresh buffer); `spat.apply_filters`
becomes `pim.apply_filters` with an output buffer and a one-pixel accumulation buffer (crossbar
results cannot accumulate in place, Miotti 2025, Algorithm 4.2). Constants (immediates of the core)
and the arith ops on them stay tensors, bridged with `bufferization.to_tensor`/`to_buffer`.

Each kind of op is a rewrite pattern, applied in one forward walk of each core; the bridges made
so far (`Bridges`) are the state they share.
"""

import functools
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import bufferization, memref, tensor
from xdsl.dialects.builtin import MemRefType, ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from cimxdsl.dialects import pim
from cimxdsl.dialects import spatial as spat
from cimxdsl.transforms.common.errors import pass_error

_ON_BUFFERS = (
    pim.LoadOp,
    pim.StoreOp,
    spat.VectorBinaryOp,
    spat.VectorUnaryOp,
    spat.PoolOp,
    spat.GlobalAvgPoolOp,
    spat.ConcatOp,
    spat.ExtractRowsOp,
    spat.ExtractColumnsOp,
    spat.ChannelSendOp,
    spat.ChannelReceiveOp,
)
"""Ops that take the buffers of their tensor operands and give buffers."""
_BUFFERIZED_OPS = (memref.AllocOp, pim.ApplyFiltersOp, bufferization.ToTensorOp, bufferization.ToBufferOp, pim.HaltOp)
"""Ops a core may already hold on buffers: the pass leaves them as they are."""


@functools.cache
def memref_type(t: Attribute) -> Attribute:
    """The buffer type of a tensor type (attributes are immutable: one per tensor type)."""
    return MemRefType(t.element_type, t.get_shape()) if isinstance(t, TensorType) else t


def alloc(t: Attribute) -> memref.AllocOp:
    assert isinstance(t, TensorType | MemRefType)
    return memref.AllocOp([], [], memref_type(t))


def bufferizable(op: Operation) -> bool:
    kinds = (tensor.EmptyOp, spat.ApplyFiltersOp, *_ON_BUFFERS, *_BUFFERIZED_OPS)
    return isinstance(op, kinds) or op.dialect_name() == "arith"


@dataclass
class Bridges:
    """The bridges between one core's tensors and buffers: one `bufferization.to_buffer` per
    tensor and one `bufferization.to_tensor` per buffer, made before the first op that needs it."""

    buffers: dict[SSAValue, SSAValue] = field(default_factory=dict)
    tensors: dict[SSAValue, SSAValue] = field(default_factory=dict)

    def as_memref(self, value: SSAValue, rewriter: PatternRewriter) -> SSAValue:
        if not isinstance(value.type, TensorType):
            return value
        if value not in self.buffers:
            to_buffer = bufferization.ToBufferOp.create(operands=[value], result_types=[memref_type(value.type)])
            self.buffers[value] = rewriter.insert(to_buffer).results[0]
        return self.buffers[value]

    def as_tensor(self, value: SSAValue, rewriter: PatternRewriter) -> SSAValue:
        if not isinstance(value.type, MemRefType):
            return value
        if value not in self.tensors:
            self.tensors[value] = rewriter.insert(bufferization.ToTensorOp(value, restrict=True)).results[0]
        return self.tensors[value]


def replace(op: Operation, new_ops: list[Operation], results: list[SSAValue], rewriter: PatternRewriter) -> None:
    """`op` replaced by `new_ops` (inserted before it), its results by `results`; the new values
    keep no name of the old ones."""
    rewriter.insert(new_ops)
    for old, new in zip(op.results, results, strict=True):
        name = new.name_hint
        rewriter.replace_all_uses_with(old, new)
        new.name_hint = name
    rewriter.erase(op)


class EmptyToAlloc(RewritePattern):
    """`tensor.empty` → `memref.alloc`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tensor.EmptyOp, rewriter: PatternRewriter, /):
        new = alloc(op.tensor.type)
        replace(op, [new], [new.memref], rewriter)


@dataclass
class FiltersWithBuffers(RewritePattern):
    """`spat.apply_filters` → `pim.apply_filters` into a fresh output buffer, with a one-read
    accumulation buffer (crossbar results cannot accumulate in place)."""

    bridges: Bridges

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: spat.ApplyFiltersOp, rewriter: PatternRewriter, /):
        output = rewriter.insert(alloc(op.result.type)).results[0]
        channels = op.products_shape(op.result.type.get_shape())[-1]
        accumulator = rewriter.insert(alloc(TensorType(op.result.type.element_type, (channels,)))).results[0]
        image = self.bridges.as_memref(op.input, rewriter)
        # the same properties (weights, geometry, packing): `pim.apply_filters` shares them
        filters = pim.ApplyFiltersOp.create(operands=[image, output, accumulator], properties=dict(op.properties))
        replace(op, [filters], [output], rewriter)


@dataclass
class OnBuffers(RewritePattern):
    """`pim.load`/`pim.store` or a spat vector, pooling, concat or channel op on tensors → the same
    op on buffers (a spat op writing a fresh one)."""

    bridges: Bridges

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, _ON_BUFFERS):
            return
        if not any(isinstance(v.type, TensorType) for v in (*op.operands, *op.results)):
            return
        operands = [self.bridges.as_memref(v, rewriter) for v in op.operands]
        new = type(op).create(
            operands=operands,
            result_types=[memref_type(r.type) for r in op.results],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )
        replace(op, [new], list(new.results), rewriter)


@dataclass
class ArithOnTensors(RewritePattern):
    """An arith op (on the core's constants) reads its buffer operands as tensors."""

    bridges: Bridges

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if op.dialect_name() != "arith" or not any(isinstance(v.type, MemRefType) for v in op.operands):
            return
        for index, value in enumerate(op.operands):
            op.operands[index] = self.bridges.as_tensor(value, rewriter)
        rewriter.notify_op_modified(op)


def bufferize_core(core: pim.CoreOp) -> None:
    """The tensors `core` computes become its local buffers."""
    for op in core.body.block.ops:
        if not bufferizable(op):
            raise pass_error("pim-bufferize", "cannot bufferize this op in a pim.core", op)
    bridges = Bridges()
    patterns = [
        EmptyToAlloc(),
        FiltersWithBuffers(bridges),
        OnBuffers(bridges),
        ArithOnTensors(bridges),
    ]
    walker = PatternRewriteWalker(GreedyRewritePatternApplier(patterns, dce_enabled=False), apply_recursively=False)
    walker.rewrite_region(core.body)


@dataclass(frozen=True)
class PimBufferizePass(ModulePass):
    """Turn the tensors computed inside `pim.core`s into local buffers; `spat.apply_filters`
    becomes `pim.apply_filters` with output and accumulation buffers."""

    name = "pim-bufferize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for core in [o for o in op.walk() if isinstance(o, pim.CoreOp)]:
            bufferize_core(core)
