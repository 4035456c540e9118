"""`cinm-isolate-compute`: wrap matrix products that sit outside any `cinm.compute` in one.

Only the ops inside a `cinm.compute` are offloaded by `cinm-to-cim`, so a stray `cinm.op.gemm`
would otherwise stay a host op. Each run of consecutive stray ops that `cinm-to-cim` lowers
(products, the element-wise ops around them, im2col) becomes one compute if it holds a product,
yielding the values used after the run (as Cinnamon's compute-block isolation does). Ops already
inside a compute, and the host-side ops of quantized programs (quantize, dequantize), stay.
A `cinm.compute_block` (Cinnamon's compute isolated from above) becomes a `cinm.compute` first.
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from cimxdsl.dialects import cinm
from cimxdsl.transforms.common.rewriting import replace_op
from cimxdsl.transforms.memristor.cinm_to_cim import HOST_ARITH, is_stray_product

GROUPED = (cinm.GemmOp, cinm.GemvOp, cinm.Im2colOp, *HOST_ARITH)
"""The ops a compute around a product takes along."""


def stray_run(product: Operation) -> list[Operation]:
    """The maximal run of consecutive `GROUPED` ops around the stray `product` (outside any compute)."""
    first = last = product
    while isinstance(first.prev_op, GROUPED):
        first = first.prev_op
    while isinstance(last.next_op, GROUPED):
        last = last.next_op
    run = [first]
    while run[-1] is not last:
        run.append(run[-1].next_op)
    return run


def _within(op: Operation | None, ops: set[Operation]) -> bool:
    """Whether `op` is one of `ops` or nested in one of them."""
    while op is not None:
        if op in ops:
            return True
        op = op.parent_op()
    return False


def escaping_results(run: list[Operation]) -> list[SSAValue]:
    """Results of the run that an op outside it uses."""
    inside = set(run)
    return [
        result for op in run for result in op.results if any(not _within(use.operation, inside) for use in result.uses)
    ]


class IsolateStrayRun(RewritePattern):
    """Move the run of a stray product into a new `cinm.compute` in its place; later uses take the
    compute's results."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not is_stray_product(op):
            return
        run = stray_run(op)
        escaping = escaping_results(run)
        compute = cinm.ComputeOp([v.type for v in escaping], Region(Block()))
        rewriter.insert(compute, InsertPoint.before(run[0]))
        body = compute.body.block
        for inner in run:
            inner.detach()
            body.add_op(inner)
        body.add_op(cinm.YieldOp(*escaping))
        for value, result in zip(escaping, compute.results, strict=True):
            value.replace_uses_with_if(result, lambda use: not _within(use.operation, {compute}))


class OpenComputeBlock(RewritePattern):
    """A `cinm.compute_block` as a `cinm.compute` in its place: its body arguments replaced by the
    values they name."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cinm.ComputeBlockOp, rewriter: PatternRewriter) -> None:
        block = op.body.block
        for argument, value in zip(block.args, op.arguments, strict=True):
            argument.replace_all_uses_with(value)
        for argument in reversed(block.args):
            block.erase_arg(argument)
        compute = cinm.ComputeOp([r.type for r in op.results], op.detach_region(op.body))
        compute.properties |= op.properties
        compute.attributes |= op.attributes
        replace_op(rewriter, op, compute)


@dataclass(frozen=True)
class CinmIsolateComputePass(ModulePass):
    """Wrap every run of `cinm` ops with a matrix product outside a `cinm.compute` in a compute (and
    turn every `cinm.compute_block` into a `cinm.compute`)."""

    name = "cinm-isolate-compute"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # A compute block comes before the ops inside it in the walk, so these are not taken for stray.
        applier = GreedyRewritePatternApplier([OpenComputeBlock(), IsolateStrayRun()], dce_enabled=False)
        PatternRewriteWalker(applier, apply_recursively=False).rewrite_module(op)
