"""`tile`: split every crossbar product so each piece fits one crossbar.

A crossbar stores the weight operand (`right` of a gemm, `left` of a gemv, transposed) with the
reduction dimension K along its rows and the output columns along its columns. Each weight takes
`cells_per_weight` neighbouring cells, so a crossbar of `rows × cols` cells holds a
`rows × (cols ÷ cells_per_weight)` tile; a product with its own weight bits (`weight_bits`) takes
⌈weight_bits ÷ cell_bits⌉ cells per weight, so a narrower layer fits more outputs per crossbar. K is split into pieces of at most that many rows whose
partial products are added; the outputs are split into pieces of at most that many columns and
inserted into the result. The bias is added once per output piece. With `band=N`, a gemm's input
rows are split too, in bands of N output rows (image rows of a convolution, tokens of a linear
layer), each band tiled as above. All pieces stay in the same `cinm.compute`, operands first, then
products, then sums, so they can run on different crossbars in parallel.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from xdsl.context import Context
from xdsl.dialects import tensor
from xdsl.dialects.builtin import ModuleOp, TensorType, UnitAttr
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from cimxdsl.device import DeviceConfig
from cimxdsl.device.config import tile_shape
from cimxdsl.dialects import cinm
from cimxdsl.dialects.utils import carry_precision, precision_of, static_insert, static_slice
from cimxdsl.transforms.common.device_option import DeviceOption
from cimxdsl.transforms.common.device_record import record_device
from cimxdsl.transforms.common.errors import note, pass_error
from cimxdsl.transforms.common.options import ChoicePass
from cimxdsl.transforms.memristor.tile_loops import given_tile_sizes, tile_in_loops


def ranges(size: int, step: int) -> list[tuple[int, int]]:
    """`(offset, length)` pieces of at most `step` covering `0..size`."""
    return [(start, min(step, size - start)) for start in range(0, size, step)]


class TiledProduct:
    """Builds the ops of one tiled product: operand slices, piece products, sums and the result."""

    def __init__(self):
        self.slices: list[Operation] = []
        self.products: list[Operation] = []
        self.sums: list[Operation] = []
        self.result: SSAValue | None = None
        self._slice_cache: dict[tuple[SSAValue, tuple[int, ...], tuple[int, ...]], SSAValue] = {}

    def slice(self, source: SSAValue, offsets: Sequence[int], sizes: Sequence[int]) -> SSAValue:
        source_type = source.type
        assert isinstance(source_type, TensorType)
        if tuple(offsets) == (0,) * len(offsets) and tuple(sizes) == source_type.get_shape():
            return source
        key = (source, tuple(offsets), tuple(sizes))
        if key not in self._slice_cache:
            op = static_slice(source, offsets, sizes)
            self.slices.append(op)
            self._slice_cache[key] = op.result
        return self._slice_cache[key]

    def product(self, op: Operation, source: Operation) -> SSAValue:
        """A piece `op` of the product `source` (whose precision it keeps)."""
        op.attributes[cinm.NOTILE] = UnitAttr()
        carry_precision(source, op)
        self.products.append(op)
        return op.results[0]

    def add(self, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        op = cinm.AddOp(lhs, rhs)
        self.sums.append(op)
        return op.result

    def sum(self, values: Sequence[SSAValue]) -> SSAValue:
        total = values[0]
        for value in values[1:]:
            total = self.add(total, value)
        return total

    def assemble(self, result_type: TensorType, pieces: Sequence[tuple[int | Sequence[int], SSAValue]]) -> SSAValue:
        """Insert each `(offset along the last dimension, or offsets, piece)` into a tensor of
        `result_type`."""
        if len(pieces) == 1:
            return pieces[0][1]
        empty = tensor.EmptyOp([], result_type)
        self.sums.append(empty)
        current = empty.tensor
        for offset, piece in pieces:
            shape = piece.type.get_shape()
            offsets = [0] * (len(shape) - 1) + [offset] if isinstance(offset, int) else list(offset)
            insert = static_insert(piece, current, offsets, shape)
            self.sums.append(insert)
            current = insert.result
        return current

    @property
    def ops(self) -> list[Operation]:
        return [*self.slices, *self.products, *self.sums]


def tile_gemm(op: cinm.GemmOp, k_step: int, n_step: int, m_step: int | None = None) -> TiledProduct:
    """`op` in pieces of at most `k_step` × `n_step` weights and (with `m_step`) bands of at most
    `m_step` input rows, band by band."""
    (m, k), n = op.left.type.get_shape(), op.right.type.get_shape()[1]
    element = op.result.type.element_type
    tiled = TiledProduct()
    pieces: list[tuple[int | Sequence[int], SSAValue]] = []
    for m0, mm in ranges(m, m_step or m):
        for n0, nn in ranges(n, n_step):
            partials = []
            for k0, kk in ranges(k, k_step):
                left = tiled.slice(op.left, [m0, k0], [mm, kk])
                right = tiled.slice(op.right, [k0, n0], [kk, nn])
                partials.append(tiled.product(cinm.GemmOp(left, right, None, TensorType(element, (mm, nn))), op))
            total = tiled.sum(partials)
            if op.bias is not None:
                total = tiled.add(total, tiled.slice(op.bias, [m0, n0], [mm, nn]))
            pieces.append((n0 if m_step is None else (m0, n0), total))
    tiled.result = tiled.assemble(op.result.type, pieces)
    return tiled


def tile_gemv(op: cinm.GemvOp, k_step: int, m_step: int) -> TiledProduct:
    m, k = op.left.type.get_shape()
    element = op.result.type.element_type
    tiled = TiledProduct()
    pieces = []
    for m0, mm in ranges(m, m_step):
        partials = []
        for k0, kk in ranges(k, k_step):
            matrix = tiled.slice(op.left, [m0, k0], [mm, kk])
            vector = tiled.slice(op.right, [k0], [kk])
            partials.append(tiled.product(cinm.GemvOp(matrix, vector, None, TensorType(element, (mm,))), op))
        total = tiled.sum(partials)
        if op.bias is not None:
            total = tiled.add(total, tiled.slice(op.bias, [m0], [mm]))
        pieces.append((m0, total))
    tiled.result = tiled.assemble(op.result.type, pieces)
    return tiled


def needs_tiling(op: cinm.GemmOp | cinm.GemvOp, rows: int, columns: int) -> bool:
    """Whether `op`, a product in a compute not marked `cinm.notile` nor placed on the host, is
    larger than one crossbar. Cinnamon's buffer form (memrefs) is not tiled: one that does not fit
    is an error."""
    if cinm.NOTILE in op.attributes or not isinstance(op.parent_op(), cinm.ComputeOp) or cinm.on_host(op):
        return False
    weights = op.right if isinstance(op, cinm.GemmOp) else op.left
    k, n = weights.type.get_shape()[::-1] if isinstance(op, cinm.GemvOp) else weights.type.get_shape()
    larger = k > rows or n > columns
    if larger and op.out is not None:
        raise pass_error(
            "tile",
            f"'{op.name}' on memrefs (Cinnamon's buffer form) is not tiled and its {k}x{n} weights do not fit "
            f"a {rows}x{columns} crossbar: write it on tensors",
        )
    return larger


def loops_needed(op: cinm.GemmOp | cinm.GemvOp | cinm.ReduceOp, rows: int, columns: int) -> bool:
    """Whether `tile{mode=loop}` tiles `op`: a product larger than one crossbar, or a product or
    reduce in a compute whose tile sizes are given (`cinm.tile_sizes`); a reduce over a dimension
    longer than a crossbar's rows also by default."""
    if cinm.NOTILE in op.attributes or not isinstance(op.parent_op(), cinm.ComputeOp):
        return False
    if isinstance(op, cinm.ReduceOp):
        return True  # `loop_reduce` leaves one that fits a window
    given = op.out is None and not cinm.on_host(op) and given_tile_sizes(op) is not None
    return needs_tiling(op, rows, columns) or given


def row_length(op: cinm.GemmOp) -> int:
    """The input rows of a gemm that make one row of its output: an output image row (its width)
    when the inputs are the patches of a convolution (`cinm.op.im2col`), else 1 (a token)."""
    patches = op.left.owner
    return patches.output_size()[1] if isinstance(patches, cinm.Im2colOp) else 1


def banded(op: cinm.GemmOp | cinm.GemvOp, band: int) -> int | None:
    """The input rows per band of `op` for bands of `band` output rows, or None when it has at most
    one band (a gemv, one row, or no `band`)."""
    if not band or not isinstance(op, cinm.GemmOp) or cinm.NOTILE in op.attributes:
        return None
    if not isinstance(op.parent_op(), cinm.ComputeOp) or cinm.on_host(op) or op.out is not None:
        return None
    step = band * row_length(op)
    return step if op.left.type.get_shape()[0] > step else None


@dataclass(frozen=True)
class CrossbarShape:
    """The tile a crossbar holds: `rows` × `columns` weights of the device's bits, and of a product
    with its own weight bits ⌈weight_bits ÷ cell_bits⌉ cells each of `cols` (`cell_bits` None: one
    cell per weight, whatever its bits)."""

    rows: int
    columns: int
    cols: int
    cell_bits: int | None

    def columns_of(self, op: Operation) -> int:
        precision = precision_of(op)
        if precision is None or self.cell_bits is None:
            return self.columns
        return tile_shape(self.rows, self.cols, -(-precision[0] // self.cell_bits))[1]


@dataclass
class TileProducts(RewritePattern):
    shape: CrossbarShape
    band: int = 0
    unbanded: list[str] = field(default_factory=list[str])
    """Layers (by compute name) of several output rows that `band` cannot split: a band or fewer."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cinm.GemmOp | cinm.GemvOp, rewriter: PatternRewriter):
        rows, columns = self.shape.rows, self.shape.columns_of(op)
        m_step = banded(op, self.band)
        if self.band and m_step is None and banded(op, 1) is not None:  # more than one row, but at most a band
            self.unbanded.append(cinm.layer_name(op.parent_op()))
        if m_step is None and not needs_tiling(op, rows, columns):
            return
        if isinstance(op, cinm.GemmOp):
            tiled = tile_gemm(op, rows, columns, m_step)
        else:
            tiled = tile_gemv(op, rows, columns)
        rewriter.replace(op, tiled.ops, [tiled.result])


@dataclass(frozen=True)
class TilePass(DeviceOption, ChoicePass):
    """Tile every `cinm.op.gemm`/`gemv` to the crossbar size.

    The crossbar is `rows × cols` cells (default: from `device`, a preset name or TOML file, else
    128 × 128); a weight takes the device's cells per weight (1 without a device). The device (or
    the geometry alone) is recorded on the module (`device_record`)."""

    name = "tile"

    rows: int | None = None
    cols: int | None = None
    device: str | None = None  # type: ignore[assignment]
    mode: Literal["unroll", "loop"] = "unroll"
    """`unroll`: static tiles, as the crossbar flow needs; `loop`: `affine.for` nests shaped as
    Cinnamon's `cinm-tiling` (`tile_loops.py`), unrolled later by `cinm-unroll-loops`."""

    band: int = 0
    """Output rows per band (`unroll` only): a convolution's gemm is also split along its input rows
    into bands of `band` output image rows, a linear layer's into bands of `band` token rows, so that a
    cross-layer scheduler (`schedule-clsa`) starts a band once the rows it needs exist; 0: no bands."""

    device_config: DeviceConfig | None = field(default=None, init=False, compare=False)
    """The device as an object, from Python (`for_device`); not an option, it has no text form."""

    def device_or_none(self) -> DeviceConfig | None:
        return None if self.device is None else self.config()

    def tile_shape(self) -> tuple[int, int]:
        config = self.device_or_none()
        rows = self.rows if self.rows is not None else (config.rows if config else 128)
        cols = self.cols if self.cols is not None else (config.weight_cols if config else 128)
        for option, value in (("rows", rows), ("cols", cols)):
            if value <= 0:
                raise pass_error(self.name, f"option '{option}' must be positive, got {value}")
        cells = config.cells_per_weight if config else 1
        if cols < cells:
            raise pass_error(self.name, f"a crossbar of {cols} columns cannot hold one weight of {cells} cells")
        return tile_shape(rows, cols, cells)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rows, columns = self.tile_shape()
        config = self.device_or_none()
        if config is not None and (self.rows, self.cols) != (None, None):
            config = config.replace(rows=rows, cols=columns * config.cells_per_weight)
        record_device(op, config, rows, columns)
        if self.band < 0:
            raise pass_error(self.name, f"option 'band' must be at least 0, got {self.band}")
        if self.band and self.mode != "unroll":
            raise pass_error(self.name, "option 'band' needs mode=unroll")
        cols = columns if config is None else config.weight_cols
        shape = CrossbarShape(rows, columns, cols, config and config.cell_bits)
        if self.mode == "unroll":
            pattern = TileProducts(shape, self.band)
            PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(op)
            if pattern.unbanded:
                names = ", ".join(dict.fromkeys(pattern.unbanded))
                note(self.name, f"band={self.band} does not split {names} (a band of output rows or fewer): run whole")
        else:
            for found in [o for o in op.walk() if isinstance(o, cinm.GemmOp | cinm.GemvOp | cinm.ReduceOp)]:
                if loops_needed(found, rows, shape.columns_of(found)):
                    tile_in_loops(found, rows, shape.columns_of(found))
