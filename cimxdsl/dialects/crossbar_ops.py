"""What `spat` and `pim` share: ops on crossbars and sliding windows.

`HoldsCrossbarWeights` marks the ops whose `weights` operands are crossbar matrices (`spat.compute`,
`pim.core`); `ApplyFiltersBase` is `spat.apply_filters`/`pim.apply_filters` (weight indices + kernel
geometry, verified against the enclosing weights); `WindowOp` carries a sliding window's
`FilterGeometry` as properties.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, MemRefType, TensorType, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation, base, opt_prop_def, prop_def
from xdsl.traits import MemoryEffect, OpTrait
from xdsl.utils.exceptions import VerifyException

from cimxdsl.dialects.utils import element_type, i64_array, identity_cache, is_accumulator_type, static_shape

SpatTensor = base(TensorType) | base(MemRefType)
"""Spatial ops work on tensors and, after bufferization, on memrefs (RAPTOR's `SpatTensor`)."""


def verify_same_kind(op: Operation, *values: SSAValue) -> None:
    """All values are tensors, or all are memrefs."""
    kinds = {isinstance(v.type, MemRefType) for v in values}
    if len(kinds) > 1:
        raise VerifyException(f"'{op.name}' operands and results must be all tensors or all memrefs")


class TensorSemanticsEffect(MemoryEffect):
    """No memory effect on tensors (the op is pure); unknown effects once it touches memrefs."""

    @classmethod
    def get_effects(cls, op: Operation):
        values = (*op.operands, *op.results)
        if any(isinstance(v.type, MemRefType) for v in values):
            return None
        return frozenset()


class HoldsCrossbarWeights(OpTrait):
    """The op's `weights` operands are the crossbar matrices that `apply_filters` ops in its
    body select by index (`weightIndices`). Held by `spat.compute` and `pim.core`."""

    def get_weights(self, op: Operation) -> tuple[SSAValue, ...]:
        weights = getattr(op, "weights")
        return tuple(weights)


def enclosing_weights(op: Operation) -> tuple[Operation, tuple[SSAValue, ...]] | None:
    """The closest ancestor holding crossbar weights, and those weights."""
    parent = op.parent_op()
    while parent is not None:
        trait = parent.get_trait(HoldsCrossbarWeights)
        if trait is not None:
            return parent, trait.get_weights(parent)
        parent = parent.parent_op()
    return None


@dataclass(frozen=True)
class FilterGeometry:
    """Kernel geometry of a sliding-window op, ONNX conventions.

    `pads` is `(top, left, bottom, right)`; padded input pixels are zeros for `apply_filters` and
    are ignored by pooling. A negative pad crops that many pixels off that side (the part of a
    layer's output one band computes from the whole input rows)."""

    kernel: tuple[int, int] = (1, 1)
    strides: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilations: tuple[int, int] = (1, 1)

    def output_size(self, height: int, width: int) -> tuple[int, int]:
        """`(H_out, W_out)`: `(H + pad_top + pad_bottom - dilation·(k - 1) - 1) // stride + 1`."""
        (kh, kw), (sh, sw), (pt, pl, pb, pr), (dh, dw) = self.kernel, self.strides, self.pads, self.dilations
        return (
            (height + pt + pb - dh * (kh - 1) - 1) // sh + 1,
            (width + pl + pr - dw * (kw - 1) - 1) // sw + 1,
        )

    def kernel_positions(self) -> Iterator[tuple[int, int, int]]:
        """`(k, ky, kx)` for every kernel position, `k = ky·kernel_w + kx` (row-major)."""
        kh, kw = self.kernel
        for ky in range(kh):
            for kx in range(kw):
                yield ky * kw + kx, ky, kx

    def input_pixel(self, out_y: int, out_x: int, ky: int, kx: int) -> tuple[int, int]:
        """The input pixel that kernel position `(ky, kx)` of output pixel `(out_y, out_x)` reads;
        outside `[0, H) × [0, W)` it is padding."""
        return (
            out_y * self.strides[0] - self.pads[0] + ky * self.dilations[0],
            out_x * self.strides[1] - self.pads[1] + kx * self.dilations[1],
        )

    def is_pointwise(self) -> bool:
        """A 1×1 kernel with unit strides and no padding (the gemm case)."""
        return self == FilterGeometry()


GEOMETRY_FORMAT = "(`kernel` $kernelShape^)? (`strides` $strides^)? (`pads` $pads^)? (`dilations` $dilations^)?"
"""Assembly of the geometry properties; each is printed only when it differs from its default."""


@identity_cache
def geometry_of(
    kernel: DenseArrayBase, strides: DenseArrayBase, pads: DenseArrayBase, dilations: DenseArrayBase
) -> FilterGeometry:
    """The geometry of a window op's properties, read once per set of (immutable) attributes."""
    k, s, p, d = kernel.get_values(), strides.get_values(), pads.get_values(), dilations.get_values()
    assert len(k) == 2 and len(s) == 2 and len(p) == 4 and len(d) == 2
    return FilterGeometry((k[0], k[1]), (s[0], s[1]), (p[0], p[1], p[2], p[3]), (d[0], d[1]))


class WindowOp(IRDLOperation):
    """Base of the sliding-window ops: kernel size, strides, pads, dilations as properties."""

    kernel_shape = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((1, 1)), prop_name="kernelShape")
    strides = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((1, 1)))
    pads = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((0, 0, 0, 0)))
    dilations = prop_def(DenseArrayBase.constr(i64), default_value=i64_array((1, 1)))

    @staticmethod
    def geometry_properties(geometry: FilterGeometry) -> dict[str, Attribute]:
        return {
            "kernelShape": i64_array(geometry.kernel),
            "strides": i64_array(geometry.strides),
            "pads": i64_array(geometry.pads),
            "dilations": i64_array(geometry.dilations),
        }

    def geometry(self) -> FilterGeometry:
        return geometry_of(self.kernel_shape, self.strides, self.pads, self.dilations)

    def verify_geometry(self) -> FilterGeometry:
        checks = (
            ("kernelShape", self.kernel_shape, 2, 1, "positive"),
            ("strides", self.strides, 2, 1, "positive"),
            ("pads", self.pads, 4, None, ""),
            ("dilations", self.dilations, 2, 1, "positive"),
        )
        for prop, attr, length, minimum, adjective in checks:
            values = attr.get_values()
            if len(values) != length or any(minimum is not None and v < minimum for v in values):
                raise VerifyException(
                    f"'{self.name}' {prop} must be {length} {adjective + ' ' if adjective else ''}integers, "
                    f"got {list(values)}"
                )
        return self.geometry()

    def verify_output_pixels(self, geometry: FilterGeometry, input_shape: Sequence[int], output_shape: Sequence[int]):
        height, width = input_shape[0], input_shape[1]
        top, left, bottom, right = geometry.pads
        if min(top, 0) + min(bottom, 0) <= -height or min(left, 0) + min(right, 0) <= -width:
            raise VerifyException(f"'{self.name}' pads {list(geometry.pads)} crop the whole {height}x{width} input")
        out_h, out_w = geometry.output_size(height, width)
        if out_h < 1 or out_w < 1:
            raise VerifyException(f"'{self.name}' kernel does not fit the {height}x{width} input")
        if (output_shape[0], output_shape[1]) != (out_h, out_w):
            raise VerifyException(
                f"'{self.name}' result must be {out_h}x{out_w} pixels for a {height}x{width} input, "
                f"got {output_shape[0]}x{output_shape[1]}"
            )


IM2COL_FORMAT = "(`im2col` $im2col^)? (`offset` $im2colOffset^)? (`pixels` $im2colPixels^)?"
"""Assembly of the im2col packing properties (printed only in that form)."""


@dataclass(frozen=True)
class Im2col:
    """The im2col packing of an apply_filters: for every output pixel, the channels of the input
    pixels at kernel `positions` are unrolled into one vector (position-major, zeros for padding);
    the crossbar matrices hold its consecutive rows from row `offset` on (ISAAC, Shafiee et al.,
    2016; PIMCOMP, Sun et al., 2023).

    With `pixels` p > 1 a crossbar read computes p adjacent output pixels of a row (the kernel
    shifted and duplicated in the crossbar's columns: Zhang et al., "Efficient and Robust RRAM-Based
    Convolutional Weight Mapping With Shifted and Duplicated Kernel", TCAD 2021; Rhe et al.,
    "VW-SDK", DATE 2022): the op's geometry is that of the p-pixel window, and the matrices'
    columns are the p pixels' channels, pixel-major."""

    positions: tuple[int, ...]
    offset: int = 0
    pixels: int = 1

    def properties(self) -> dict[str, Attribute]:
        offset = {"im2colOffset": IntegerAttr(self.offset, i64)} if self.offset else {}
        pixels = {"im2colPixels": IntegerAttr(self.pixels, i64)} if self.pixels != 1 else {}
        return {"im2col": i64_array(self.positions), **offset, **pixels}


@identity_cache
def im2col_of(positions: DenseArrayBase, offset: IntegerAttr | None, pixels: IntegerAttr | None) -> Im2col:
    """The im2col packing of an apply_filters' properties, read once per set of attributes."""
    return Im2col(
        tuple(positions.get_values()),
        offset.value.data if offset is not None else 0,
        pixels.value.data if pixels is not None else 1,
    )


class ApplyFiltersBase(WindowOp):
    """Base of `spat.apply_filters` and `pim.apply_filters`: weight indices + kernel geometry, and
    optionally the im2col packing (`im2col` positions and row `offset`)."""

    weight_indices = prop_def(DenseArrayBase.constr(i64), prop_name="weightIndices")
    im2col = opt_prop_def(DenseArrayBase.constr(i64))
    im2col_offset = opt_prop_def(IntegerAttr.constr(type=i64), prop_name="im2colOffset")
    im2col_pixels = opt_prop_def(IntegerAttr.constr(type=i64), prop_name="im2colPixels")

    def weight_index_list(self) -> tuple[int, ...]:
        """Kernel packing: one entry per kernel position (row-major), -1 marks a skipped position.
        im2col packing: the matrices holding consecutive rows of the unrolled vector."""
        return tuple(self.weight_indices.get_values())

    def packing(self) -> Im2col | None:
        """The im2col packing, or None for one matrix per kernel position."""
        if self.im2col is None:
            return None
        return im2col_of(self.im2col, self.im2col_offset, self.im2col_pixels)

    def products_shape(self, output_shape: Sequence[int]) -> tuple[int, ...]:
        """The output as the crossbars write it: `[H_out, W_out ÷ p, p·C_out]` with p output pixels
        per read (the same memory, pixel-major), else the output's shape."""
        packing = self.packing()
        pixels = 1 if packing is None else packing.pixels
        if pixels == 1 or len(output_shape) != 3:
            return tuple(output_shape)
        height, width, channels = output_shape
        return (height, width // pixels, pixels * channels)

    def verify_filters(self, input_value: SSAValue, output_value: SSAValue) -> None:
        geometry = self.verify_geometry()
        input_shape = static_shape(self, "input", input_value)
        output_shape = static_shape(self, "output", output_value)
        if len(input_shape) not in (2, 3):
            raise VerifyException(
                f"'{self.name}' input must be [H, W, C] (rank 3) or [rows, K] (rank 2), got rank {len(input_shape)}"
            )
        if len(output_shape) != len(input_shape):
            raise VerifyException(f"'{self.name}' input and output must have the same rank")
        if not is_accumulator_type(element_type(input_value), element_type(output_value)):
            raise VerifyException(
                f"'{self.name}' output element type {element_type(output_value)} cannot hold products of "
                f"{element_type(input_value)} (it must be the same type or a wider integer)"
            )
        packing = self.packing()
        if packing is not None:
            if packing.pixels < 1 or (len(output_shape) == 3 and output_shape[1] % packing.pixels):
                raise VerifyException(
                    f"'{self.name}' im2col pixels must be a positive divisor of the output width, got {packing.pixels}"
                )
            products = self.products_shape(output_shape)
            self.verify_im2col(packing, geometry, input_value, len(input_shape), input_shape[-1], products[-1])
            self.verify_output_pixels(geometry, input_shape, products)
            return
        self.verify_weight_indices(geometry)
        if len(input_shape) == 2:
            if not geometry.is_pointwise():
                raise VerifyException(
                    f"'{self.name}' the rank-2 (gemm) form needs a 1x1 kernel, unit strides, no padding "
                    "and unit dilations"
                )
            if output_shape[0] != input_shape[0]:
                raise VerifyException(
                    f"'{self.name}' output must have {input_shape[0]} rows like the input, got {output_shape[0]}"
                )
        else:
            self.verify_output_pixels(geometry, input_shape, output_shape)
        self.verify_weights(input_value, input_shape[-1], output_shape[-1])

    def verify_weight_indices(self, geometry: FilterGeometry) -> None:
        indices = self.weight_index_list()
        positions = geometry.kernel[0] * geometry.kernel[1]
        if len(indices) != positions:
            raise VerifyException(
                f"'{self.name}' needs one weight index per kernel position ({positions}), got {len(indices)}"
            )
        if any(i < -1 for i in indices):
            raise VerifyException(f"'{self.name}' weight indices must be >= 0, or -1 for a skipped position")
        if all(i == -1 for i in indices):
            raise VerifyException(f"'{self.name}' skips every kernel position; at least one weight index must be >= 0")

    def verify_im2col(
        self, packing: Im2col, geometry: FilterGeometry, input_value: SSAValue, rank: int, in_channels: int, out: int
    ) -> None:
        positions = geometry.kernel[0] * geometry.kernel[1]
        if rank != 3:
            raise VerifyException(f"'{self.name}' im2col packing needs an [H, W, C] input")
        if not packing.positions or len(set(packing.positions)) != len(packing.positions):
            raise VerifyException(f"'{self.name}' im2col positions must be distinct, and at least one")
        if any(not 0 <= p < positions for p in packing.positions):
            raise VerifyException(f"'{self.name}' im2col positions must lie in [0, {positions})")
        indices = self.weight_index_list()
        if not indices or any(i < 0 for i in indices):
            raise VerifyException(f"'{self.name}' im2col packing needs at least one weight index, all >= 0")
        shapes = self.verify_weights(input_value, None, out)
        rows = sum(shape[0] for shape in shapes)
        unrolled = len(packing.positions) * in_channels
        if packing.offset < 0 or packing.offset + rows > unrolled:
            raise VerifyException(
                f"'{self.name}' im2col rows {packing.offset}:{packing.offset + rows} exceed the {unrolled} rows of "
                f"{len(packing.positions)} positions x {in_channels} channels"
            )

    def verify_weights(self, input_value: SSAValue, in_channels: int | None, out_channels: int) -> list[tuple]:
        """Checks the selected matrices (`in_channels` rows unless None) and returns their shapes."""
        holder = enclosing_weights(self)
        if holder is None:
            raise VerifyException(f"'{self.name}' must be inside a 'spat.compute' or 'pim.core' that holds its weights")
        holder_op, weights = holder
        shapes = []
        for index in self.weight_index_list():
            if index < 0:
                continue
            if index >= len(weights):
                raise VerifyException(
                    f"'{self.name}' weight index {index} is out of range: "
                    f"'{holder_op.name}' holds {len(weights)} weights"
                )
            shape = static_shape(self, f"weight {index}", weights[index])
            rows = in_channels if in_channels is not None else shape[0]
            if shape != (rows, out_channels):
                expected = (
                    f"{in_channels}x{out_channels} (input channels x output channels)"
                    if in_channels is not None
                    else f"Nx{out_channels} (rows x output channels)"
                )
                got = "x".join(map(str, shape))
                raise VerifyException(f"'{self.name}' weight {index} must be {expected}, got {got}")
            if element_type(weights[index]) != element_type(input_value):
                raise VerifyException(
                    f"'{self.name}' weight {index} element type {element_type(weights[index])} differs from the "
                    f"input's {element_type(input_value)}"
                )
            shapes.append(shape)
        return shapes
