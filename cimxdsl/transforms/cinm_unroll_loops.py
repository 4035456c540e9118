"""`cinm-unroll-loops`: unroll the `affine.for` nests inside `cinm.compute`s (`tile{mode=loop}`).

Every loop with constant bounds is replaced by a copy of its body per iteration, the induction
variable a constant and the `iter_args` threaded from one copy to the next; slices whose offsets
thereby become constants get static offsets. The result is the unrolled form of `tile`, which the
crossbar lowering schedules tile by tile.
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, arith, tensor
from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from cimxdsl.dialects import cinm
from cimxdsl.transforms.errors import pass_error


def constant_bound(op: affine.ForOp, bound: str) -> int:
    affine_map = getattr(op, f"{bound}BoundMap").data
    operands = getattr(op, f"{bound}BoundOperands")
    if operands or len(affine_map.results) != 1:
        raise pass_error("cinm-unroll-loops", f"the {bound} bound of a loop must be a constant", op)
    return affine_map.eval([], [])[0]


def unroll(op: affine.ForOp) -> None:
    """Replace `op` by one copy of its body per iteration."""
    block = op.body.block
    values: list[SSAValue] = list(op.inits)
    for index in range(constant_bound(op, "lower"), constant_bound(op, "upper"), op.step.value.data):
        constant = arith.ConstantOp(IntegerAttr(index, IndexType()))
        Rewriter.insert_op(constant, InsertPoint.before(op))
        mapping: dict[SSAValue, SSAValue] = {block.args[0]: constant.result}
        mapping.update(zip(block.args[1:], values, strict=True))
        for inner in block.ops:
            if isinstance(inner, affine.YieldOp):
                values = [mapping.get(v, v) for v in inner.operands]
                break
            Rewriter.insert_op(inner.clone(value_mapper=mapping), InsertPoint.before(op))
    for result, value in zip(op.results, values, strict=True):
        result.replace_all_uses_with(value)
    op.detach()
    op.erase()


def static_offsets(op: tensor.ExtractSliceOp | tensor.InsertSliceOp) -> None:
    """Give `op` static offsets where its dynamic ones are constants."""
    dynamic = iter(op.offsets)
    offsets: list[int | SSAValue] = []
    for static in op.static_offsets.get_values():
        if static != DYNAMIC_INDEX:
            offsets.append(static)
            continue
        value = next(dynamic)
        owner = value.owner
        is_constant = isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr)
        offsets.append(owner.value.value.data if is_constant else value)
    if all(isinstance(o, int) for o in offsets) and op.offsets:
        sizes, strides = op.static_sizes.get_values(), op.static_strides.get_values()
        if isinstance(op, tensor.ExtractSliceOp):
            new = tensor.ExtractSliceOp(op.source, offsets, sizes, strides, op.result.type)
        else:
            new = tensor.InsertSliceOp.get(op.source, op.dest, sizes, offsets, strides)
        Rewriter.replace_op(op, new)


@dataclass(frozen=True)
class CinmUnrollLoopsPass(ModulePass):
    """Unroll the `affine.for` loops inside `cinm.compute`s."""

    name = "cinm-unroll-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        loops = [o for o in op.walk() if isinstance(o, affine.ForOp) and in_compute(o)]
        for loop in sorted(loops, key=loop_depth, reverse=True):  # inner loops first
            unroll(loop)
        for slice_op in [o for o in op.walk() if isinstance(o, tensor.ExtractSliceOp | tensor.InsertSliceOp)]:
            if in_compute(slice_op):
                static_offsets(slice_op)
        for constant in [o for o in op.walk() if isinstance(o, arith.ConstantOp) and in_compute(o)]:
            if not constant.result.uses and isinstance(constant.result.type, IndexType):
                constant.detach()
                constant.erase()


def in_compute(op: Operation) -> bool:
    return cinm.enclosing_compute(op) is not None


def loop_depth(op: Operation) -> int:
    """How many `affine.for` loops `op` is nested in."""
    depth, parent = 0, op.parent_op()
    while parent is not None:
        depth += isinstance(parent, affine.ForOp)
        parent = parent.parent_op()
    return depth
