"""Row-band data flow across layers, for a cross-layer scheduler.

`tile{band=N}` splits a layer's products into bands of output rows, but each band still reads its
inputs from whole tensors: the previous layer's result, assembled from all of its bands, goes
through host ops (bias, activation, residual add, padding, pooling, patches) before a band of the
next layer slices it. `band_inputs` rewrites the input of every banded crossbar product to be
computed from the rows it needs only: the host ops between the layers are rebuilt on those rows,
back to the bands of the producing products, so that the product depends (in SSA, which is all the
schedulers look at) on the crossbar ops that make those rows. The values are the same: each
rebuilt op computes the rows of its original that were asked for. Where an op's rows cannot be
traced (a reshape, a reduction), the rows are sliced from its whole result, which depends on all
of its producers, as before.

The rows are those of one dimension of each value: the rows of a patch matrix (`cinm.op.im2col`,
one batch image), the image rows (H) of an NCHW or NHWC tensor, the rows of the matrices that tiled
products assemble (`tensor.insert_slice` into `tensor.empty`).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import tensor, tosa
from xdsl.dialects.builtin import DenseArrayBase, TensorType, i64
from xdsl.dialects.linalg.ops import TransposeOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from cimxdsl.dialects import cim, cinm
from cimxdsl.dialects.utils import static_insert, static_slice
from cimxdsl.transforms.memristor.scheduling.framework import side_effect_free

Rows = tuple[int, int]


def _values(attr) -> list[int]:
    return list(attr.get_values())


def _shape(value: SSAValue) -> list[int]:
    assert isinstance(value.type, TensorType)
    return list(value.type.get_shape())


def _with_rows(shape: Sequence[int], axis: int, rows: Rows) -> list[int]:
    return [rows[1] - rows[0] if d == axis else size for d, size in enumerate(shape)]


class RowTracer:
    """Builds, before `anchor`, values holding given rows of existing values from the fewest
    producers it can (see the module docstring)."""

    def __init__(self, anchor: Operation):
        self.anchor = anchor
        self.cache: dict[tuple[SSAValue, int, Rows], SSAValue] = {}

    def emit(self, op: Operation) -> SSAValue:
        Rewriter.insert_op(op, InsertPoint.before(self.anchor))
        return op.results[0]

    def slice(self, value: SSAValue, axis: int, rows: Rows) -> SSAValue:
        """`value`'s `rows` along `axis`, sliced from the whole value."""
        shape = _shape(value)
        offsets = [rows[0] if d == axis else 0 for d in range(len(shape))]
        return self.emit(static_slice(value, offsets, _with_rows(shape, axis, rows)))

    def rows(self, value: SSAValue, axis: int, rows: Rows) -> SSAValue:
        """A value equal to `value`'s `rows` along `axis`."""
        if rows == (0, _shape(value)[axis]):
            return value
        key = (value, axis, rows)
        if key not in self.cache:
            traced = self.trace(value, axis, rows)
            self.cache[key] = traced if traced is not None else self.slice(value, axis, rows)
        return self.cache[key]

    def trace(self, value: SSAValue, axis: int, rows: Rows) -> SSAValue | None:
        """The rows rebuilt from the rows of the op's operands, or None where they cannot be traced."""
        op = value.owner
        if not isinstance(op, Operation) or len(op.results) != 1:
            return None
        if isinstance(op, tensor.ExtractSliceOp):
            return self.extract_slice(op, axis, rows)
        if isinstance(op, cinm.Im2colOp):
            return self.im2col(op, axis, rows)
        if isinstance(op, tensor.PadOp):
            return self.pad(op, axis, rows)
        if isinstance(op, tosa.MaxPool2DOp):
            return self.max_pool(op, axis, rows)
        if isinstance(op, TransposeOp):
            return self.transpose(op, axis, rows)
        if isinstance(op, tensor.ExpandShapeOp):
            return self.expand_shape(op, axis, rows)
        if isinstance(op, tensor.InsertSliceOp):
            return self.assembled(op, axis, rows)
        if elementwise(op):
            result_type = TensorType(op.results[0].type.element_type, _with_rows(_shape(value), axis, rows))
            operands = [self.rows(operand, axis, rows) for operand in op.operands]
            return self.emit(rebuilt(op, operands, result_type))
        return None

    def extract_slice(self, op: tensor.ExtractSliceOp, axis: int, rows: Rows) -> SSAValue | None:
        offsets, sizes, strides = (_values(a) for a in (op.static_offsets, op.static_sizes, op.static_strides))
        source_shape = _shape(op.source)
        if op.offsets or op.sizes or op.strides or set(strides) != {1}:
            return None
        if not len(sizes) == len(source_shape) == len(_shape(op.result)):  # (a rank-reducing slice)
            return None
        start = offsets[axis] + rows[0]
        source = self.rows(op.source, axis, (start, offsets[axis] + rows[1]))
        new_offsets = [0 if d == axis else o for d, o in enumerate(offsets)]
        new_sizes = _with_rows(sizes, axis, rows)
        if new_offsets == [0] * len(sizes) and new_sizes == _shape(source):
            return source
        return self.emit(static_slice(source, new_offsets, new_sizes))

    def im2col(self, op: cinm.Im2colOp, axis: int, rows: Rows) -> SSAValue | None:
        """Patch rows of whole output rows of one image: the input rows their windows cover."""
        n = _shape(op.input)[0]
        (kernel, _), (stride, _), (dilation, _) = (_values(a) for a in (op.kernel, op.strides, op.dilations))
        width = op.output_size()[1]
        if axis != 0 or n != 1 or rows[0] % width or rows[1] % width:
            return None
        first, last = rows[0] // width, rows[1] // width - 1
        needed = (first * stride, last * stride + dilation * (kernel - 1) + 1)
        image = self.rows(op.input, 2, needed)
        return self.emit(cinm.Im2colOp(image, _values(op.kernel), _values(op.strides), _values(op.dilations)))

    def pad(self, op: tensor.PadOp, axis: int, rows: Rows) -> SSAValue | None:
        low, high = _values(op.static_low), _values(op.static_high)
        if op.low or op.high:
            return None
        size = _shape(op.source)[axis]
        inside = (max(rows[0] - low[axis], 0), min(rows[1] - low[axis], size))
        if inside[0] >= inside[1]:
            return None
        source = self.rows(op.source, axis, inside)
        low[axis] = max(low[axis] - rows[0], 0)
        high[axis] = (rows[1] - rows[0]) - low[axis] - (inside[1] - inside[0])
        result_type = TensorType(op.result.type.element_type, _with_rows(_shape(op.result), axis, rows))
        properties = {
            "static_low": DenseArrayBase.from_list(i64, low),
            "static_high": DenseArrayBase.from_list(i64, high),
        }
        return self.emit(rebuilt(op, [source], result_type, properties))

    def max_pool(self, op: tosa.MaxPool2DOp, axis: int, rows: Rows) -> SSAValue | None:
        """NHWC pooling: the input rows the windows of the output rows cover, padding kept at the borders."""
        if axis != 1:
            return None
        (kernel, _), (stride, _), (top, _, left, right) = (_values(a) for a in (op.kernel, op.stride, op.pad))
        height = _shape(op.input)[1]
        start, end = rows[0] * stride - top, (rows[1] - 1) * stride - top + kernel
        inside = (max(start, 0), min(end, height))
        if inside[0] >= inside[1]:
            return None
        image = self.rows(op.input, 1, inside)
        pad = DenseArrayBase.from_list(i64, (max(-start, 0), max(end - height, 0), left, right))
        result_type = TensorType(op.output.type.element_type, _with_rows(_shape(op.output), axis, rows))
        return self.emit(rebuilt(op, [image], result_type, {"pad": pad}))

    def transpose(self, op: TransposeOp, axis: int, rows: Rows) -> SSAValue | None:
        permutation = _values(op.permutation)
        source = self.rows(op.inputs[0], permutation[axis], rows)
        result_type = TensorType(op.results[0].type.element_type, _with_rows(_shape(op.results[0]), axis, rows))
        init = self.emit(tensor.EmptyOp([], result_type))
        return self.emit(TransposeOp(source, init, op.permutation, result_type))

    def expand_shape(self, op: tensor.ExpandShapeOp, axis: int, rows: Rows) -> SSAValue | None:
        """Rows of a dimension expanded from a source dimension whose earlier parts are 1: a
        contiguous range of the source's rows."""
        shape = _shape(op.result)
        groups = [[d.value.data for d in group.data] for group in op.reassociation.data]
        source_axis, group = next((g, dims) for g, dims in enumerate(groups) if axis in dims)
        before, after = group[: group.index(axis)], group[group.index(axis) + 1 :]
        if any(shape[d] != 1 for d in before) or op.dynamic_output_shape:
            return None
        inner = 1
        for d in after:
            inner *= shape[d]
        source = self.rows(op.src, source_axis, (rows[0] * inner, rows[1] * inner))
        new_shape = _with_rows(shape, axis, rows)
        result_type = TensorType(op.result.type.element_type, new_shape)
        properties = {"static_output_shape": DenseArrayBase.from_list(i64, new_shape)}
        return self.emit(rebuilt(op, [source], result_type, properties))

    def assembled(self, op: tensor.InsertSliceOp, axis: int, rows: Rows) -> SSAValue | None:
        """Rows of a tensor assembled from pieces (`tensor.insert_slice`s into `tensor.empty`), from
        the pieces that hold them."""
        pieces: list[tuple[SSAValue, list[int], list[int]]] = []
        current: Operation = op
        while isinstance(current, tensor.InsertSliceOp):
            strides = _values(current.static_strides)
            if current.offsets or current.sizes or current.strides or set(strides) != {1}:
                return None
            if len(_shape(current.source)) != len(_shape(current.result)):
                return None
            pieces.append((current.source, _values(current.static_offsets), _shape(current.source)))
            owner = current.dest.owner
            if not isinstance(owner, Operation):
                return None
            current = owner
        if not isinstance(current, tensor.EmptyOp):
            return None
        wanted = [(0, size) if d != axis else rows for d, size in enumerate(_shape(op.result))]
        overlapping = []
        for source, offsets, sizes in reversed(pieces):
            box = [(max(lo, o), min(hi, o + s)) for (lo, hi), o, s in zip(wanted, offsets, sizes, strict=True)]
            if all(lo < hi for lo, hi in box):
                overlapping.append((source, offsets, box))
        if not covered_once(wanted, [box for _, _, box in overlapping]):
            return None
        element = op.result.type.element_type
        shape = _with_rows(_shape(op.result), axis, rows)
        result = None
        for source, offsets, box in overlapping:
            part = self.rows(source, axis, (box[axis][0] - offsets[axis], box[axis][1] - offsets[axis]))
            starts = [0 if d == axis else lo - o for d, ((lo, _), o) in enumerate(zip(box, offsets, strict=True))]
            sizes = [hi - lo for lo, hi in box]
            if any(starts) or sizes != _shape(part):
                part = self.emit(static_slice(part, starts, sizes))
            if len(overlapping) == 1:
                return part  # it holds all the rows asked for
            if result is None:
                result = self.emit(tensor.EmptyOp([], TensorType(element, shape)))
            at = [lo - w for (lo, _), (w, _) in zip(box, wanted, strict=True)]
            result = self.emit(static_insert(part, result, at, _shape(part)))
        return result


def covered_once(wanted: list[Rows], boxes: list[list[Rows]]) -> bool:
    """Whether `boxes` (inside `wanted`) cover it without overlapping each other."""

    def volume(box: Sequence[Rows]) -> int:
        total = 1
        for lo, hi in box:
            total *= hi - lo
        return total

    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            if all(max(x[0], y[0]) < min(x[1], y[1]) for x, y in zip(a, b, strict=True)):
                return False
    return sum(volume(box) for box in boxes) == volume(wanted)


def elementwise(op: Operation) -> bool:
    """A side-effect-free op without regions whose operands and result are tensors of one shape."""
    if op.regions or not side_effect_free(op) or not op.operands or not isinstance(op.results[0].type, TensorType):
        return False
    shape = _shape(op.results[0])
    return all(isinstance(v.type, TensorType) and _shape(v) == shape for v in op.operands)


def rebuilt(op: Operation, operands: Sequence[SSAValue], result_type, properties: dict | None = None) -> Operation:
    """`op` again on `operands`, with `result_type` and some `properties` changed."""
    return type(op).create(
        operands=list(operands),
        result_types=[result_type],
        properties={**op.properties, **(properties or {})},
        attributes=dict(op.attributes),
        regions=[region.clone() for region in op.regions],
    )


def banded_input(product: cim.GemmOp) -> bool:
    """Whether `product`'s inputs are a band (a strict range of rows) of a larger matrix."""
    op = product.lhs.owner
    if not isinstance(op, tensor.ExtractSliceOp):
        return False
    return _values(op.static_sizes)[0] < _shape(op.source)[0]


def band_inputs(block: Block, products: Sequence[Operation]) -> None:
    """Rebuild the inputs of the banded gemms among `products` (ops of `block`) from the rows they
    need, then erase the host ops no longer used."""
    for product in products:
        if isinstance(product, cim.GemmOp) and banded_input(product):
            tracer = RowTracer(product)
            rows = (0, _shape(product.lhs)[0])
            traced = tracer.trace(product.lhs, 0, rows)
            if traced is not None:
                product.operands[1] = traced
    erase_unused(block)


def erase_unused(block: Block) -> None:
    """Erase the side-effect-free ops of `block` whose results nothing uses, last first."""
    for op in reversed(list(block.ops)):
        if op.results and not any(r.uses for r in op.results) and side_effect_free(op):
            Rewriter.erase_op(op)
