"""`linalg-to-cinm`: offload linalg matrix products and convolutions to `cinm`, one
`cinm.compute` per layer.

`linalg.matmul ins(%a, %b) outs(%c)` computes `a·b + c`; it becomes `cinm.op.gemm %a, %b` when `%c`
is a fresh or zero-filled tensor, and `cinm.op.gemm %a, %b plus %c` otherwise; `linalg.matvec`
becomes `cinm.op.gemv` alike. A `linalg.generic` that is one of these products (indexing maps
`(m,k),(k,n)->(m,n)` or `(m,k),(k)->(m)`, its inputs in either order, and a body `out + a·b` in
`arith.mulf`/`addf` or `muli`/`addi`: the form `linalg-generalize-named-ops` writes) is offloaded
as the named op.
`linalg.conv_2d_nchw_fchw` becomes `cinm.op.im2col` of the image, a gemm with the FCHW weights as
a `(C·KH·KW) × F` matrix (folded when the weights are a constant or a slice of one, as a group's
are), and the reshape of the product back to NCHW; `linalg.conv_2d_ngchw_gfchw` (a grouped convolution)
becomes one compute of the image's im2col and a gemm per group of its columns with that group's
weights. `linalg.batch_matmul` (a product of two run-time
tensors: attention's Q·Kᵀ and P·V) becomes one compute of a gemm per batch entry (head), placed by
the option `placement` (`cimxdsl.device.placement`): `host` (the digital unit; the crossbar
passes leave the compute alone, `cinm-to-linalg` makes its gemms `linalg.matmul`s), `crossbar` (its right operand is written into crossbars, as any gemm's), or
`auto` (per product, the cheaper on `device`). The compute carries the decision as the attribute
`cimxdsl.placement`. A product's precision attributes (`weight_bits`, `input_bits`, set by
quantization) go to its gemms. Other ops are left alone.
"""

from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.dialects.linalg.attrs import IteratorType
from xdsl.dialects.linalg.ops import (
    Conv2DNchwFchwOp,
    Conv2DNgchwGfchwOp,
    FillOp,
    GenericOp,
    MatmulOp,
    TransposeOp,
)
from xdsl.dialects.linalg.ops import YieldOp as LinalgYieldOp
from xdsl.dialects.tensor import CollapseShapeOp, ExpandShapeOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from cimxdsl.device.config import DEFAULT_DEVICE, DeviceConfig
from cimxdsl.device.placement import Placement, placement_of
from cimxdsl.dialects import cinm
from cimxdsl.dialects.upstream import BatchMatmulOp, MatvecOp
from cimxdsl.dialects.utils import (
    carry_precision,
    dense_array,
    dense_attr,
    reassociation,
    shape_of,
    shaped_type,
    static_slice,
)
from cimxdsl.transforms.common.device_option import DeviceOption
from cimxdsl.transforms.common.options import ChoicePass


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


def wrap_in_compute(rewriter: PatternRewriter, matched: Operation, body_ops: list[Operation]) -> cinm.ComputeOp:
    """Replace `matched` by a `cinm.compute` of `body_ops` yielding the last op's result."""
    result = body_ops[-1].results[0]
    body = Block([*body_ops, cinm.YieldOp(result)])
    compute = cinm.ComputeOp([result.type], Region(body))
    rewriter.replace(matched, compute)
    return compute


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


def folded_matrix(values: np.ndarray, element: Attribute, rewriter: PatternRewriter, before: Operation) -> SSAValue:
    """FCHW weight values as a `(C·KH·KW) × F` constant inserted before `before`."""
    constant = arith.ConstantOp(dense_attr(values.reshape(len(values), -1).T, element))
    rewriter.insert(constant, InsertPoint.before(before))
    return constant.result


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
        return [], folded_matrix(values, element, rewriter, before)
    collapsed = tensor.CollapseShapeOp.create(
        operands=[weights],
        result_types=[TensorType(element, (f, c * kh * kw))],
        properties={"reassociation": reassociation([[0], [1, 2, 3]])},
    )
    init = tensor.EmptyOp([], TensorType(element, (c * kh * kw, f)))
    transpose = TransposeOp(collapsed.results[0], init.tensor, DenseArrayBase.from_list(i64, (1, 0)))
    return [collapsed, init, transpose], transpose.results[0]


def dims(affine_map: AffineMap) -> tuple[int, ...] | None:
    """The loop dimensions an indexing map reads, in order; None unless each result is one dimension."""
    if not all(isinstance(e, AffineDimExpr) for e in affine_map.results):
        return None
    return tuple(e.position for e in affine_map.results if isinstance(e, AffineDimExpr))


def multiply_add_body(op: GenericOp) -> bool:
    """Whether the body of `op` is `yield out + a·b` of its three arguments (float or integer)."""
    block = op.body.block
    body = list(block.ops)
    if len(block.args) != 3 or len(body) != 3:
        return False
    multiply, add, end = body
    a, b, out = block.args
    pairs = ((arith.MulfOp, arith.AddfOp), (arith.MuliOp, arith.AddiOp))
    return (
        any(isinstance(multiply, m) and isinstance(add, p) for m, p in pairs)
        and {*multiply.operands} == {a, b}
        and len(multiply.operands) == 2
        and {*add.operands} == {out, multiply.results[0]}
        and isinstance(end, LinalgYieldOp)
        and tuple(end.operands) == (add.results[0],)
    )


def generic_product(op: GenericOp) -> tuple[SSAValue, SSAValue, SSAValue] | None:
    """`(matrix, right, init)` when `op` is a matrix-matrix or matrix-vector product on tensors (see
    the module's docstring), else None."""
    if len(op.inputs) != 2 or len(op.outputs) != 1 or len(op.res) != 1 or not multiply_add_body(op):
        return None
    iterators = [t.data for t in op.iterator_types]
    reduced = [d for d, t in enumerate(iterators) if t == IteratorType.REDUCTION]
    found = [dims(m.data) for m in op.indexing_maps]
    if len(reduced) != 1 or len(iterators) not in (2, 3) or None in found:
        return None
    (k,), out_dims = reduced, found[2]
    if sorted((*out_dims, k)) != list(range(len(iterators))):
        return None
    left, right = (out_dims[0], k), ((k, out_dims[1]) if len(out_dims) == 2 else (k,))
    for (first, second), values in (((0, 1), op.inputs), ((1, 0), op.inputs[::-1])):
        if (found[first], found[second]) == (left, right):
            return values[0], values[1], op.outputs[0]
    return None


def offloadable(op: Operation) -> bool:
    """Whether `linalg-to-cinm` offloads `op`: a product or convolution on tensors outside a compute."""
    if isinstance(op.parent_op(), cinm.ComputeOp) or len(op.results) != 1:
        return False
    if isinstance(op, GenericOp):
        return generic_product(op) is not None
    return isinstance(op, MatmulOp | MatvecOp | Conv2DNchwFchwOp | Conv2DNgchwGfchwOp | BatchMatmulOp)


def offload_product(rewriter: PatternRewriter, op: Operation, left: SSAValue, right: SSAValue, init: SSAValue):
    """Replace `op`, computing `left · right + init`, by a compute of a gemm (a gemv for a vector `init`)."""
    product = cinm.GemvOp if isinstance(init.type, TensorType) and init.type.get_num_dims() == 1 else cinm.GemmOp
    bias = None if is_zero(init) else init
    offloaded = product(left, right, bias, op.results[0].type)
    carry_precision(op, offloaded)
    wrap_in_compute(rewriter, op, [offloaded])


class ProductToCinm(RewritePattern):
    """`linalg.matmul`/`linalg.matvec`, or a `linalg.generic` that is one → a compute of a gemm/gemv."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MatmulOp | MatvecOp | GenericOp, rewriter: PatternRewriter):
        if not offloadable(op):
            return
        left, right, init = generic_product(op) if isinstance(op, GenericOp) else (*op.inputs, *op.outputs)
        offload_product(rewriter, op, left, right, init)


class ConvToCinm(RewritePattern):
    """`linalg.conv_2d_nchw_fchw`, or a grouped `linalg.conv_2d_ngchw_gfchw`, → one compute:
    `cinm.op.im2col` of the whole image (its columns grouped by channel), per group a gemm of its
    columns with its own weight matrix (so each group's weights take their own tiles), the
    products joined and reshaped to the result's layout."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Conv2DNchwFchwOp | Conv2DNgchwGfchwOp, rewriter: PatternRewriter):
        if not offloadable(op):
            return
        image, weights = op.inputs
        (init,) = op.outputs
        result_type = op.res[0].type
        assert isinstance(result_type, TensorType) and isinstance(weights.type, TensorType)
        n, *filters, oh, ow = result_type.get_shape()  # filters: (F,) or (G, F)
        groups, f = filters if len(filters) == 2 else (1, filters[0])
        c, kh, kw = weights.type.get_shape()[-3:]
        element = result_type.element_type
        body: list[Operation] = []
        cols = cinm.Im2colOp(merged_channels(image, body), (kh, kw), op.strides.get_values(), op.dilations.get_values())
        body.append(cols)
        rows, depth = n * oh * ow, c * kh * kw
        values = constant_array(weights)
        products = []
        for g in range(groups):
            part = cols.result
            if groups > 1:
                columns = static_slice(part, [0, g * depth], [rows, depth])
                body.append(columns)
                part = columns.result
            if values is not None:
                group_values = values[g] if len(filters) == 2 else values
                matrix_ops, matrix = [], folded_matrix(group_values, weights.type.element_type, rewriter, op)
            else:
                kernel_ops, kernel = group_weights(weights, g, len(filters) == 2)
                matrix_ops, matrix = weight_matrix(kernel, rewriter, op)
                matrix_ops = [*kernel_ops, *matrix_ops]
            product = cinm.GemmOp(part, matrix, None, shaped_type(TensorType, element, (rows, f)))
            carry_precision(op, product)
            body += [*matrix_ops, product]
            products.append(product.result)
        joined = products[0]
        if groups > 1:
            body.append(concat := tensor.ConcatOp(products, 1, TensorType(element, (rows, groups * f))))
            joined = concat.result
        pixels = TensorType(element, (n, oh, ow, *filters))
        channels = list(range(3, pixels.get_num_dims()))
        expand = ExpandShapeOp(joined, [], reassociation([[0, 1, 2], channels]), pixels.get_shape(), pixels)
        init_result = tensor.EmptyOp([], result_type)
        layout = (0, *channels, 1, 2)
        result = TransposeOp(expand.result, init_result.tensor, DenseArrayBase.from_list(i64, layout))
        body += [expand, init_result, result]
        if not is_zero(init):
            body.append(cinm.AddOp(result.results[0], init))
        wrap_in_compute(rewriter, op, body)
        if values is not None and isinstance(weights.owner, tensor.ExtractSliceOp) and not weights.uses:
            rewriter.erase_op(weights.owner)


def group_weights(weights: SSAValue, group: int, grouped: bool) -> tuple[list[Operation], SSAValue]:
    """The FCHW weights of one group of GFCHW weights (a slice op; `weights` itself if not grouped)."""
    if not grouped:
        return [], weights
    weights_type = weights.type
    assert isinstance(weights_type, TensorType)
    _, f, c, kh, kw = weights_type.get_shape()
    kernel = TensorType(weights_type.element_type, (f, c, kh, kw))
    part = tensor.ExtractSliceOp(weights, [group, 0, 0, 0, 0], [1, f, c, kh, kw], [1] * 5, kernel)
    return [part], part.result


def merged_channels(image: SSAValue, body: list[Operation]) -> SSAValue:
    """An N×G×C×H×W image as N×(G·C)×H×W: the source of the expand that split it, or a new
    collapse appended to `body`. An NCHW image is returned as it is."""
    image_type = image.type
    assert isinstance(image_type, TensorType)
    if image_type.get_num_dims() == 4:
        return image
    n, g, c, h, w = image_type.get_shape()
    shape = (n, g * c, h, w)
    owner = image.owner
    if isinstance(owner, ExpandShapeOp) and shape_of(owner.src) == shape:
        return owner.src
    collapse = CollapseShapeOp.create(
        operands=[image],
        result_types=[TensorType(image_type.element_type, shape)],
        properties={"reassociation": reassociation([[0], [1, 2], [3], [4]])},
    )
    body.append(collapse)
    return collapse.results[0]


def batch_entry(value: SSAValue, index: int) -> tensor.ExtractSliceOp:
    """Entry `index` of a (B, R, C) tensor, as an R × C tensor."""
    value_type = value.type
    assert isinstance(value_type, TensorType)
    _, rows, cols = value_type.get_shape()
    entry_type = TensorType(value_type.element_type, (rows, cols))
    return tensor.ExtractSliceOp(value, [index, 0, 0], [1, rows, cols], [1, 1, 1], entry_type)


@dataclass
class BatchMatmulToCinm(RewritePattern):
    """`linalg.batch_matmul` → one compute of a gemm per batch entry, placed by `policy`."""

    policy: str
    device: DeviceConfig

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: BatchMatmulOp, rewriter: PatternRewriter):
        if not offloadable(op):
            return
        (batch, m, k), (_, _, n) = shape_of(op.lhs), shape_of(op.rhs)
        result_type = op.result.type
        assert isinstance(result_type, TensorType)
        bias = None if is_zero(op.init) else op.init
        body: list[Operation] = []
        products = []
        for b in range(batch):
            operands = [batch_entry(value, b) for value in (op.lhs, op.rhs, *([] if bias is None else [bias]))]
            product_type = TensorType(result_type.element_type, (m, n))
            plus = operands[2].result if bias is not None else None
            product = cinm.GemmOp(operands[0].result, operands[1].result, plus, product_type)
            carry_precision(op, product)
            body += [*operands, product]
            products.append(product.result)
        rows = tensor.ConcatOp(products, 0, TensorType(result_type.element_type, (batch * m, n)))
        expand = ExpandShapeOp(rows.result, [], reassociation([[0, 1], [2]]), (batch, m, n), result_type)
        compute = wrap_in_compute(rewriter, op, [*body, rows, expand])
        compute.results[0].name_hint = op.result.name_hint
        compute.attributes[cinm.PLACEMENT] = StringAttr(placement_of(self.policy, self.device, m, k, n, batch))


@dataclass(frozen=True)
class LinalgToCinmPass(DeviceOption, ChoicePass):
    """Offload `linalg.matmul`, `linalg.matvec` (or a `linalg.generic` that is one) and convolutions
    to `cinm.op.gemm`/`gemv`, each in its own `cinm.compute`; products of two run-time tensors (`linalg.batch_matmul`) placed by `placement` (`host`, `crossbar`, or `auto`:
    the cheaper on `device`, a preset name or TOML file)."""

    name = "linalg-to-cinm"

    placement: Placement = "host"
    device: str = DEFAULT_DEVICE
    device_config: DeviceConfig | None = field(default=None, init=False, compare=False)
    """The device as an object, from Python (`for_device`); not an option, it has no text form."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = [ProductToCinm(), ConvToCinm(), BatchMatmulToCinm(self.placement, self.config())]
        PatternRewriteWalker(
            GreedyRewritePatternApplier(patterns, dce_enabled=False), apply_recursively=False
        ).rewrite_module(op)
