"""`cinm-to-linalg`: the element-wise ops and reductions that stay on the host as upstream MLIR.

`cinm.op.add/sub/mul/div`, the tensor-scalar `adds/subs/muls/divs`, `cinm.op.element_wise` and
Cinnamon's buffer form `cinm.op.elementwise ... into %buffer` become a `linalg.map` whose body is
the scalar `arith`/`math` op (the scalar operand of `adds` & co. is used from above); the result of
a tensor op goes into a `tensor.empty`, the buffer form writes its `into` memref. `cinm.op.reduce`
becomes a `linalg.reduce` into a `linalg.fill` of the method's identity (followed by
`tensor.extract` when the result is a scalar). Integer `div` is `arith.divsi` (truncating, as the
interpreter's `cinm` semantics), and the thesis-era `max`/`min` reduce floats with
`arith.maximumf`/`minimumf` (NaN wins, as NumPy's `max`) and integers as signed.

A `cinm.compute` placed on the host (`cimxdsl.placement = "host"`, products of two run-time
tensors) whose products are all tensor `cinm.op.gemm`s is inlined: each gemm becomes a
`linalg.matmul` into its bias (or a zero `linalg.fill`), carrying the placement, the compute's
layer name (`cimxdsl.layer`) and its index among the layer's products (`cimxdsl.layer_product`),
so that the interpreter still counts it on the device's digital unit, in the same layer.
`cinm.op.im2col` becomes a `linalg.generic` that copies each window element `(n, oy, ox, c, ky, kx)`
from the image at `(n, c, oy·sh + ky·dh, ox·sw + kx·dw)` (strided indexing maps, as a linalg
convolution's), collapsed to the patch matrix (`tensor.collapse_shape`). Other cinm ops (products on
crossbars, scan, top-k, ...) are left alone. `cinm.op.quantize` and
`cinm.op.dequantize` become `linalg.generic`s over the input and the scales (per tensor, or per
element of the op's axis) that compute in f64 as the interpreter does.
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, math, tensor
from xdsl.dialects.builtin import (
    AffineMapAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
    f64,
    i64,
)
from xdsl.dialects.linalg.ops import FillOp, GenericOp, IteratorTypeAttr, MatmulOp
from xdsl.dialects.linalg.ops import ReduceOp as LinalgReduceOp
from xdsl.dialects.linalg.ops import YieldOp as LinalgYieldOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
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
from cimxdsl.dialects.cinm import ElementwiseKind, ReduceMethod
from cimxdsl.dialects.upstream import MapOp
from cimxdsl.dialects.utils import carry_precision, dense_array, dense_attr, element_type, reassociation, shape_of

ScalarBody = Callable[[list[SSAValue]], list[Operation]]
"""The scalar ops computing one element from one element of each operand (the result is the last op's)."""


def binary(integer: type[Operation], floating: type[Operation]) -> Callable[[Attribute], ScalarBody]:
    def body(element: Attribute) -> ScalarBody:
        kind = integer if isinstance(element, IntegerType) else floating
        return lambda args: [kind(args[0], args[1])]

    return body


def unary(floating: type[Operation], integer: type[Operation] | None = None) -> Callable[[Attribute], ScalarBody]:
    def body(element: Attribute) -> ScalarBody:
        kind = integer if integer is not None and isinstance(element, IntegerType) else floating
        return lambda args: [kind(args[0])]

    return body


def reciprocal(element: Attribute) -> ScalarBody:
    def ops(args: list[SSAValue]) -> list[Operation]:
        one = arith.ConstantOp(FloatAttr(1.0, element))  # type: ignore[arg-type]
        return [one, arith.DivfOp(one.result, args[0])]

    return ops


def square(element: Attribute) -> ScalarBody:
    return lambda args: [(arith.MuliOp if isinstance(element, IntegerType) else arith.MulfOp)(args[0], args[0])]


BINARY: dict[str, Callable[[Attribute], ScalarBody]] = {
    "add": binary(arith.AddiOp, arith.AddfOp),
    "sub": binary(arith.SubiOp, arith.SubfOp),
    "mul": binary(arith.MuliOp, arith.MulfOp),
    "div": binary(arith.DivSIOp, arith.DivfOp),
}
UNARY: dict[ElementwiseKind, Callable[[Attribute], ScalarBody]] = {
    ElementwiseKind.EXP: unary(math.ExpOp),
    ElementwiseKind.LOG: unary(math.LogOp),
    ElementwiseKind.ABS: unary(math.AbsFOp, math.AbsIOp),
    ElementwiseKind.CEIL: unary(math.CeilOp),
    ElementwiseKind.FLOOR: unary(math.FloorOp),
    ElementwiseKind.NEGF: unary(arith.NegfOp),
    ElementwiseKind.RECIPROCAL: reciprocal,
    ElementwiseKind.ROUND: unary(math.RoundOp),
    ElementwiseKind.SQRT: unary(math.SqrtOp),
    ElementwiseKind.RSQRT: unary(math.RsqrtOp),
    ElementwiseKind.SQUARE: square,
    ElementwiseKind.TANH: unary(math.TanhOp),
    ElementwiseKind.ERF: unary(math.ErfOp),
}
TENSOR_BINARY = {cinm.AddOp: "add", cinm.SubOp: "sub", cinm.MulOp: "mul", cinm.DivOp: "div"}
TENSOR_SCALAR = {cinm.AddsOp: "add", cinm.SubsOp: "sub", cinm.MulsOp: "mul", cinm.DivsOp: "div"}


def map_op(inputs: list[SSAValue], init: SSAValue, body: ScalarBody, captured: list[SSAValue]) -> MapOp:
    """`linalg.map` of `body` over `inputs` (one element each, then the values `captured` from above) into `init`."""
    block = Block(arg_types=[element_type(v) for v in inputs])
    ops = body([*block.args, *captured])
    block.add_ops([*ops, LinalgYieldOp(ops[-1].results[0])])
    return MapOp(inputs, init, Region(block))


def replace_with(rewriter: PatternRewriter, op: Operation, setup: list[Operation], new: list[Operation]) -> None:
    """Insert `setup` before `op` and replace `op` by `new` (only `new` take `op`'s name)."""
    rewriter.insert(setup, InsertPoint.before(op))
    rewriter.replace(op, new)


class ElementwiseToLinalg(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(
        self,
        op: cinm.AddOp
        | cinm.SubOp
        | cinm.MulOp
        | cinm.DivOp
        | cinm.AddsOp
        | cinm.SubsOp
        | cinm.MulsOp
        | cinm.DivsOp
        | cinm.ElementWiseOp
        | cinm.ElementwiseBufferOp,
        rewriter: PatternRewriter,
    ):
        if isinstance(op, cinm.ElementwiseBufferOp):
            kind = op.kind.data
            build = BINARY[kind] if kind in BINARY else UNARY[cinm.UNARY_SPELLINGS[kind]]
            body = build(element_type(op.out))
            rewriter.replace(op, map_op(list(op.inputs), op.out, body, []), [])
            return
        if isinstance(op, cinm.ElementWiseOp):
            inputs, captured, body = [op.input], [], UNARY[op.method.data](element_type(op.input))
        elif type(op) in TENSOR_SCALAR:
            inputs, captured, body = [op.lhs], [op.rhs], BINARY[TENSOR_SCALAR[type(op)]](element_type(op.lhs))
        else:
            inputs, captured, body = [op.lhs, op.rhs], [], BINARY[TENSOR_BINARY[type(op)]](element_type(op.lhs))
        empty = tensor.EmptyOp([], op.result.type)
        mapped = map_op(inputs, empty.tensor, body, captured)
        replace_with(rewriter, op, [empty], [mapped])


@dataclass(frozen=True)
class Reduction:
    integer: type[Operation]
    floating: type[Operation] | None
    identity: Callable[[Attribute], int | float]
    """the method's identity for an element type"""


def filled(value: int | float, result_type: TensorType) -> list[Operation]:
    """A constant, a `tensor.empty` of `result_type` and the `linalg.fill` of the one into the other."""
    element = result_type.element_type
    integer = isinstance(element, IntegerType)
    constant = arith.ConstantOp(IntegerAttr(int(value), element) if integer else FloatAttr(float(value), element))  # type: ignore[arg-type]
    empty = tensor.EmptyOp([], result_type)
    return [constant, empty, FillOp([constant.result], [empty.tensor], [result_type])]


def smallest(element: Attribute) -> int | float:
    return -(2 ** (element.width.data - 1)) if isinstance(element, IntegerType) else float("-inf")


def largest(element: Attribute) -> int | float:
    return 2 ** (element.width.data - 1) - 1 if isinstance(element, IntegerType) else float("inf")


REDUCTIONS: dict[ReduceMethod, Reduction] = {
    ReduceMethod.ADD: Reduction(arith.AddiOp, arith.AddfOp, lambda e: 0),
    ReduceMethod.MUL: Reduction(arith.MuliOp, arith.MulfOp, lambda e: 1),
    ReduceMethod.MAX: Reduction(arith.MaxSIOp, arith.MaximumfOp, smallest),
    ReduceMethod.MIN: Reduction(arith.MinSIOp, arith.MinimumfOp, largest),
    ReduceMethod.MAXNUMF: Reduction(arith.MaxnumfOp, arith.MaxnumfOp, smallest),
    ReduceMethod.MINNUMF: Reduction(arith.MinnumfOp, arith.MinnumfOp, largest),
    ReduceMethod.MAXSI: Reduction(arith.MaxSIOp, None, smallest),
    ReduceMethod.MINSI: Reduction(arith.MinSIOp, None, largest),
    ReduceMethod.MAXUI: Reduction(arith.MaxUIOp, None, lambda e: 0),
    ReduceMethod.MINUI: Reduction(arith.MinUIOp, None, lambda e: -1),
}


class ReduceToLinalg(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cinm.ReduceOp, rewriter: PatternRewriter):
        element = element_type(op.input)
        rank = op.input.type.get_num_dims()  # type: ignore[union-attr]
        dimensions = sorted(d % rank for d in op.dimensions.get_values())
        reduction = REDUCTIONS[op.method.data]
        integer = isinstance(element, IntegerType)
        combine = reduction.integer if integer or reduction.floating is None else reduction.floating
        result_type = op.result.type
        init_type = result_type if isinstance(result_type, TensorType) else TensorType(element, ())
        setup = filled(reduction.identity(element), init_type)
        fill = setup[-1]
        block = Block(arg_types=[element, element])
        combined = combine(block.args[0], block.args[1])
        block.add_ops([combined, LinalgYieldOp(combined.results[0])])
        dims = DenseArrayBase.from_list(i64, dimensions)
        reduce = LinalgReduceOp(op.input, fill.results[0], dims, Region(block))
        if isinstance(result_type, TensorType):
            replace_with(rewriter, op, setup, [reduce])
        else:
            replace_with(rewriter, op, [*setup, reduce], [tensor.ExtractOp(reduce.results[0], [], result_type)])


class HostComputeToLinalg(RewritePattern):
    """A compute placed on the host, of tensor gemms → its body, each gemm a `linalg.matmul` into its
    bias or zeros that carries the placement, its layer and its index in the layer."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cinm.ComputeOp, rewriter: PatternRewriter):
        if cinm.placement(op) != "host":
            return
        products = [p for p in op.walk() if isinstance(p, cinm.GemmOp | cinm.GemvOp)]
        gemms = [p for p in products if isinstance(p, cinm.GemmOp) and p.out is None]
        if not gemms or len(gemms) != len(products):
            return
        layer = StringAttr(cinm.layer_name(op))
        for index, gemm in enumerate(gemms):
            result_type = gemm.target.type
            assert isinstance(result_type, TensorType)
            setup = [] if gemm.bias is not None else filled(0, result_type)
            init = gemm.bias if gemm.bias is not None else setup[-1].results[0]
            attributes = {
                cinm.PLACEMENT: op.attributes[cinm.PLACEMENT],
                cinm.LAYER: layer,
                cinm.LAYER_PRODUCT: DenseArrayBase.from_list(i64, [index, len(gemms)]),
            }
            matmul = MatmulOp([gemm.left, gemm.right], [init], attributes=attributes)
            carry_precision(gemm, matmul)
            replace_with(rewriter, gemm, setup, [matmul])
        yield_op = op.body.block.last_op
        assert isinstance(yield_op, cinm.YieldOp)
        values = list(yield_op.values)
        rewriter.erase(yield_op)
        rewriter.inline_block(op.body.block, InsertPoint.before(op))
        rewriter.replace(op, [], values)


class Im2colToLinalg(RewritePattern):
    """`cinm.op.im2col` → a copy `linalg.generic` of the windows into an N×OH×OW×C×KH×KW tensor,
    collapsed to the (N·OH·OW) × (C·KH·KW) patch matrix (module docstring)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cinm.Im2colOp, rewriter: PatternRewriter):
        n, c, _, _ = shape_of(op.input)
        geometry = [a.get_values() for a in (op.kernel, op.strides, op.dilations)]
        (kh, kw), (sh, sw), (dh, dw) = geometry
        oh, ow = cinm.output_pixels(shape_of(op.input), *geometry)
        element = element_type(op.input)
        windows_type = TensorType(element, (n, oh, ow, c, kh, kw))
        d = [AffineExpr.dimension(i) for i in range(6)]
        window = AffineMap(6, 0, (d[0], d[3], d[1] * sh + d[4] * dh, d[2] * sw + d[5] * dw))
        empty = tensor.EmptyOp([], windows_type)
        block = Block(arg_types=[element, element])
        block.add_op(LinalgYieldOp(block.args[0]))
        copy = GenericOp(
            [op.input],
            [empty.tensor],
            Region(block),
            [AffineMapAttr(window), AffineMapAttr(AffineMap.identity(6))],
            [IteratorTypeAttr.parallel()] * 6,
            [windows_type],
        )
        collapse = tensor.CollapseShapeOp.create(
            operands=[copy.results[0]],
            result_types=[op.result.type],
            properties={"reassociation": reassociation([[0, 1, 2], [3, 4, 5]])},
        )
        replace_with(rewriter, op, [empty, copy], [collapse])


def scaled(op: cinm.QuantizeOp | cinm.DequantizeOp, body: ScalarBody) -> list[Operation]:
    """A `linalg.generic` computing `body(x, s)` per element `x` of the op's input and its scale `s`
    (f64, one per tensor or per element of the op's axis) into a `tensor.empty` of its result."""
    rank = len(op.input.type.get_shape())  # type: ignore[union-attr]
    values = dense_array(op.scale).astype(np.float64)
    per_channel = values.size > 1
    scale = arith.ConstantOp(dense_attr(values.reshape(values.shape[-1:] if per_channel else ()), f64))
    dims = [AffineExpr.dimension(d) for d in range(rank)]
    maps = [AffineMap(rank, 0, tuple(dims)), AffineMap(rank, 0, (dims[op.axis.value.data],) if per_channel else ())]
    empty = tensor.EmptyOp([], op.result.type)
    block = Block(arg_types=[element_type(op.input), f64, element_type(op.result)])
    ops = body(list(block.args[:2]))
    block.add_ops([*ops, LinalgYieldOp(ops[-1].results[0])])
    generic = GenericOp(
        [op.input, scale.result],
        [empty.tensor],
        Region(block),
        [AffineMapAttr(m) for m in (*maps, maps[0])],
        [IteratorTypeAttr.parallel()] * rank,
        [op.result.type],
    )
    return [scale, empty, generic]


class ScaleToLinalg(RewritePattern):
    """`cinm.op.quantize`: `fptosi(clamp(roundeven(extf(x) / s)))`; `cinm.op.dequantize`:
    `truncf(sitofp(x) · s)` — in f64, as the interpreter's `cinm` semantics."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cinm.QuantizeOp | cinm.DequantizeOp, rewriter: PatternRewriter):
        source, result = element_type(op.input), element_type(op.result)
        if isinstance(op, cinm.QuantizeOp):
            low, high = op.code_range()

            def body(args: list[SSAValue]) -> list[Operation]:
                wide = [arith.ExtFOp(args[0], f64)] if source != f64 else []
                quotient = arith.DivfOp(wide[0].result if wide else args[0], args[1])
                rounded = math.RoundEvenOp(quotient.result)
                lowest, highest = (arith.ConstantOp(FloatAttr(float(v), f64)) for v in (low, high))
                above = arith.MaximumfOp(rounded.result, lowest.result)
                clamped = arith.MinimumfOp(above.result, highest.result)
                return [
                    *wide,
                    quotient,
                    rounded,
                    lowest,
                    highest,
                    above,
                    clamped,
                    arith.FPToSIOp(clamped.result, result),
                ]

        else:

            def body(args: list[SSAValue]) -> list[Operation]:
                wide = arith.SIToFPOp(args[0], f64)
                product = arith.MulfOp(wide.result, args[1])
                return [wide, product, *([arith.TruncFOp(product.result, result)] if result != f64 else [])]

        new = scaled(op, body)
        replace_with(rewriter, op, new[:-1], new[-1:])


@dataclass(frozen=True)
class CinmToLinalgPass(ModulePass):
    """Lower the cinm element-wise ops and reductions (tensor and buffer forms) to `linalg.map` and
    `linalg.reduce` with `arith`/`math` bodies, quantize/dequantize and im2col to `linalg.generic`s,
    and the computes placed on the host to `linalg.matmul`s."""

    name = "cinm-to-linalg"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lowerings = [HostComputeToLinalg(), ElementwiseToLinalg(), ReduceToLinalg(), ScaleToLinalg(), Im2colToLinalg()]
        patterns = GreedyRewritePatternApplier(lowerings, dce_enabled=False)
        PatternRewriteWalker(patterns, walk_regions_first=True, apply_recursively=False).rewrite_module(op)
