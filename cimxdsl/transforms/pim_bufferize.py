"""`pim-bufferize`: local buffers inside `pim.core`s (M. Miotti, "Channel-Wise Lowering of ONNX-Based Deep Learning Models for ReRAM Architectures", Master's thesis, Politecnico di Milano, 2025, §4.6, "Bufferization").

Every tensor a core computes becomes a memref, i.e. a buffer of the core's local memory:
`tensor.empty` becomes `memref.alloc`; `pim.load`, the spat vector, pooling, concat and channel ops
and `pim.store` work on memrefs (a spat op on memrefs writes a fresh buffer); `spat.apply_filters`
becomes `pim.apply_filters` with an output buffer and a one-pixel accumulation buffer (crossbar
results cannot accumulate in place, Miotti 2025, Algorithm 4.2). Constants (immediates of the core)
and the arith ops on them stay tensors, bridged with `bufferization.to_tensor`/`to_buffer`.
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, bufferization, memref, tensor
from xdsl.dialects.builtin import MemRefType, ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass

from cimxdsl.dialects import pim
from cimxdsl.dialects import spatial as spat
from cimxdsl.transforms.errors import pass_error

_SPATIAL_OPS = (
    spat.VectorBinaryOp,
    spat.VectorUnaryOp,
    spat.PoolOp,
    spat.GlobalAvgPoolOp,
    spat.ConcatOp,
    spat.ExtractRowsOp,
    spat.ChannelSendOp,
    spat.ChannelReceiveOp,
)


def memref_type(t: Attribute) -> Attribute:
    return MemRefType(t.element_type, t.get_shape()) if isinstance(t, TensorType) else t


def alloc(t: Attribute) -> memref.AllocOp:
    assert isinstance(t, TensorType | MemRefType)
    return memref.AllocOp.get(t.element_type, shape=t.get_shape())


class CoreBufferizer:
    def __init__(self, core: pim.CoreOp):
        self.core = core
        self.new_ops: list[Operation] = []
        self.rep: dict[SSAValue, SSAValue] = {}
        self.buffers: dict[SSAValue, SSAValue] = {}
        self.tensors: dict[SSAValue, SSAValue] = {}

    def emit(self, op: Operation) -> Operation:
        self.new_ops.append(op)
        return op

    def as_memref(self, value: SSAValue) -> SSAValue:
        new = self.rep.get(value, value)
        if not isinstance(new.type, TensorType):
            return new
        if new not in self.buffers:
            to_buffer = bufferization.ToBufferOp.create(operands=[new], result_types=[memref_type(new.type)])
            self.buffers[new] = self.emit(to_buffer).results[0]
        return self.buffers[new]

    def as_tensor(self, value: SSAValue) -> SSAValue:
        new = self.rep.get(value, value)
        if not isinstance(new.type, MemRefType):
            return new
        if new not in self.tensors:
            self.tensors[new] = self.emit(bufferization.ToTensorOp(new, restrict=True)).results[0]
        return self.tensors[new]

    def run(self) -> None:
        block = self.core.body.block
        old_ops = list(block.ops)
        for op in old_ops:
            self.rewrite(op)
        for op in reversed(old_ops):
            op.detach()
            op.erase(safe_erase=False)
        block.add_ops(self.new_ops)

    def rewrite(self, op: Operation) -> None:
        if isinstance(op, tensor.EmptyOp):
            self.rep[op.tensor] = self.emit(alloc(op.tensor.type)).results[0]
        elif isinstance(op, pim.LoadOp):
            load = pim.LoadOp(
                self.rep.get(op.global_, op.global_),
                self.as_memref(op.dst),
                op.global_src_offset.value.data,
                op.size.value.data,
            )
            self.rep[op.result] = self.emit(load).result
        elif isinstance(op, spat.ApplyFiltersOp):
            output = self.emit(alloc(op.result.type)).results[0]
            channels = op.result.type.get_shape()[-1]
            accumulator = self.emit(memref.AllocOp.get(op.result.type.element_type, shape=(channels,))).results[0]
            self.emit(
                pim.ApplyFiltersOp(
                    self.as_memref(op.input), output, accumulator, op.weight_index_list(), op.geometry(), op.packing()
                )
            )
            self.rep[op.result] = output
        elif isinstance(op, _SPATIAL_OPS):
            operands = [
                self.as_memref(v) if isinstance(v.type, TensorType) else self.rep.get(v, v) for v in op.operands
            ]
            new = type(op).create(
                operands=operands,
                result_types=[memref_type(r.type) for r in op.results],
                properties=dict(op.properties),
                attributes=dict(op.attributes),
            )
            self.emit(new)
            self.rep.update(zip(op.results, new.results))
        elif isinstance(op, pim.StoreOp):
            store = pim.StoreOp(
                self.as_memref(op.src),
                self.rep.get(op.global_, op.global_),
                op.global_dst_offset.value.data,
                op.size.value.data,
            )
            self.emit(store)
        elif isinstance(op, pim.HaltOp) or (isinstance(op, arith.ConstantOp) and not op.operands):
            self.rep.update(zip(op.results, self.emit(op.clone()).results))
        elif op.dialect_name() == "arith":
            new = op.clone(value_mapper={v: self.as_tensor(v) for v in op.operands})
            self.rep.update(zip(op.results, self.emit(new).results))
        elif isinstance(op, memref.AllocOp | pim.ApplyFiltersOp | bufferization.ToTensorOp | bufferization.ToBufferOp):
            new = op.clone(value_mapper={v: self.rep.get(v, v) for v in op.operands})
            self.rep.update(zip(op.results, self.emit(new).results))
        else:
            raise pass_error("pim-bufferize", "cannot bufferize this op in a pim.core", op)


@dataclass(frozen=True)
class PimBufferizePass(ModulePass):
    """Turn the tensors computed inside `pim.core`s into local buffers; `spat.apply_filters`
    becomes `pim.apply_filters` with output and accumulation buffers."""

    name = "pim-bufferize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for core in [o for o in op.walk() if isinstance(o, pim.CoreOp)]:
            CoreBufferizer(core).run()
