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
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from cimxdsl.dialects import cinm
from cimxdsl.transforms.common.errors import pass_error
from cimxdsl.transforms.common.rewriting import replace_op


def constant_bound(op: affine.ForOp, bound: str) -> int:
    affine_map = getattr(op, f"{bound}BoundMap").data
    operands = getattr(op, f"{bound}BoundOperands")
    if operands or len(affine_map.results) != 1:
        raise pass_error("cinm-unroll-loops", f"the {bound} bound of a loop must be a constant", op)
    return affine_map.eval([], [])[0]


class UnrollLoop(RewritePattern):
    """A loop inside a `cinm.compute` as one copy of its body per iteration."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: affine.ForOp, rewriter: PatternRewriter) -> None:
        if not in_compute(op):
            return
        block = op.body.block
        values: list[SSAValue] = list(op.inits)
        for index in range(constant_bound(op, "lower"), constant_bound(op, "upper"), op.step.value.data):
            constant = arith.ConstantOp(IntegerAttr(index, IndexType()))
            rewriter.insert(constant, InsertPoint.before(op))
            mapping: dict[SSAValue, SSAValue] = {block.args[0]: constant.result}
            mapping.update(zip(block.args[1:], values, strict=True))
            for inner in block.ops:
                if isinstance(inner, affine.YieldOp):
                    values = [mapping.get(v, v) for v in inner.operands]
                    break
                rewriter.insert(inner.clone(value_mapper=mapping), InsertPoint.before(op))
        replace_op(rewriter, op, [], values)


class StaticOffsets(RewritePattern):
    """A slice inside a `cinm.compute` with static offsets where its dynamic ones are constants."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tensor.ExtractSliceOp | tensor.InsertSliceOp, rewriter: PatternRewriter) -> None:
        if not in_compute(op):
            return
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
            replace_op(rewriter, op, new)


class EraseUnusedIndex(RewritePattern):
    """An index constant inside a `cinm.compute` that nothing uses (the loops' counters)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.ConstantOp, rewriter: PatternRewriter) -> None:
        if not op.result.uses and isinstance(op.result.type, IndexType) and in_compute(op):
            rewriter.erase(op)


@dataclass(frozen=True)
class CinmUnrollLoopsPass(ModulePass):
    """Unroll the `affine.for` loops inside `cinm.compute`s."""

    name = "cinm-unroll-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # inner loops first (a loop's body is walked before the loop), then the slices, then the counters
        PatternRewriteWalker(UnrollLoop(), walk_regions_first=True, apply_recursively=False).rewrite_module(op)
        PatternRewriteWalker(StaticOffsets(), apply_recursively=False).rewrite_module(op)
        PatternRewriteWalker(EraseUnusedIndex(), apply_recursively=False).rewrite_module(op)


def in_compute(op: Operation) -> bool:
    return cinm.enclosing_compute(op) is not None
