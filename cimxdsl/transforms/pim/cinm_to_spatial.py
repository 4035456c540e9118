"""`cinm-to-spatial`: RAPTOR's channel-wise lowering of convolutions and gemms (M. Miotti, "Channel-Wise Lowering of ONNX-Based Deep Learning Models for ReRAM Architectures", Master's thesis, Politecnico di Milano, 2025, §4).

Every function holding `cinm.compute` ops is rewritten so that all its work happens in
`spat.compute` ops. Activations are kept pixel-major (`[H, W, C]`, one image) and split along the
channels into *tiles* of at most `xbar-size` channels; a tile is one value, never a pixel, so the IR
does not grow with the image size.

A convolution (`cinm.compute { im2col, gemm, expand_shape, transpose }`, padding folded from the
`tensor.pad` before it) with a `(C·KH·KW) × F` constant weight matrix becomes crossbar matrices
`W[k][input tile, output tile]`, one per kernel position `k`. Blocks of all zeros and kernel
positions that never read an image pixel are skipped (weight skipping, `crossbar_weights.py`). The blocks,
ordered by output tile, input tile and kernel position, are cut into `spat.compute`s of at most
`crossbars-per-compute` crossbars; each applies `spat.apply_filters` per input tile (weight index
-1 for the positions it does not hold), sums them with `spat.vadd`, and adds the partial sum of
the same output tile from the previous compute (Miotti 2025, Listing 4.1). A gemm (`cinm.op.gemm %x,
%W [plus %b]`) is the same with a 1×1 kernel (Miotti 2025, App. B). With `packing=im2col` the
blocks of each tile pair are stacked and cut into crossbars of `xbar-size` rows instead, applied by
one `apply_filters` in im2col form per compute and tile pair.

Each source op type has one handler (`HANDLERS`); the lowered form of every value is a `Lowered`
(`spatial_values.py`). Host ops between layers become spatial vector ops appended to the compute producing each tile:
ReLU (`arith.maxsi` with 0) `spat.vrelu`; other `arith.maxsi`/`addi`/`subi`/`muli` `spat.vmax`/
`vadd`/`vsub`/`vmul`; `arith.minsi` and `arith.shrsi` (requantization) stay arith ops on the
tiles; `linalg.pooling_nchw_max` `spat.maxpool`; `tosa.reduce_sum` over axes 2 and 3 followed by
`arith.floordivsi` (or `arith.divsi` on non-negative values) by H·W `spat.global_avgpool`;
`tosa.clamp` (integers) a maximum and a minimum; `tensor.collapse_shape`/`tensor.reshape` of
`[1, C, 1, 1]` to `[1, C]` (flatten) and `tensor.concat` along the channels only relabel tiles
(an element-wise op on operands tiled differently moves them to regular tiles through crossbars
holding the identity matrix).
Host ops on constants only are folded (with the interpreter functions). Splat constants are
materialized in the computes; other constants become function-level constants passed as inputs.
Function inputs are converted to `[H, W, C]` tiles by host glue (`linalg.transpose`,
`tensor.collapse_shape`, `tensor.extract_slice`); results are joined with `spat.concat` and
converted back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func, tensor, tosa
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.dialects.linalg.ops import FillOp, PoolingNchwMaxOp, TransposeOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from cimxdsl.device import DEFAULT_DEVICE, Device, DeviceConfigError, load_device_config
from cimxdsl.dialects import cinm
from cimxdsl.dialects import spatial as spat
from cimxdsl.dialects.crossbar_ops import FilterGeometry, Im2col
from cimxdsl.dialects.utils import (
    dense_array,
    dense_attr,
    numpy_dtype,
    precision_of,
    reassociation,
    set_precision,
    shape_of,
)
from cimxdsl.interpreters import build_interpreter
from cimxdsl.transforms.common.errors import pass_error
from cimxdsl.transforms.common.functions import functions_holding
from cimxdsl.transforms.common.options import ChoicePass
from cimxdsl.transforms.pim.crossbar_weights import (
    Packing,
    WeightBlock,
    im2col_blocks,
    valid_positions,
    weight_blocks,
    weight_origin,
)
from cimxdsl.transforms.pim.spatial_values import (
    FLATTENED_USE,
    Constant,
    Flattened,
    Layout,
    Lowered,
    Node,
    NodeRef,
    Padded,
    PartialSum,
    Ref,
    Tiled,
)

ORIGIN = "origin"
"""Discardable attribute naming where a crossbar matrix comes from (kept in the artifacts)."""


def splat_constant(value: int | float, tensor_type: TensorType) -> arith.ConstantOp:
    """`arith.constant dense<value> : tensor_type`."""
    return arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(tensor_type, [value]))


def channel_bounds(channels: int, tile: int) -> list[tuple[int, int]]:
    return [(lo, min(lo + tile, channels)) for lo in range(0, channels, tile)]


def int_values(attr: Attribute) -> tuple[int, ...]:
    if isinstance(attr, DenseArrayBase):
        return tuple(attr.get_values())
    assert isinstance(attr, DenseIntOrFPElementsAttr)
    return tuple(int(v) for v in dense_array(attr).reshape(-1))


# ----------------------------------------------------------------------------------------------
# The lowering of one function
# ----------------------------------------------------------------------------------------------

_ELEMENTWISE = {
    arith.AddiOp: "add",
    arith.SubiOp: "sub",
    arith.MuliOp: "mul",
    arith.MaxSIOp: "max",
    arith.MinSIOp: "min",
    arith.ShRSIOp: "shr",
}
_COMMUTATIVE = {"add", "mul", "max", "min"}
_SPAT_BINARY = {"add": spat.VAddOp, "sub": spat.VSubOp, "mul": spat.VMulOp, "max": spat.VMaxOp}
_ARITH_BINARY = {"min": arith.MinSIOp, "shr": arith.ShRSIOp}


class FunctionLowering:
    def __init__(self, function: func.FuncOp, tile: int, crossbars_per_compute: int, packing: Packing = "kernel"):
        self.function = function
        self.tile = tile
        self.crossbars_per_compute = crossbars_per_compute
        self.packing = packing
        self.values: dict[SSAValue, Lowered] = {}
        self.nodes: list[Node] = []
        self.prologue: list[Operation] = []
        self.epilogue: list[Operation] = []
        self.input_tiles: dict[SSAValue, Tiled] = {}
        self.placeholders: dict[NodeRef, SSAValue] = {}
        self.folder = None
        self.layers = 0

    # --- driver ----------------------------------------------------------------------------------
    def run(self) -> None:
        block = self.function.body.block
        old_ops = list(block.ops)
        for op in old_ops:
            if isinstance(op, func.ReturnOp):
                results = [self.output(i, v) for i, v in enumerate(op.arguments)]
                self.epilogue.append(func.ReturnOp(*results))
            elif not self.is_dead(op):
                self.visit(op)
        computes = self.emit_nodes()
        for op in reversed(old_ops):
            op.detach()
            op.erase(safe_erase=False)
        block.add_ops([*self.prologue, *computes, *self.epilogue])
        remove_dead_ops(block)  # e.g. crossbar matrices of a layer whose result is never used

    @staticmethod
    def is_dead(op: Operation) -> bool:
        return bool(op.results) and all(not r.uses for r in op.results)

    def visit(self, op: Operation) -> None:
        handler = HANDLERS.get(type(op))
        if handler is not None:
            self.values[op.results[0]] = handler(self, op)
        elif op.results and all(isinstance(self.known(v), Constant) for v in op.operands):
            self.values.update(zip(op.results, self.fold(op)))
        else:
            raise pass_error("cinm-to-spatial", "this op cannot run on PIM cores", op)

    def empty(self, op: tensor.EmptyOp) -> Constant:
        t = op.tensor.type
        return Constant(t.get_shape(), t.element_type, splat=0)

    def fill(self, op: FillOp) -> Constant:
        fill = self.values.get(op.inputs[0])
        if not isinstance(fill, Constant) or fill.shape != ():
            raise pass_error("cinm-to-spatial", "only fills with a constant scalar are supported", op)
        t = op.res[0].type
        return Constant(t.get_shape(), t.element_type, splat=fill.splat)

    def fold(self, op: Operation) -> list[Constant]:
        """The results of a host op on constants, computed now with the interpreter functions (as
        xDSL's `constant-fold-interp` does)."""
        if self.folder is None:
            module = self.function.parent_op()
            while module is not None and not isinstance(module, ModuleOp):
                module = module.parent_op()
            assert isinstance(module, ModuleOp)
            self.folder = build_interpreter(module, Device("ideal"))
        args = []
        for v in op.operands:
            c = self.known(v)
            assert isinstance(c, Constant)
            args.append(c.values() if c.shape else c.splat)
        try:
            results = self.folder.run_op(op, tuple(args))
        except Exception:
            raise pass_error(
                "cinm-to-spatial", "this op cannot run on PIM cores (nor be folded on its constant operands)", op
            ) from None
        folded = []
        for r, value in zip(op.results, results, strict=True):
            t = r.type
            if not isinstance(t, TensorType):
                folded.append(Constant((), t, splat=value))
            else:
                folded.append(Constant(t.get_shape(), t.element_type, array=np.asarray(value)))
        return folded

    # --- operands --------------------------------------------------------------------------------
    def constant(self, op: arith.ConstantOp) -> Constant:
        attr, t = op.value, op.result.type
        if isinstance(attr, DenseIntOrFPElementsAttr):
            assert isinstance(t, TensorType)
            array = dense_array(attr)
            flat = array.reshape(-1)
            if flat.size and np.all(flat == flat[0]):
                return Constant(t.get_shape(), t.element_type, splat=flat[0].item())
            return Constant(t.get_shape(), t.element_type, array=array)
        if isinstance(attr, IntegerAttr):
            return Constant((), t, splat=attr.value.data)
        raise pass_error("cinm-to-spatial", f"unsupported constant {attr}", op)

    def known(self, value: SSAValue) -> Lowered | SSAValue:
        """The lowered form of `value`, or `value` itself (a function argument, an unlowered value)."""
        return self.values.get(value, value)

    def tiled(self, value: SSAValue, user: Operation) -> Tiled:
        """`value` as tiles: a lowered activation, or host glue slicing a function argument."""
        known = self.known(value)
        if isinstance(known, Tiled):
            return known
        if isinstance(known, Flattened):
            raise pass_error("cinm-to-spatial", FLATTENED_USE, user)
        if isinstance(known, SSAValue) and isinstance(known.type, TensorType):
            return self.tiles_of_argument(known)
        what = type(known).__name__.lower() if not isinstance(known, SSAValue) else "value"
        raise pass_error("cinm-to-spatial", f"operand {what} cannot be tiled for the crossbars", user)

    def tiles_of_argument(self, value: SSAValue) -> Tiled:
        if value in self.input_tiles:
            return self.input_tiles[value]
        t = value.type
        assert isinstance(t, TensorType)
        shape, element = t.get_shape(), t.element_type
        if len(shape) == 4:
            if shape[0] != 1:
                raise pass_error("cinm-to-spatial", f"only one image (batch 1) is supported, got {t}")
            _, channels, height, width = shape
            init = tensor.EmptyOp([], TensorType(element, (1, height, width, channels)))
            nhwc = TransposeOp(value, init.tensor, DenseArrayBase.from_list(i64, (0, 2, 3, 1)))
            hwc = tensor.CollapseShapeOp.create(
                operands=[nhwc.results[0]],
                result_types=[TensorType(element, (height, width, channels))],
                properties={"reassociation": reassociation([[0, 1], [2], [3]])},
            )
            self.prologue += [init, nhwc, hwc]
            whole, layout = hwc.results[0], Layout(height, width)
        elif len(shape) == 2:
            channels = shape[1]
            whole, layout = value, Layout(rows=shape[0])
        else:
            raise pass_error("cinm-to-spatial", f"function inputs must be NCHW images or matrices, got {t}")
        bounds = channel_bounds(channels, self.tile)
        tiles: list[Ref] = []
        for lo, hi in bounds:
            if (lo, hi) == (0, channels):
                tiles.append(whole)
                continue
            offsets = [0] * (len(layout.tile_shape(0)) - 1) + [lo]
            sizes = list(layout.tile_shape(hi - lo))
            piece = tensor.ExtractSliceOp.from_static_parameters(whole, offsets, sizes)
            self.prologue.append(piece)
            tiles.append(piece.result)
        self.input_tiles[value] = Tiled(shape, layout, element, tiles, bounds)
        return self.input_tiles[value]

    def host_constant(self, array: np.ndarray, element: Attribute) -> SSAValue:
        op = arith.ConstantOp(dense_attr(np.ascontiguousarray(array), element))
        self.prologue.append(op)
        return op.result

    # --- computes --------------------------------------------------------------------------------
    def new_node(self) -> Node:
        node = Node(len(self.nodes))
        self.nodes.append(node)
        return node

    def node_for(self, refs: Sequence[Ref]) -> Node:
        """The latest compute among the producers of `refs` (dependencies then stay acyclic), or
        a new compute if they all come from the host."""
        producers = [r.node for r in refs if isinstance(r, NodeRef)]
        if not producers:
            return self.new_node()
        return max(producers, key=lambda n: n.index)

    def lower_compute(self, op: cinm.ComputeOp) -> Tiled:
        if len(op.results) != 1:
            raise pass_error("cinm-to-spatial", "a cinm.compute must have one result", op)
        self.layers += 1
        name = op.results[0].name_hint or f"layer{self.layers}"
        (result,) = op.body.block.last_op.operands  # cinm.yield
        bias = None
        if isinstance(result.owner, cinm.AddOp):
            result, bias = self.split_add(result.owner, op)
        gemm = self.find_gemm(op)
        if gemm.bias is not None:
            bias = gemm.bias
        matrix = self.known(gemm.right)
        if not isinstance(matrix, Constant) or gemm.right.owner.parent_op() is op:
            raise pass_error(
                "cinm-to-spatial", "the gemm's weight matrix must be a constant defined outside the compute", gemm
            )
        weights = matrix.values()
        element = result.type.element_type
        im2col = gemm.left.owner
        if isinstance(im2col, cinm.Im2colOp):
            if not self.is_conv_epilogue(result, gemm):
                raise pass_error(
                    "cinm-to-spatial",
                    "unsupported convolution body (expected im2col, gemm, expand_shape, transpose)",
                    op,
                )
            image, geometry = self.conv_input(im2col)
            kernel = geometry.kernel
            height, width = image.layout.height, image.layout.width
            out_h, out_w = geometry.output_size(height, width)
            out_layout = Layout(out_h, out_w)
            logical = shape_of(op.results[0])
        else:
            if result is not gemm.result:
                raise pass_error("cinm-to-spatial", "unsupported gemm body (expected cinm.op.gemm then cinm.yield)", op)
            logical = shape_of(gemm.result)
            if isinstance(flat := self.known(gemm.left), Flattened):
                image = flat.image
                height, width = image.layout.height, image.layout.width
                kernel = (height, width)
                geometry = FilterGeometry(kernel)
                out_layout = Layout(1, 1)
            else:
                image = self.tiled(gemm.left, gemm)
                if image.layout.rows is None and image.layout != Layout(1, 1):
                    raise pass_error(
                        "cinm-to-spatial", "a gemm needs a matrix input (a flattened 1x1 image at most)", gemm
                    )
                geometry, kernel = FilterGeometry(), (1, 1)
                height = width = 1
                out_layout = image.layout if image.layout.rows is not None else Layout(1, 1)
        out = self.lower_filters(
            name, image, weights, kernel, geometry, (height, width), out_layout, element, precision_of(gemm)
        )
        out.logical = logical
        if bias is not None:
            out = self.apply_elementwise("add", [out, self.known(bias)], op)
        return out

    @staticmethod
    def find_gemm(op: cinm.ComputeOp) -> cinm.GemmOp:
        gemms = [o for o in op.body.block.ops if isinstance(o, cinm.GemmOp)]
        if len(gemms) != 1:
            raise pass_error("cinm-to-spatial", "a cinm.compute must hold exactly one cinm.op.gemm", op)
        return gemms[0]

    @staticmethod
    def split_add(add: cinm.AddOp, op: cinm.ComputeOp) -> tuple[SSAValue, SSAValue]:
        for inner, outer in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
            if isinstance(outer.owner, Operation) and outer.owner.parent_op() is op:
                continue
            return inner, outer
        raise pass_error("cinm-to-spatial", "the bias of a compute must be defined outside it", op)

    @staticmethod
    def is_conv_epilogue(result: SSAValue, gemm: cinm.GemmOp) -> bool:
        transpose = result.owner
        if not isinstance(transpose, TransposeOp) or tuple(transpose.permutation.get_values()) != (0, 3, 1, 2):
            return False
        expand = transpose.inputs[0].owner
        return isinstance(expand, tensor.ExpandShapeOp) and expand.src is gemm.result

    def conv_input(self, im2col: cinm.Im2colOp) -> tuple[Tiled, FilterGeometry]:
        known = self.known(im2col.input)
        pads = (0, 0, 0, 0)
        source = im2col.input
        if isinstance(known, Padded):
            if known.value != 0:
                raise pass_error("cinm-to-spatial", f"a convolution's padding must be zeros, got {known.value}", im2col)
            source, pads = known.source, known.pads
        image = self.tiled(source, im2col)
        if image.layout.rows is not None:
            raise pass_error("cinm-to-spatial", "a convolution needs an NCHW image", im2col)
        kernel, strides, dilations = (tuple(a.get_values()) for a in (im2col.kernel, im2col.strides, im2col.dilations))
        return image, FilterGeometry(kernel, strides, pads, dilations)  # pyright: ignore[reportArgumentType]

    def padded(self, op: tensor.PadOp) -> Padded:
        if op.low or op.high:
            raise pass_error("cinm-to-spatial", "only static padding is supported", op)
        low, high = op.static_low.get_values(), op.static_high.get_values()
        if len(low) != 4 or any(low[:2]) or any(high[:2]):
            raise pass_error("cinm-to-spatial", "only padding of the H and W axes of an NCHW image is supported", op)
        yielded = op.region.block.last_op.operands[0]
        value = self.known(yielded)
        if not isinstance(value, Constant) or value.shape != ():
            raise pass_error("cinm-to-spatial", "the padding value must be a constant", op)
        return Padded(op.source, (low[2], low[3], high[2], high[3]), value.splat)  # pyright: ignore[reportArgumentType]

    def lower_filters(
        self,
        name: str,
        image: Tiled,
        matrix: np.ndarray,
        kernel: tuple[int, int],
        geometry: FilterGeometry,
        size: tuple[int, int],
        out_layout: Layout,
        element: Attribute,
        precision: tuple[int, int] | None = None,
    ) -> Tiled:
        positions = kernel[0] * kernel[1]
        out_bounds = channel_bounds(matrix.shape[1], self.tile)
        valid = valid_positions(geometry, size) if image.layout.rows is None else [0]
        blocks = weight_blocks(matrix, positions, valid, image.bounds, out_bounds)
        if self.packing == "im2col" and positions > 1 and image.layout.rows is None:
            blocks = im2col_blocks(blocks, self.tile)
        out = Tiled((), out_layout, element, [], out_bounds, nonneg=False)
        partial: dict[int, NodeRef] = {}
        per = self.crossbars_per_compute
        for start in range(0, len(blocks), per):
            node = self.new_node()
            for j, by_output in groupby(blocks[start : start + per], key=lambda b: b.output_tile):
                f0, f1 = out_bounds[j]
                result_type = TensorType(element, out_layout.tile_shape(f1 - f0))
                total = None
                for i, by_input in groupby(by_output, key=lambda b: b.input_tile):
                    pieces = list(by_input)
                    indices = []
                    for block in pieces:
                        origin = weight_origin(name, image.bounds[i], (f0, f1), block, kernel)
                        weight = self.weight_constant(block.matrix, image.element, origin, precision)
                        indices.append(node.add_weight(weight))
                    filters = self.filters(node.use(image.tiles[i]), pieces, indices, positions, result_type, geometry)
                    value = node.add(filters)
                    total = value if total is None else node.add(spat.VAddOp(total, value))
                assert total is not None
                if j in partial:
                    total = node.add(spat.VAddOp(node.use(partial[j]), total))
                partial[j] = node.output(total)
        for j in range(len(out_bounds)):
            if j not in partial:
                partial[j] = self.zero_tile(out.tile_type(j))
            out.tiles.append(partial[j])
        return out

    @staticmethod
    def filters(
        image: SSAValue,
        blocks: list[WeightBlock],
        indices: list[int],
        positions: int,
        result_type: TensorType,
        geometry: FilterGeometry,
    ) -> spat.ApplyFiltersOp:
        """The `apply_filters` of consecutive blocks of one tile pair held at weight `indices`."""
        first = blocks[0]
        if first.positions is not None:
            packing = Im2col(first.positions, first.first_row)
            return spat.ApplyFiltersOp(image, indices, result_type, geometry, packing)
        per_position = [-1] * positions
        for block, index in zip(blocks, indices, strict=True):
            per_position[block.position] = index
        return spat.ApplyFiltersOp(image, per_position, result_type, geometry)

    def retiled(self, value: Tiled) -> Tiled:
        """`value` in tiles of `xbar-size` channels, moved by crossbars holding the identity matrix."""
        channels = value.bounds[-1][1]
        if value.bounds == channel_bounds(channels, self.tile):
            return value
        size = (value.layout.height, value.layout.width)
        identity = np.eye(channels, dtype=np.int64)
        out = self.lower_filters(
            "channel retiling", value, identity, (1, 1), FilterGeometry(), size, value.layout, value.element
        )
        out.logical, out.nonneg = value.logical, value.nonneg
        return out

    def weight_constant(
        self, block: np.ndarray, element: Attribute, origin: str, precision: tuple[int, int] | None = None
    ) -> SSAValue:
        """A crossbar's weights, with their layer (`origin`) and its precision, if it has its own."""
        op = set_precision(arith.ConstantOp(dense_attr(np.ascontiguousarray(block), element)), precision)
        op.attributes[ORIGIN] = StringAttr(origin)
        self.prologue.append(op)
        return op.result

    def zero_tile(self, tile_type: TensorType) -> NodeRef:
        node = self.new_node()
        return node.output(node.add(splat_constant(0, tile_type)))

    # --- element-wise ops ------------------------------------------------------------------------
    def elementwise(self, op: Operation) -> Tiled:
        return self.apply_elementwise(_ELEMENTWISE[type(op)], [self.known(v) for v in op.operands], op)

    def apply_elementwise(self, kind: str, operands: list[object], op: Operation) -> Tiled:
        if any(isinstance(o, Flattened) for o in operands):
            raise pass_error("cinm-to-spatial", FLATTENED_USE, op)
        operands = [self.tiled(o, op) if isinstance(o, SSAValue) else o for o in operands]  # function inputs
        tiled = [o for o in operands if isinstance(o, Tiled)]
        if not tiled:
            raise pass_error("cinm-to-spatial", "element-wise op on host values only", op)
        shape = tiled[0].logical
        for operand in operands:
            if isinstance(operand, Constant):
                if operand.shape != shape:
                    raise pass_error(
                        "cinm-to-spatial",
                        f"constant operand of shape {list(operand.shape)} for a {list(shape)} tensor",
                        op,
                    )
            elif not isinstance(operand, Tiled):
                raise pass_error("cinm-to-spatial", "unsupported operand", op)
        tiles = {tuple(o.bounds) for o in operands if isinstance(o, Tiled)}
        if len(tiles) > 1:  # e.g. a concatenation's tiles added to a convolution's
            operands = [self.retiled(o) if isinstance(o, Tiled) else o for o in operands]
        first = next(o for o in operands if isinstance(o, Tiled))
        assert isinstance(first, Tiled)
        for other in operands:
            if isinstance(other, Tiled) and other.layout != first.layout:
                raise pass_error("cinm-to-spatial", "operands are tiled differently", op)
        lhs, rhs = operands
        if kind in _COMMUTATIVE and isinstance(lhs, Constant):
            lhs, rhs = rhs, lhs
        out = Tiled(first.logical, first.layout, first.element, [], list(first.bounds))
        for t in range(len(first.bounds)):
            refs = [o.tiles[t] for o in (lhs, rhs) if isinstance(o, Tiled)]
            node = self.node_for(refs)
            a = self.tile_operand(node, lhs, t, first)
            b = self.tile_operand(node, rhs, t, first, broadcast=kind in _SPAT_BINARY)
            if kind == "max" and isinstance(rhs, Constant) and rhs.splat_value() == 0:
                value = node.add(spat.VReluOp(a))
            elif kind in _SPAT_BINARY:
                value = node.add(_SPAT_BINARY[kind](a, b))
            else:
                value = node.add(_ARITH_BINARY[kind](a, b))
            out.tiles.append(node.output(value))
        out.nonneg = self.stays_nonnegative(kind, lhs, rhs)
        return out

    def tile_operand(self, node: Node, operand: object, t: int, like: Tiled, broadcast: bool = False) -> SSAValue:
        """Tile `t` of `operand`; with `broadcast`, a constant equal at every pixel (a per-channel bias)
        becomes its `[C]` vector, broadcast over the pixels by the spat op (global memory then holds
        and the core loads one pixel of it, not the whole image)."""
        if isinstance(operand, Tiled):
            return node.use(operand.tiles[t])
        assert isinstance(operand, Constant)
        tile_type = like.tile_type(t)
        splat = operand.splat_value()
        if splat is not None:
            return node.add(splat_constant(splat, tile_type))
        lo, hi = like.bounds[t]
        array = like.layout.physical(operand.values())[..., lo:hi]
        pixels = array.reshape(-1, hi - lo)
        if broadcast and len(pixels) > 1 and bool((pixels == pixels[0]).all()):
            array = pixels[0]
        return node.use(self.host_constant(array, tile_type.element_type))

    @staticmethod
    def stays_nonnegative(kind: str, lhs: object, rhs: object) -> bool:
        def nonneg(o: object) -> bool:
            if isinstance(o, Tiled):
                return o.nonneg
            assert isinstance(o, Constant)
            return bool(np.all(o.values() >= 0))

        if kind == "max":
            return nonneg(lhs) or nonneg(rhs)
        if kind in ("add", "mul", "min"):
            return nonneg(lhs) and nonneg(rhs)
        if kind == "shr":
            return nonneg(lhs)
        return False

    # --- pooling ---------------------------------------------------------------------------------
    def max_pool(self, op: PoolingNchwMaxOp) -> Tiled:
        image_value, window = op.inputs
        known = self.known(image_value)
        pads, source = (0, 0, 0, 0), image_value
        if isinstance(known, Padded):
            element = image_value.type.element_type
            lowest = np.iinfo(numpy_dtype(element)).min if isinstance(element, IntegerType) else -np.inf
            if known.value != lowest:
                raise pass_error(
                    "cinm-to-spatial", f"max pooling must pad with the smallest value {lowest}, got {known.value}", op
                )
            source, pads = known.source, known.pads
        image = self.tiled(source, op)
        if image.layout.rows is not None:
            raise pass_error("cinm-to-spatial", "max pooling needs an NCHW image", op)
        kernel = shape_of(window)
        geometry = FilterGeometry(kernel, int_values(op.strides), pads, int_values(op.dilations))  # pyright: ignore[reportArgumentType]
        init = self.known(op.outputs[0])
        if not isinstance(init, Constant) or init.splat_value() is None:
            raise pass_error("cinm-to-spatial", "the max pooling's init must be a constant splat", op)
        out_h, out_w = geometry.output_size(image.layout.height, image.layout.width)
        out = Tiled(shape_of(op.res[0]), Layout(out_h, out_w), image.element, [], list(image.bounds))
        floor = init.splat_value()
        lowest = np.iinfo(numpy_dtype(image.element)).min
        for t, ref in enumerate(image.tiles):
            node = self.node_for([ref])
            value = node.add(spat.MaxPoolOp(node.use(ref), geometry))
            if floor == 0:
                value = node.add(spat.VReluOp(value))
            elif floor != lowest:
                bound = Constant(out.logical, out.element, splat=floor)
                value = node.add(spat.VMaxOp(value, self.tile_operand(node, bound, t, out)))
            out.tiles.append(node.output(value))
        out.nonneg = image.nonneg or floor >= 0  # pyright: ignore[reportOperatorIssue]
        return out

    def reduce_sum(self, op: tosa.ReduceSumOp) -> PartialSum:
        known = self.known(op.input)
        axis = op.axis.value.data
        if axis not in (2, 3):
            raise pass_error(
                "cinm-to-spatial", "tosa.reduce_sum is supported over the axes 2 and 3 (global average pooling)", op
            )
        if isinstance(known, PartialSum):
            return PartialSum(known.source, known.axes | {axis})
        return PartialSum(self.tiled(op.input, op), frozenset({axis}))

    def division(self, op: arith.DivSIOp | arith.FloorDivSIOp) -> Tiled:
        total, divisor = self.known(op.lhs), self.known(op.rhs)
        if not isinstance(total, PartialSum) or total.axes != {2, 3}:
            raise pass_error(
                "cinm-to-spatial",
                "division is supported only as global average pooling (reduce_sum over axes 2, 3, then divide)",
                op,
            )
        image = total.source
        count = image.layout.height * image.layout.width
        if not isinstance(divisor, Constant) or divisor.splat_value() != count:
            raise pass_error("cinm-to-spatial", f"global average pooling must divide by H·W = {count}", op)
        if isinstance(op, arith.DivSIOp) and not image.nonneg:
            raise pass_error(
                "cinm-to-spatial",
                "arith.divsi truncates, spat.global_avgpool floors: use arith.floordivsi, or divide values known "
                "to be non-negative (after a ReLU)",
                op,
            )
        out = Tiled(shape_of(op.result), Layout(1, 1), image.element, [], list(image.bounds), image.nonneg)
        for ref in image.tiles:
            node = self.node_for([ref])
            out.tiles.append(node.output(node.add(spat.GlobalAvgPoolOp(node.use(ref)))))
        return out

    def clamp(self, op: tosa.ClampOp) -> Tiled:
        """`tosa.clamp` on integers: a maximum with the lower bound, a minimum with the upper one."""
        value = self.known(op.input)
        element = op.input.type.element_type
        if not isinstance(element, IntegerType):
            raise pass_error("cinm-to-spatial", "only integer clamps can run on PIM cores", op)
        info = np.iinfo(numpy_dtype(element))
        shape = shape_of(op.input)
        low, high = op.min_val.value.data, op.max_val.value.data
        if low > info.min:
            value = self.apply_elementwise("max", [value, Constant(shape, element, splat=low)], op)
        if high < info.max:
            value = self.apply_elementwise("min", [value, Constant(shape, element, splat=high)], op)
        return value if isinstance(value, Tiled) else self.tiled(op.input, op)

    def reshape(self, op: tensor.CollapseShapeOp | tensor.ExpandShapeOp | tensor.ReshapeOp) -> Lowered:
        known = self.known(op.operands[0])
        shape = shape_of(op.result)
        if isinstance(known, Constant):
            return Constant(
                shape, known.element, known.splat, None if known.array is None else known.array.reshape(shape)
            )
        image = self.tiled(op.operands[0], op)
        if image.layout == Layout(1, 1) and (len(shape) == 2 or shape[2:] == (1, 1)) and shape[:2] == image.logical[:2]:
            return Tiled(shape, image.layout, image.element, image.tiles, image.bounds, image.nonneg)
        if image.layout.rows is None and len(image.logical) == 4 and shape == (1, int(np.prod(image.logical[1:]))):
            return Flattened(image)
        raise pass_error(
            "cinm-to-spatial",
            "only flattening an NCHW image to [1, C·H·W] (for a gemm) or [1, C] back is supported",
            op,
        )

    def concat(self, op: tensor.ConcatOp) -> Tiled:
        """A channel concatenation only joins the tile lists (no data moves)."""
        parts = [self.tiled(v, op) for v in op.inputs]
        first = parts[0]
        if op.dim.value.data != 1 or any(p.layout != first.layout or p.element != first.element for p in parts):
            raise pass_error(
                "cinm-to-spatial", "only concatenating images (or matrices) along the channels (dim 1) is supported", op
            )
        out = Tiled(shape_of(op.result), first.layout, first.element, [], [], all(p.nonneg for p in parts))
        offset = 0
        for part in parts:
            out.tiles += part.tiles
            out.bounds += [(lo + offset, hi + offset) for lo, hi in part.bounds]
            offset += part.bounds[-1][1]
        return out

    # --- results ---------------------------------------------------------------------------------
    def output(self, index: int, value: SSAValue) -> SSAValue:
        known = self.known(value)
        if not isinstance(known, Tiled):
            raise pass_error(
                "cinm-to-spatial", f"result {index} of @{self.function.sym_name.data} is not computed by spatial ops"
            )
        tiles = self.tile_values(known)
        layout, element = known.layout, known.element
        channels = known.bounds[-1][1]
        axis = 1 if layout.rows is not None else 2
        if len(tiles) > 1:
            concat = spat.ConcatOp(tiles, axis)
            self.epilogue.append(concat)
            whole = concat.result
        else:
            whole = tiles[0]
        logical = known.logical
        if layout.rows is not None:
            return whole
        if len(logical) == 2:
            flat = tensor.CollapseShapeOp.create(
                operands=[whole],
                result_types=[TensorType(element, logical)],
                properties={"reassociation": reassociation([[0, 1], [2]])},
            )
            self.epilogue.append(flat)
            return flat.results[0]
        nhwc_type = TensorType(element, (1, layout.height, layout.width, channels))
        nhwc = tensor.ExpandShapeOp(whole, [], reassociation([[0, 1], [2], [3]]), nhwc_type.get_shape(), nhwc_type)
        init = tensor.EmptyOp([], TensorType(element, logical))
        nchw = TransposeOp(nhwc.result, init.tensor, DenseArrayBase.from_list(i64, (0, 3, 1, 2)))
        self.epilogue += [nhwc, init, nchw]
        return nchw.results[0]

    def tile_values(self, tiled: Tiled) -> list[SSAValue]:
        """Placeholders for the tiles, resolved to compute results when the computes are built."""
        values = []
        for ref in tiled.tiles:
            if isinstance(ref, NodeRef):
                values.append(self.pending_result(ref))
            else:
                values.append(ref)
        return values

    # --- building the computes -------------------------------------------------------------------
    def pending_result(self, ref: NodeRef) -> SSAValue:
        """A placeholder value standing for `ref` until the compute exists."""
        placeholder = self.placeholders.get(ref)
        if placeholder is None:
            holder = tensor.EmptyOp([], ref.node.results[ref.index].type)
            placeholder = self.placeholders[ref] = holder.tensor
        return placeholder

    def emit_nodes(self) -> list[spat.ComputeOp]:
        used = self.used_results()
        computes: dict[Node, spat.ComputeOp] = {}
        remap: dict[Node, dict[int, int]] = {}
        for node in self.nodes:
            kept = [i for i in range(len(node.results)) if (node, i) in used]
            if not kept:
                continue
            remap[node] = {old: new for new, old in enumerate(kept)}
            results = [node.results[i] for i in kept]
            node.block.add_op(spat.YieldOp(*results))
            remove_dead_ops(node.block)
            inputs = []
            for ref in node.inputs:
                if isinstance(ref, NodeRef):
                    assert ref.node in computes, "a compute uses a later compute"
                    inputs.append(computes[ref.node].outputs[remap[ref.node][ref.index]])
                else:
                    inputs.append(ref)
            compute = spat.ComputeOp(node.weights, inputs, [r.type for r in results], Region(node.block))
            computes[node] = compute
        for ref, placeholder in self.placeholders.items():
            placeholder.replace_all_uses_with(computes[ref.node].outputs[remap[ref.node][ref.index]])
        return list(computes.values())

    def used_results(self) -> set[tuple[Node, int]]:
        used = {(ref.node, ref.index) for ref in self.placeholders}
        for node in self.nodes:
            used |= {(ref.node, ref.index) for ref in node.inputs if isinstance(ref, NodeRef)}
        return used


Handler = Callable[[FunctionLowering, Any], Lowered]
"""How one source op is lowered: the lowered form of its (single) result."""

HANDLERS: dict[type[Operation], Handler] = {
    arith.ConstantOp: FunctionLowering.constant,
    tensor.EmptyOp: FunctionLowering.empty,
    FillOp: FunctionLowering.fill,
    tensor.PadOp: FunctionLowering.padded,
    cinm.ComputeOp: FunctionLowering.lower_compute,
    **dict.fromkeys(_ELEMENTWISE, FunctionLowering.elementwise),
    arith.DivSIOp: FunctionLowering.division,
    arith.FloorDivSIOp: FunctionLowering.division,
    PoolingNchwMaxOp: FunctionLowering.max_pool,
    tosa.ReduceSumOp: FunctionLowering.reduce_sum,
    tosa.ClampOp: FunctionLowering.clamp,
    tensor.CollapseShapeOp: FunctionLowering.reshape,
    tensor.ExpandShapeOp: FunctionLowering.reshape,
    tensor.ReshapeOp: FunctionLowering.reshape,
    tensor.ConcatOp: FunctionLowering.concat,
}
"""The lowering of each source op type, one unit per op."""


def remove_dead_ops(block: Block) -> None:
    changed = True
    while changed:
        changed = False
        for op in reversed(list(block.ops)):
            if op.results and all(not r.uses for r in op.results):
                op.detach()
                op.erase()
                changed = True


# ----------------------------------------------------------------------------------------------
# The pass
# ----------------------------------------------------------------------------------------------


def crossbar_geometry(device: str, xbar_size: int | None, crossbars_per_compute: int | None) -> tuple[int, int]:
    """(tile size, crossbars per compute) from the options, defaulting to the device's crossbar
    rows (one weight per cell, as `compile_pim` takes them) and crossbars per core."""
    try:
        config = load_device_config(device)
    except DeviceConfigError as e:
        raise pass_error("cinm-to-spatial", str(e)) from None
    size = xbar_size if xbar_size is not None else config.rows
    per = crossbars_per_compute if crossbars_per_compute is not None else config.crossbars_per_core
    if size < 1 or per < 1:
        raise pass_error("cinm-to-spatial", "xbar-size and crossbars-per-compute must be positive")
    return size, per


@dataclass(frozen=True)
class CinmToSpatialPass(ChoicePass):
    """Lower convolutions and gemms in `cinm.compute` to channel-wise `spat.compute`s of
    `xbar-size` × `xbar-size` crossbar matrices (at most `crossbars-per-compute` each), and the host
    ops between them to spatial vector ops. Defaults come from the `device` preset or TOML file.
    `packing`: `kernel` (a matrix per kernel position) or `im2col` (kernel positions × channels
    unrolled into the crossbar rows)."""

    name = "cinm-to-spatial"

    xbar_size: int | None = None
    crossbars_per_compute: int | None = None
    device: str = DEFAULT_DEVICE
    packing: Packing = "kernel"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        size, per = crossbar_geometry(self.device, self.xbar_size, self.crossbars_per_compute)
        for function in functions_holding(op, cinm.ComputeOp):
            FunctionLowering(function, size, per, self.packing).run()
