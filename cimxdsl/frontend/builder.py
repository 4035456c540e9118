"""Emitting the standard MLIR ops the ONNX importer produces, with NumPy constants.

Matrix work becomes `linalg.matmul`/`linalg.conv_2d_nchw_fchw`/`linalg.conv_2d_ngchw_gfchw` (what
`linalg-to-cinm` offloads); host work becomes `arith`/`math` element-wise ops on tensors, `tosa`
pooling, clamps and reductions, and `tensor`/`linalg` data movement.
"""

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import arith, math, tensor, tosa
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    TensorType,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.dialects.linalg.ops import (
    BroadcastOp,
    Conv2DNchwFchwOp,
    Conv2DNgchwGfchwOp,
    MatmulOp,
    SelectOp,
    TransposeOp,
)
from xdsl.dialects.linalg.ops import YieldOp as LinalgYieldOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from cimxdsl.dialects.upstream import BatchMatmulOp, GatherOp, MapOp
from cimxdsl.dialects.utils import dense_array, dense_attr, reassociation, shape_of

SCALES_ATTRIBUTE = "cimxdsl.scales"
"""The attribute holding the scales a quantized ONNX model gave a value (`cimxdsl.axis`: their axis)."""


BITS_ATTRIBUTE = "cimxdsl.bits"
"""Next to the scales: the bits of the codes a quantized model gave the value (its integer type's,
or fewer when its constant codes need fewer)."""


def mark_scales(value: SSAValue, scales: np.ndarray, axis: int, bits: int | None = None) -> None:
    """Record on `value`'s op the scales (per tensor or along `axis`) a quantized model gave it, and
    the bits of its codes when known."""
    owner = value.owner
    owner.attributes[SCALES_ATTRIBUTE] = dense_attr(np.asarray(scales, np.float32).reshape(-1), f32)
    owner.attributes["cimxdsl.axis"] = IntegerAttr(axis, i64)
    if bits is not None:
        owner.attributes[BITS_ATTRIBUTE] = IntegerAttr(bits, i64)


def integer_range(dtype: np.dtype) -> tuple[int, int, int] | None:
    """The smallest and largest code and the bits of an 8- or 4-bit integer type (None: another)."""
    if dtype.kind in "iu" and dtype.itemsize == 1:
        info = np.iinfo(dtype)
        return int(info.min), int(info.max), 8
    return {"int4": (-8, 7, 4), "uint4": (0, 15, 4)}.get(dtype.name)


def code_bits(codes: np.ndarray, zero: np.ndarray | None, dtype: np.dtype) -> int:
    """The bits constant codes take as symmetric signed integers: those of the largest |q - zero|
    (a quantizer that used fewer codes than its type holds), at most the type's."""
    centered = np.asarray(codes, np.float64) - (0 if zero is None else np.asarray(zero, np.float64))
    peak = int(np.abs(centered).max()) if centered.size else 0
    needed = 1 if peak <= 1 else int(np.ceil(np.log2(peak + 1))) + 1
    found = integer_range(dtype)
    return min(needed, found[2]) if found else needed


class IRBuilder:
    """Appends ops to a block; every method returns the SSA value it computes."""

    def __init__(self, block: Block, element: Attribute = f32):
        self.builder = Builder(InsertPoint.at_end(block))
        self.element = element
        self.layer_name: str | None = None
        """The name given to the results of matrix ops (the layer they belong to)."""

    def insert(self, op: Operation) -> SSAValue:
        self.builder.insert(op)
        return op.results[0]

    # constants ------------------------------------------------------------------------------------
    def constant(self, array: np.ndarray, element: Attribute | None = None) -> SSAValue:
        return self.insert(arith.ConstantOp(dense_attr(np.asarray(array), element or self.element)))

    def splat(self, value: float, shape: Sequence[int], element: Attribute | None = None) -> SSAValue:
        element = element or self.element
        return self.constant(np.full(tuple(shape), value), element)

    def empty(self, shape: Sequence[int], element: Attribute | None = None) -> SSAValue:
        return self.insert(tensor.EmptyOp([], TensorType(element or self.element, tuple(shape))))

    # shapes ---------------------------------------------------------------------------------------
    def reshape(self, value: SSAValue, shape: Sequence[int]) -> SSAValue:
        shape = tuple(int(d) for d in shape)
        if shape_of(value) == shape:
            return value
        target = self.constant(np.array(shape, np.int64), i64)
        element = value.type.element_type
        return self.insert(tensor.ReshapeOp(value, target, TensorType(element, shape)))

    def broadcast(self, value: SSAValue, shape: Sequence[int]) -> SSAValue:
        """`value` broadcast to `shape` with NumPy's (and ONNX's) rules."""
        shape = tuple(shape)
        source = shape_of(value)
        if source == shape:
            return value
        padded = (1,) * (len(shape) - len(source)) + source
        kept = [i for i, (d, out) in enumerate(zip(padded, shape, strict=True)) if d == out]
        compact = self.reshape(value, [shape[i] for i in kept])
        if len(kept) == len(shape):
            return compact
        added = [i for i in range(len(shape)) if i not in kept]
        init = self.empty(shape, value.type.element_type)
        return self.insert(BroadcastOp(compact, init, DenseArrayBase.from_list(i64, added)))

    def transpose(self, value: SSAValue, permutation: Sequence[int]) -> SSAValue:
        if list(permutation) == list(range(len(permutation))):
            return value
        source = shape_of(value)
        init = self.empty([source[p] for p in permutation], value.type.element_type)
        return self.insert(TransposeOp(value, init, DenseArrayBase.from_list(i64, permutation)))

    def pad(self, value: SSAValue, low: Sequence[int], high: Sequence[int], fill: float = 0.0) -> SSAValue:
        if not any(low) and not any(high):
            return value
        element = value.type.element_type
        scalar = IntegerAttr(int(fill), element) if isinstance(element, IntegerType) else FloatAttr(fill, element)
        padding = self.insert(arith.ConstantOp(scalar))
        body = Block([tensor.YieldOp(padding)], arg_types=[IndexType()] * len(low))
        shape = [d + lo + hi for d, lo, hi in zip(shape_of(value), low, high, strict=True)]
        return self.insert(tensor.PadOp(value, [], [], Region(body), low, high, TensorType(element, shape)))

    def concat(self, values: Sequence[SSAValue], axis: int) -> SSAValue:
        shape = list(shape_of(values[0]))
        shape[axis] = sum(shape_of(v)[axis] for v in values)
        return self.insert(tensor.ConcatOp(values, axis, TensorType(values[0].type.element_type, shape)))

    def slice(
        self, value: SSAValue, offsets: Sequence[int], sizes: Sequence[int], strides: Sequence[int] | None = None
    ) -> SSAValue:
        if tuple(sizes) == shape_of(value) and not any(offsets):
            return value
        return self.insert(tensor.ExtractSliceOp.from_static_parameters(value, offsets, sizes, strides))

    # arithmetic -----------------------------------------------------------------------------------
    def binary(self, kind: type[Operation], lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """An element-wise `arith` op after broadcasting both operands to a common shape."""
        shape = np.broadcast_shapes(shape_of(lhs), shape_of(rhs))
        return self.insert(kind(self.broadcast(lhs, shape), self.broadcast(rhs, shape)))

    def scalar_op(self, kind: type[Operation], value: SSAValue, scalar: float) -> SSAValue:
        return self.insert(kind(value, self.splat(scalar, shape_of(value))))

    def unary(self, kind: type[Operation], value: SSAValue) -> SSAValue:
        return self.insert(kind(value))

    def clamp(self, value: SSAValue, low: float, high: float) -> SSAValue:
        element = value.type.element_type
        return self.insert(
            tosa.ClampOp.create(
                operands=[value],
                result_types=[value.type],
                properties={"min_val": FloatAttr(low, element), "max_val": FloatAttr(high, element)},
            )
        )

    def sigmoid(self, value: SSAValue) -> SSAValue:
        exponential = self.unary(math.ExpOp, self.unary(arith.NegfOp, value))
        denominator = self.scalar_op(arith.AddfOp, exponential, 1.0)
        return self.insert(arith.DivfOp(self.splat(1.0, shape_of(value)), denominator))

    def reduce(self, kind: type[Operation], value: SSAValue, axis: int) -> SSAValue:
        """A reduction along `axis` that keeps the dimension (size 1)."""
        shape = list(shape_of(value))
        shape[axis] = 1
        return self.insert(
            kind.create(
                operands=[value],
                result_types=[TensorType(value.type.element_type, shape)],
                properties={"axis": IntegerAttr(axis, i32)},
            )
        )

    # layers ---------------------------------------------------------------------------------------
    def matmul(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        (m, _), (_, n) = shape_of(lhs), shape_of(rhs)
        return self.named(self.insert(MatmulOp([lhs, rhs], [self.empty((m, n))])))

    def named(self, value: SSAValue) -> SSAValue:
        value.name_hint = self.layer_name
        return value

    def conv(self, image: SSAValue, weights: SSAValue, strides: Sequence[int], dilations: Sequence[int]) -> SSAValue:
        """`linalg.conv_2d_nchw_fchw`, or `linalg.conv_2d_ngchw_gfchw` for 5-d (grouped) operands."""
        *batch, h, w = shape_of(image)
        *filters, _, kh, kw = shape_of(weights)
        oh = (h - dilations[0] * (kh - 1) - 1) // strides[0] + 1
        ow = (w - dilations[1] * (kw - 1) - 1) // strides[1] + 1
        result = TensorType(self.element, (batch[0], *filters, oh, ow))
        kind = Conv2DNchwFchwOp if len(batch) == 2 else Conv2DNgchwGfchwOp
        return self.named(
            self.insert(
                kind(
                    [image, weights],
                    [self.empty(result.get_shape())],
                    [result],
                    strides=dense_attr(np.array(strides, np.int64), i64),
                    dilations=dense_attr(np.array(dilations, np.int64), i64),
                )
            )
        )

    def grouped_conv(
        self, image: SSAValue, weights: SSAValue, groups: int, strides: Sequence[int], dilations: Sequence[int]
    ) -> SSAValue:
        """A grouped NCHW convolution with FCHW weights as one `linalg.conv_2d_ngchw_gfchw`: the
        channels split into `groups` (image G×C, weights G×F), the result merged back to NCHW."""
        (n, c, h, w), (f, c_group, kh, kw) = shape_of(image), shape_of(weights)
        split_image = self.expand(image, (n, groups, c // groups, h, w), [[0], [1, 2], [3], [4]])
        split_weights = (f // groups, c_group, kh, kw)
        owner = weights.owner
        if isinstance(owner, arith.ConstantOp):
            kernel = self.constant(dense_array(owner.value).reshape(groups, *split_weights), weights.type.element_type)
            kernel.owner.attributes.update(owner.attributes)  # scales a quantized model gave (per filter)
        else:
            kernel = self.expand(weights, (groups, *split_weights), [[0, 1], [2], [3], [4]])
        result = self.conv(split_image, kernel, strides, dilations)
        n, g, f_group, oh, ow = shape_of(result)
        return self.collapse(result, (n, g * f_group, oh, ow), [[0], [1, 2], [3], [4]])

    def expand(self, value: SSAValue, shape: Sequence[int], groups: Sequence[Sequence[int]]) -> SSAValue:
        result = TensorType(value.type.element_type, tuple(shape))
        return self.insert(tensor.ExpandShapeOp(value, [], reassociation(groups), tuple(shape), result))

    def collapse(self, value: SSAValue, shape: Sequence[int], groups: Sequence[Sequence[int]]) -> SSAValue:
        return self.insert(
            tensor.CollapseShapeOp.create(
                operands=[value],
                result_types=[TensorType(value.type.element_type, tuple(shape))],
                properties={"reassociation": reassociation(groups)},
            )
        )

    def pool(
        self, kind: type[Operation], image: SSAValue, kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int]
    ) -> SSAValue:
        """TOSA pooling (NHWC) of an NCHW image; `pads` is [top, bottom, left, right]."""
        nhwc = self.transpose(image, (0, 2, 3, 1))
        n, h, w, c = shape_of(nhwc)
        oh = (h + pads[0] + pads[1] - kernel[0]) // strides[0] + 1
        ow = (w + pads[2] + pads[3] - kernel[1]) // strides[1] + 1
        properties = {
            "kernel": DenseArrayBase.from_list(i64, kernel),
            "stride": DenseArrayBase.from_list(i64, strides),
            "pad": DenseArrayBase.from_list(i64, pads),
        }
        operands: list[SSAValue] = [nhwc]
        if kind is tosa.AvgPool2DOp:
            zero = self.constant(np.zeros(1), self.element)
            operands += [zero, zero]
            properties["acc_type"] = self.element
        pooled = self.insert(
            kind.create(
                operands=operands, result_types=[TensorType(self.element, (n, oh, ow, c))], properties=properties
            )
        )
        return self.transpose(pooled, (0, 3, 1, 2))

    # comparisons and selection ----------------------------------------------------------------------
    def map(self, make: Callable[..., Operation], inputs: Sequence[SSAValue], element: Attribute) -> SSAValue:
        """`linalg.map` of the scalar op `make(*elements)` over same-shaped tensors (for the `arith`
        comparisons and casts, which xDSL defines on scalars only)."""
        block = Block(arg_types=[v.type.element_type for v in inputs])
        inner = make(*block.args)
        block.add_ops([inner, LinalgYieldOp(inner.results[0])])
        return self.insert(MapOp(inputs, self.empty(shape_of(inputs[0]), element), Region(block)))

    def compare(self, lhs: SSAValue, rhs: SSAValue, predicate: str) -> SSAValue:
        """An element-wise comparison (`arith.cmpi`, or `arith.cmpf` ordered except `ne`) after
        broadcasting; i1 result."""
        shape = np.broadcast_shapes(shape_of(lhs), shape_of(rhs))
        lhs, rhs = self.broadcast(lhs, shape), self.broadcast(rhs, shape)
        if isinstance(lhs.type.element_type, IntegerType):
            return self.map(lambda a, b: arith.CmpiOp(a, b, predicate), [lhs, rhs], i1)
        predicate = "une" if predicate == "ne" else "o" + predicate
        return self.map(lambda a, b: arith.CmpfOp(a, b, predicate), [lhs, rhs], i1)

    def select(self, condition: SSAValue, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """`linalg.select` of tensors after broadcasting all three to a common shape."""
        shape = np.broadcast_shapes(shape_of(condition), shape_of(lhs), shape_of(rhs))
        operands = [self.broadcast(v, shape) for v in (condition, lhs, rhs)]
        return self.insert(SelectOp(operands, [self.empty(shape, lhs.type.element_type)]))

    def batch_matmul(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """`linalg.batch_matmul` of (B, M, K) and (B, K, N): a product of two run-time tensors."""
        (b, m, _), (_, _, n) = shape_of(lhs), shape_of(rhs)
        return self.named(self.insert(BatchMatmulOp(lhs, rhs, self.empty((b, m, n), lhs.type.element_type))))

    def gather(self, table: SSAValue, indices: SSAValue) -> SSAValue:
        """`table[indices]` along its first dimension (`tensor.gather`, the gathered dimension dropped)."""
        return self.gather_points(table, self.reshape(indices, (*shape_of(indices), 1)))

    def gather_points(self, table: SSAValue, coordinates: SSAValue) -> SSAValue:
        """`table` at the coordinates that the last dimension of `coordinates` holds, one for each of
        its first dimensions (`tensor.gather`, those dimensions dropped)."""
        count = shape_of(coordinates)[-1]
        shape = (*shape_of(coordinates)[:-1], *shape_of(table)[count:])
        result = TensorType(table.type.element_type, shape)
        return self.insert(GatherOp(table, coordinates, list(range(count)), result))
