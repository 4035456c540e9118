"""Convolution patches for the products of whole layers, in (ky, kx, c) order where they can be.

A convolution lowers to the im2col copy of its image (a `linalg.generic` into N×OH×OW×C×KH×KW,
collapsed to the (N·OH·OW) × (C·KH·KW) patch matrix X, column order (c, ky, kx)) and the gemms of
its tiles on column slices of X. The prepared function runs the copy and the collapse as one step
(`Patches`). Gathering the windows in (c, ky, kx) order reads the image an element at a time; in
(ky, kx, c) order each window position is one copy of runs of C contiguous elements of the image
held as NHWC (`numeric.im2col` with `channels_last`), and a 1×1 kernel at stride 1 is the NHWC
image itself. Where X feeds only the product of one layer (`layer_products`) on an exact device —
one gemm over all its columns, or one group of KH·KW columns per channel (a depthwise
convolution) — the step gives the columns in (ky, kx, c) order, X' = X[:, order], and the layer
multiplies by its weight rows in the same order: X'·W[order] = X·W (`column_order`,
`channelwise_product`). A depthwise layer's X' is not gathered at all: the step gives the image
held as NHWC (`Windows`), and the layer multiplies each kernel position's shifted view of it. A
constant pad of H and W before the copy, read by nothing else, runs in the same step: the image
is padded as it is laid out as NHWC, in one copy instead of two."""

from __future__ import annotations

from dataclasses import astuple, dataclass
from functools import cached_property

import numpy as np
from xdsl.dialects.linalg.ops import GenericOp
from xdsl.ir import Operation

from cimxdsl.device.backend import on_backend
from cimxdsl.interpreters.linalg import LinearMap, copied_input
from cimxdsl.interpreters.numeric import im2col, nhwc_windows
from cimxdsl.interpreters.tensor import pad


@dataclass(frozen=True)
class Geometry:
    """An im2col copy's kernel, strides and dilations (each (along H, along W))."""

    kernel: tuple[int, int]
    strides: tuple[int, int]
    dilations: tuple[int, int]

    @property
    def positions(self) -> int:
        return self.kernel[0] * self.kernel[1]


def im2col_geometry(op: Operation) -> Geometry | None:
    """The geometry of `op` if it is the im2col copy of an NCHW image (`Im2colToLinalg`): a
    `linalg.generic` yielding its input at `(n, c, oy·sh + ky·dh, ox·sw + kx·dw)` into
    `(n, oy, ox, c, ky, kx)`; else None."""
    if not isinstance(op, GenericOp) or len(op.inputs) != 1 or len(op.outputs) != 1 or len(op.results) != 1:
        return None
    if len(op.indexing_maps) != 2 or copied_input(op.body) != 0:
        return None
    source, result = (LinearMap.of(m.data) for m in op.indexing_maps)
    if source is None or result is None or result.loops != tuple(range(6)) or source.coefficients.shape != (4, 6):
        return None
    c = source.coefficients
    sh, dh, sw, dw = (int(v) for v in (c[2, 1], c[2, 4], c[3, 2], c[3, 5]))
    expected = np.zeros((4, 6), np.int64)
    expected[0, 0] = expected[1, 3] = 1
    expected[2, [1, 4]] = sh, dh
    expected[3, [2, 5]] = sw, dw
    if source.constants.any() or not np.array_equal(c, expected) or min(sh, dh, sw, dw) < 1:
        return None
    kh, kw = op.results[0].type.get_shape()[4:]
    return Geometry((kh, kw), (sh, sw), (dh, dw))


def column_order(channels: int, positions: int) -> np.ndarray:
    """`order` with X' = X[:, order]: the (c, ky, kx) columns of X in (ky, kx, c) order."""
    return np.arange(channels * positions).reshape(channels, positions).T.ravel()


@dataclass(frozen=True, eq=False)
class Windows:
    """The patch matrix X' of NHWC-held images in (ky, kx, c) column order, not gathered: a
    depthwise layer reads each kernel position as a shifted view of the images
    (`channelwise_product`); `np.asarray` gathers X'."""

    image: np.ndarray
    """(n, h, w, c)"""
    geometry: Geometry

    @cached_property
    def views(self) -> np.ndarray:
        """(n, oy, ox, ky, kx, c): the windows, a view of `image` (made once: the steps that read
        them ask for their shape several times)."""
        geometry = self.geometry
        return nhwc_windows(self.image, geometry.kernel, geometry.strides, geometry.dilations)

    @property
    def shape(self) -> tuple[int, int]:
        n, oh, ow, kh, kw, c = self.views.shape
        return n * oh * ow, kh * kw * c

    @property
    def dtype(self) -> np.dtype:
        return self.image.dtype

    def __len__(self) -> int:
        return self.shape[0]

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        if copy is False:
            raise ValueError("windows are gathered by a copy")
        gathered = self.views.reshape(self.shape)
        return gathered if dtype is None else gathered.astype(dtype, copy=False)


@dataclass(frozen=True)
class Patches:
    """The implementation of an im2col copy and its collapse as one step: the patch matrix of the
    image, in (ky, kx, c) order if `reordered` (as `Windows` if `windows`), else in (c, ky, kx)
    order (as the copy's). With `padding` ((top, bottom), (left, right), value), the step is also
    the pad before the copy: it pads the image as it lays it out as NHWC, in one copy."""

    geometry: Geometry
    reordered: bool
    windows: bool = False
    padding: tuple[tuple[int, int], tuple[int, int], object] | None = None
    on_backend = True
    """It takes images held on another array backend (`prepared.Step.on_backend`)."""

    def __call__(self, interpreter, op, args) -> tuple:
        if on_backend(args[0]) is not None:
            return (self.held(args[0]),)
        geometry, x = self.geometry, np.asarray(args[0])
        channels_last = self.reordered or geometry.positions == 1  # (one position: the orders agree)
        if channels_last:
            image = nhwc(x, self.padding)
            if self.windows:
                return (Windows(image, geometry),)
            x = image.transpose(0, 3, 1, 2)  # (a view: `im2col` finds the NHWC layout)
        elif self.padding is not None:  # (as the pad would, in the image's order in memory)
            (top, bottom), (left, right), value = self.padding
            x = pad(x, [(0, 0), (0, 0), (top, bottom), (left, right)], value)
        return (im2col(x, geometry.kernel, geometry.strides, geometry.dilations, channels_last),)

    def held(self, x):
        """The patch matrix of images `x` held on an array backend, made there from the KH·KW
        strided slices of the (padded) images (gathered: `Windows` are for the host's products)."""
        backend = on_backend(x)
        xp, (kh, kw), (sh, sw), (dh, dw) = backend.xp, *astuple(self.geometry)
        if self.padding is not None:
            (top, bottom), (left, right), value = self.padding
            x = pad(x, [(0, 0), (0, 0), (top, bottom), (left, right)], value)
        n, c, h, w = x.shape
        oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1
        views = [
            x[:, :, ky * dh : ky * dh + sh * (oh - 1) + 1 : sh, kx * dw : kx * dw + sw * (ow - 1) + 1 : sw]
            for ky in range(kh)
            for kx in range(kw)
        ]
        stacked = xp.stack(views, axis=-1)  # (n, c, oh, ow, ky·kx)
        if self.reordered or self.geometry.positions == 1:
            return xp.reshape(xp.permute_dims(stacked, (0, 2, 3, 4, 1)), (n * oh * ow, kh * kw * c))
        return xp.reshape(xp.permute_dims(stacked, (0, 2, 3, 1, 4)), (n * oh * ow, c * kh * kw))


def nhwc(x: np.ndarray, padding: tuple | None) -> np.ndarray:
    """The NCHW images `x` as a C-contiguous NHWC array (no copy if `x` is one seen as NCHW), padded
    by `padding` ((top, bottom), (left, right), value) in the same copy if given."""
    if padding is None:
        return np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    (top, bottom), (left, right), value = padding
    return pad(x, [(0, 0), (0, 0), (top, bottom), (left, right)], value, order=(0, 2, 3, 1)).transpose(0, 2, 3, 1)


def integer_bound(x: np.ndarray, weights: np.ndarray, depth: int) -> int:
    """A bound on |partial sums| of integer products of `depth` terms of `x`'s and `weights`'
    elements; a ValueError if it reaches int64's range."""
    bound = (int(np.abs(x.astype(np.int64)).max()) if x.size else 0) * int(np.abs(weights).max()) * depth
    if bound >= 2**63:
        raise ValueError("the crossbar product may overflow int64")
    return bound


def channelwise_product(x: np.ndarray | Windows, weights: np.ndarray) -> np.ndarray:
    """The products of a depthwise layer from its patches in (ky, kx, c) order: `x` (M × P·G, P
    kernel positions of G channels; or their `Windows`), `weights` (G, P, f): result column
    `g·f + j` is Σ_p x[:, p·G + g]·weights[g, p, j], exact on integers (int64). One `einsum`: one
    pass over the outputs (a product and a sum per kernel position would take two passes each)."""
    count, positions, width = weights.shape
    rows = x.shape[0]
    if isinstance(x, Windows):  # (n, oy, ox, ky, kx, G), a view of the images
        patches, values = x.views, x.image
        kernel, subscripts = x.geometry.kernel, "nyxabg,abgj->nyxgj"
    else:
        patches, values = x.reshape(rows, positions, count), x
        kernel, subscripts = (positions,), "rpg,pgj->rgj"
    if x.dtype.kind == "f" or weights.dtype.kind == "f":
        dtype = np.result_type(x.dtype, weights)
    else:
        integer_bound(values, weights, positions)  # (int64 then holds every partial sum)
        dtype = np.dtype(np.int64)
    by_position = np.ascontiguousarray(weights.transpose(1, 0, 2), dtype).reshape(*kernel, count, width)
    return np.einsum(subscripts, patches, by_position, dtype=dtype).reshape(rows, count * width)
