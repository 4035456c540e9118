"""`pim-bufferize`: local buffers inside `pim.core`s (M. Miotti, "Channel-Wise Lowering of ONNX-Based Deep Learning Models for ReRAM Architectures", Master's thesis, Politecnico di Milano, 2025, §4.6, "Bufferization").

Every tensor a core computes becomes a memref, i.e. a buffer of the core's local memory:
`tensor.empty` becomes `memref.alloc`; `pim.load`, the spat vector, pooling, concat and channel ops
and `pim.store` work on memrefs (a spat op on memrefs writes a fresh buffer); `spat.apply_filters`
becomes `pim.apply_filters` with an output buffer and a one-pixel accumulation buffer (crossbar
results cannot accumulate in place, Miotti 2025, Algorithm 4.2). Constants (immediates of the core)
and the arith ops on them stay tensors, bridged with `bufferization.to_tensor`/`to_buffer`.

Each kind of op has its rewrite, applied in one forward pass over each core's ops; the bridges
made so far (`Bridges`) are the state they share.
"""

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import bufferization, memref, tensor
from xdsl.dialects.bufferization import TensorFromMemRefConstraint
from xdsl.dialects.builtin import MemRefType, ModuleOp, TensorType, UnitAttr, i32
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from cimxdsl.dialects import pim
from cimxdsl.dialects import spatial as spat
from cimxdsl.dialects.utils import identity_cache, memref_type, shape_of, with_shape
from cimxdsl.transforms.common.errors import pass_error
from cimxdsl.transforms.common.functions import functions_holding

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


@identity_cache
def tensor_type(t: Attribute) -> Attribute:
    """The tensor type a `bufferization.to_tensor` of a buffer of type `t` gives."""
    assert isinstance(t, MemRefType)
    return TensorFromMemRefConstraint.memref_to_tensor(t)


@functools.cache
def alloc_properties() -> dict[str, Attribute]:
    """The properties of a `memref.alloc` without operands (its operand segment sizes)."""
    return dict(memref.AllocOp([], [], MemRefType(i32, (1,))).properties)


def alloc(t: Attribute) -> memref.AllocOp:
    """A `memref.alloc` of the buffer type of `t` (`create`: thousands of them, all alike)."""
    assert isinstance(t, TensorType | MemRefType)
    return memref.AllocOp.create(result_types=[memref_type(t)], properties=alloc_properties())


@dataclass
class Bridges:
    """The bridges between one core's tensors and buffers: one `bufferization.to_buffer` per
    tensor and one `bufferization.to_tensor` per buffer, made before the first op that needs it."""

    buffers: dict[SSAValue, SSAValue] = field(default_factory=dict)
    tensors: dict[SSAValue, SSAValue] = field(default_factory=dict)

    def as_memref(self, value: SSAValue, before: Operation) -> SSAValue:
        if not isinstance(value.type, TensorType):
            return value
        if value not in self.buffers:
            to_buffer = bufferization.ToBufferOp.create(operands=[value], result_types=[memref_type(value.type)])
            Rewriter.insert_op(to_buffer, InsertPoint.before(before))
            self.buffers[value] = to_buffer.results[0]
        return self.buffers[value]

    def as_tensor(self, value: SSAValue, before: Operation) -> SSAValue:
        if not isinstance(value.type, MemRefType):
            return value
        if value not in self.tensors:
            to_tensor = bufferization.ToTensorOp.create(
                operands=[value], result_types=[tensor_type(value.type)], properties={"restrict": UnitAttr()}
            )
            Rewriter.insert_op(to_tensor, InsertPoint.before(before))
            self.tensors[value] = to_tensor.results[0]
        return self.tensors[value]


def replace(op: Operation, new_ops: list[Operation], results: list[SSAValue]) -> None:
    """`op` replaced by `new_ops` (inserted before it), its results by `results`; the new values
    keep no name of the old ones."""
    Rewriter.insert_op(new_ops, InsertPoint.before(op))
    for old, new in zip(op.results, results, strict=True):
        old.replace_all_uses_with(new)
        new.name_hint = None
    Rewriter.erase_op(op)


def empty_to_alloc(op: tensor.EmptyOp) -> None:
    """`tensor.empty` → `memref.alloc`."""
    new = alloc(op.tensor.type)
    replace(op, [new], [new.memref])


def filters_with_buffers(op: spat.ApplyFiltersOp, bridges: Bridges) -> None:
    """`spat.apply_filters` → `pim.apply_filters` into a fresh output buffer, with a one-read
    accumulation buffer (crossbar results cannot accumulate in place)."""
    output = alloc(op.result.type)
    channels = op.products_shape(shape_of(op.result))[-1]
    accumulator = alloc(with_shape(op.result.type, (channels,)))
    Rewriter.insert_op([output, accumulator], InsertPoint.before(op))
    image = bridges.as_memref(op.input, op)
    # the same properties (weights, geometry, packing): `pim.apply_filters` shares them
    operands = [image, output.memref, accumulator.memref]
    filters = pim.ApplyFiltersOp.create(operands=operands, properties=dict(op.properties))
    replace(op, [filters], [output.memref])


def on_buffers(op: Operation, bridges: Bridges) -> None:
    """`pim.load`/`pim.store` or a spat vector, pooling, concat or channel op on tensors → the same
    op on buffers (a spat op writing a fresh one): its tensor operands become their buffers and its
    results buffers, in place (the results keep no name)."""
    if not any(isinstance(v.type, TensorType) for v in (*op.operands, *op.results)):
        return
    for index, value in enumerate(op.operands):
        buffer = bridges.as_memref(value, op)
        if buffer is not value:
            op.operands[index] = buffer
    for result in op.results:
        if isinstance(result.type, TensorType):
            result = Rewriter.replace_value_with_new_type(result, memref_type(result.type))
        result.name_hint = None


def arith_on_tensors(op: Operation, bridges: Bridges) -> None:
    """An arith op (on the core's constants) reads its buffer operands as tensors."""
    for index, value in enumerate(op.operands):
        tensor_value = bridges.as_tensor(value, op)
        if tensor_value is not value:
            op.operands[index] = tensor_value


Rewrite = Callable[[Operation, Bridges], None]


def leave(op: Operation, bridges: Bridges) -> None:
    """An op on buffers already (or on none): left as it is."""


@functools.cache
def rewrite_of(kind: type[Operation]) -> Rewrite | None:
    """The rewrite of the ops of type `kind` (None: a core may not hold them)."""
    if issubclass(kind, tensor.EmptyOp):
        return lambda op, _: empty_to_alloc(op)  # pyright: ignore[reportArgumentType]
    if issubclass(kind, spat.ApplyFiltersOp):
        return filters_with_buffers  # pyright: ignore[reportReturnType]
    if issubclass(kind, _ON_BUFFERS):
        return on_buffers
    if kind.dialect_name() == "arith":
        return arith_on_tensors
    return leave if issubclass(kind, _BUFFERIZED_OPS) else None


def bufferize_core(core: pim.CoreOp) -> None:
    """The tensors `core` computes become its local buffers, op by op in one forward pass (the ops
    it inserts are bufferized already)."""
    ops = list(core.body.block.ops)
    rewrites = [rewrite_of(type(op)) for op in ops]
    for op, rewrite in zip(ops, rewrites, strict=True):
        if rewrite is None:
            raise pass_error("pim-bufferize", "cannot bufferize this op in a pim.core", op)
    bridges = Bridges()
    for op, rewrite in zip(ops, rewrites, strict=True):
        rewrite(op, bridges)  # pyright: ignore[reportOptionalCall]


@dataclass(frozen=True)
class PimBufferizePass(ModulePass):
    """Turn the tensors computed inside `pim.core`s into local buffers; `spat.apply_filters`
    becomes `pim.apply_filters` with output and accumulation buffers."""

    name = "pim-bufferize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in functions_holding(op, pim.CoreOp):
            for core in [o for o in function.body.block.ops if isinstance(o, pim.CoreOp)]:
                bufferize_core(core)
