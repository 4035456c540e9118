"""`linalg-to-cinm`: offload linalg matrix products and convolutions to `cinm`, one
`cinm.compute` per layer.

`linalg.matmul ins(%a, %b) outs(%c)` computes `a·b + c`; it becomes `cinm.op.gemm %a, %b` when `%c`
is a fresh or zero-filled tensor, and `cinm.op.gemm %a, %b plus %c` otherwise.
`linalg.conv_2d_nchw_fchw` becomes `cinm.op.im2col` of the image, a gemm with the FCHW weights as
a `(C·KH·KW) × F` matrix (folded when the weights are a constant or a slice of one, as a group's
are), and the reshape of the product back to NCHW. Other ops are left alone.
"""

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    TensorType,
    i64,
)
from xdsl.dialects.linalg.ops import Conv2DNchwFchwOp, FillOp, MatmulOp, TransposeOp
from xdsl.dialects.tensor import ExpandShapeOp
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
from cimxdsl.dialects.utils import dense_array, dense_attr, reassociation


def is_zero(value: SSAValue) -> bool:
    """Whether `value` is known to be all zeros (`tensor.empty` counts as zeros, as in the interpreter)."""
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
            return not dense_array(attr).any()
    return False


def wrap_in_compute(rewriter: PatternRewriter, matched: Operation, body_ops: list[Operation]) -> None:
    """Replace `matched` by a `cinm.compute` of `body_ops` yielding the last op's result."""
    result = body_ops[-1].results[0]
    body = Block([*body_ops, cinm.YieldOp(result)])
    rewriter.replace(matched, cinm.ComputeOp([result.type], Region(body)))


def constant_array(value: SSAValue) -> np.ndarray | None:
    """The values of `value` when it is a dense constant or a static unit-stride slice of one (a
    group's weights of a grouped convolution), else None."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, DenseIntOrFPElementsAttr):
        return dense_array(owner.value)
    if not isinstance(owner, tensor.ExtractSliceOp) or owner.offsets or owner.sizes or owner.strides:
        return None
    source = constant_array(owner.source)
    if source is None or any(stride != 1 for stride in owner.static_strides.get_values()):
        return None
    window = zip(owner.static_offsets.get_values(), owner.static_sizes.get_values(), strict=True)
    return source[tuple(slice(offset, offset + size) for offset, size in window)].reshape(owner.result.type.get_shape())


def weight_matrix(weights: SSAValue, rewriter: PatternRewriter, before: Operation) -> tuple[list[Operation], SSAValue]:
    """FCHW weights as the `(C·KH·KW) × F` matrix a crossbar holds: a new constant (inserted before
    `before`) when they are a constant or a slice of one, else ops computing it inside the compute.
    A slice left unused is erased."""
    weights_type = weights.type
    assert isinstance(weights_type, TensorType)
    f, c, kh, kw = weights_type.get_shape()
    element = weights_type.element_type
    values = constant_array(weights)
    if values is not None:
        constant = arith.ConstantOp(dense_attr(values.reshape(f, c * kh * kw).T, element))
        rewriter.insert(constant, InsertPoint.before(before))
        return [], constant.result
    collapsed = tensor.CollapseShapeOp.create(
        operands=[weights],
        result_types=[TensorType(element, (f, c * kh * kw))],
        properties={"reassociation": reassociation([[0], [1, 2, 3]])},
    )
    init = tensor.EmptyOp([], TensorType(element, (c * kh * kw, f)))
    transpose = TransposeOp(collapsed.results[0], init.tensor, DenseArrayBase.from_list(i64, (1, 0)))
    return [collapsed, init, transpose], transpose.results[0]


class MatmulToCinm(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MatmulOp, rewriter: PatternRewriter):
        if len(op.res) != 1 or (op.parent_op() is not None and isinstance(op.parent_op(), cinm.ComputeOp)):
            return
        left, right = op.inputs
        (init,) = op.outputs
        bias = None if is_zero(init) else init
        wrap_in_compute(rewriter, op, [cinm.GemmOp(left, right, bias, op.res[0].type)])


class ConvToCinm(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Conv2DNchwFchwOp, rewriter: PatternRewriter):
        if len(op.res) != 1 or isinstance(op.parent_op(), cinm.ComputeOp):
            return
        image, weights = op.inputs
        (init,) = op.outputs
        result_type = op.res[0].type
        assert isinstance(result_type, TensorType) and isinstance(weights.type, TensorType)
        n, f, oh, ow = result_type.get_shape()
        kernel = weights.type.get_shape()[2:]
        element = result_type.element_type
        cols = cinm.Im2colOp(image, kernel, op.strides.get_values(), op.dilations.get_values())
        matrix_ops, matrix = weight_matrix(weights, rewriter, op)
        product = cinm.GemmOp(cols.result, matrix, None, TensorType(element, (n * oh * ow, f)))
        nhwc = TensorType(element, (n, oh, ow, f))
        expand = ExpandShapeOp(product.result, [], reassociation([[0, 1, 2], [3]]), (n, oh, ow, f), nhwc)
        init_nchw = tensor.EmptyOp([], result_type)
        nchw = TransposeOp(expand.result, init_nchw.tensor, DenseArrayBase.from_list(i64, (0, 3, 1, 2)))
        body: list[Operation] = [cols, *matrix_ops, product, expand, init_nchw, nchw]
        if not is_zero(init):
            body.append(cinm.AddOp(nchw.results[0], init))
        wrap_in_compute(rewriter, op, body)
        if not matrix_ops and isinstance(weights.owner, tensor.ExtractSliceOp) and not weights.uses:
            rewriter.erase_op(weights.owner)


@dataclass(frozen=True)
class LinalgToCinmPass(ModulePass):
    """Offload `linalg.matmul` to `cinm.op.gemm`, each in its own `cinm.compute`."""

    name = "linalg-to-cinm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([MatmulToCinm(), ConvToCinm()], dce_enabled=False), apply_recursively=False
        ).rewrite_module(op)
