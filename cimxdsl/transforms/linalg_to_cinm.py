"""`linalg-to-cinm`: offload linalg matrix products to `cinm`, one `cinm.compute` per layer.

`linalg.matmul ins(%a, %b) outs(%c)` computes `a·b + c`; it becomes `cinm.op.gemm %a, %b` when `%c`
is a fresh or zero-filled tensor, and `cinm.op.gemm %a, %b plus %c` otherwise. Ops that are not
matrix products are left alone.
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, FloatAttr, IntegerAttr, ModuleOp
from xdsl.dialects.linalg.ops import FillOp, MatmulOp
from xdsl.ir import Block, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from cimxdsl.dialects import cinm


def is_zero(value: SSAValue) -> bool:
    """Whether `value` is known to be all zeros (`tensor.empty` is taken as zeros, as the interpreter does)."""
    owner = value.owner
    if isinstance(owner, tensor.EmptyOp):
        return True
    if isinstance(owner, FillOp):
        return is_zero(owner.inputs[0])
    if isinstance(owner, arith.ConstantOp):
        attr = owner.value
        if isinstance(attr, IntegerAttr | FloatAttr):
            return attr.value.data == 0
        if isinstance(attr, DenseIntOrFPElementsAttr):
            return all(v == 0 for v in attr.get_values())
    return False


def wrap_in_compute(rewriter: PatternRewriter, matched: MatmulOp, inner: cinm.GemmOp) -> None:
    """Replace `matched` by a `cinm.compute` whose body computes `inner` and yields its result."""
    body = Block([inner, cinm.YieldOp(inner.result)])
    rewriter.replace(matched, cinm.ComputeOp([inner.result.type], Region(body)))


class MatmulToCinm(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MatmulOp, rewriter: PatternRewriter):
        if len(op.res) != 1 or (op.parent_op() is not None and isinstance(op.parent_op(), cinm.ComputeOp)):
            return
        left, right = op.inputs
        (init,) = op.outputs
        bias = None if is_zero(init) else init
        wrap_in_compute(rewriter, op, cinm.GemmOp(left, right, bias, op.res[0].type))


@dataclass(frozen=True)
class LinalgToCinmPass(ModulePass):
    """Offload `linalg.matmul` to `cinm.op.gemm`, each in its own `cinm.compute`."""

    name = "linalg-to-cinm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(MatmulToCinm(), apply_recursively=False).rewrite_module(op)
