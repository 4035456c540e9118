"""Cutting a convolution's or gemm's weight matrix into crossbar matrices (`cinm-to-spatial`).

The `(C·KH·KW) × F` matrix (row `c·KH·KW + k` holds channel `c` at kernel position `k`) is cut
per output-channel tile and input-channel tile. Kernel positions that never read an image pixel
and blocks of all zeros are skipped (weight skipping). Three packings:

* `kernel`: one `C_tile × F_tile` matrix per kernel position (RAPTOR, Miotti 2025);
* `im2col`: the remaining positions' blocks stacked position-major (`KH·KW·C_tile` rows, the
  unrolled input patch) and cut into matrices of at most `size` rows, as ISAAC (Shafiee et al.,
  2016) and PIMCOMP (Sun et al., 2023) map convolutions: a 3-channel 3×3 kernel takes one crossbar
  of 27 rows instead of 9 of 3;
* `sdk`: im2col over windows of p adjacent output pixels of a row, the kernel shifted and
  duplicated in the crossbar's columns (Zhang et al., "Efficient and Robust RRAM-Based Convolutional
  Weight Mapping With Shifted and Duplicated Kernel", TCAD 2021; Rhe et al., "VW-SDK", DATE 2022):
  a layer of F ≤ size ÷ 2 output channels fills the columns its im2col crossbars leave empty, and
  a read computes p pixels. p is the one with the fewest reads per pixel (`window_pixels`): a
  64-channel 3×3 layer on 128×128 crossbars takes 6 reads per 2 pixels instead of 5 per pixel.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Literal

import numpy as np

from cimxdsl.device.chip import PRESETS
from cimxdsl.device.latency import Latencies
from cimxdsl.dialects.crossbar_ops import FilterGeometry
from cimxdsl.transforms.pim.value_bounds import NARROW_BITS

Packing = Literal["kernel", "im2col", "sdk"]
"""How the crossbars hold a convolution's weights: a matrix per kernel position, im2col, or im2col
over windows of adjacent output pixels."""


@dataclass(frozen=True, eq=False)
class WeightBlock:
    """One crossbar matrix: rows of input tile `input_tile`, columns of output tile `output_tile`.
    Kernel packing: the matrix of kernel position `position`. im2col packing: rows `first_row`…
    of the patch unrolled over `positions`."""

    output_tile: int
    input_tile: int
    matrix: np.ndarray
    position: int = -1
    positions: tuple[int, ...] | None = None
    first_row: int = 0


def valid_positions(geometry: FilterGeometry, size: tuple[int, int]) -> list[int]:
    """Kernel positions that read at least one pixel of the image (the others only padding)."""
    out_h, out_w = geometry.output_size(*size)
    valid = []
    for k, ky, kx in geometry.kernel_positions():
        rows = any(0 <= geometry.input_pixel(oy, 0, ky, kx)[0] < size[0] for oy in range(out_h))
        cols = any(0 <= geometry.input_pixel(0, ox, ky, kx)[1] < size[1] for ox in range(out_w))
        if rows and cols:
            valid.append(k)
    return valid


def window_geometry(geometry: FilterGeometry, pixels: int) -> FilterGeometry:
    """The geometry of windows of `pixels` adjacent output pixels of a row: a kernel (p - 1)
    strides wider (undilated across), p times the stride; the same pads give W_out ÷ p windows."""
    (kh, kw), (sh, sw), (dh, dw) = geometry.kernel, geometry.strides, geometry.dilations
    return FilterGeometry((kh, (kw - 1) * dw + (pixels - 1) * sw + 1), (sh, pixels * sw), geometry.pads, (dh, 1))


def shifted_kernels(matrix: np.ndarray, geometry: FilterGeometry, pixels: int) -> np.ndarray:
    """The `(C·KH·KW') × (p·F)` matrix of `window_geometry`'s windows from the `(C·KH·KW) × F`
    matrix of `geometry`: pixel q's F columns hold the kernel shifted q strides across."""
    (kh, kw), sw, dw = geometry.kernel, geometry.strides[1], geometry.dilations[1]
    width = window_geometry(geometry, pixels).kernel[1]
    channels, filters = matrix.shape[0] // (kh * kw), matrix.shape[1]
    kernel = matrix.reshape(channels, kh, kw, filters)
    shifted = np.zeros((channels, kh, width, pixels, filters), matrix.dtype)
    for q in range(pixels):
        shifted[:, :, q * sw + np.arange(kw) * dw, q, :] = kernel
    return shifted.reshape(channels * kh * width, pixels * filters)


def window_pixels(
    geometry: FilterGeometry,
    channel_tiles: Sequence[int],
    filters: int,
    out_width: int,
    size: int,
    group: int = 1,
    latencies: Latencies | None = None,
) -> int:
    """The output pixels per crossbar read that take the least time per pixel on the chip of
    `latencies` (default `pimcomp`; ties: the fewest pixels): p dividing the row's `out_width`
    pixels whose p·`filters` channels fit the columns of `group` crossbars of `size` side by side
    (one array group, read at once). A window of each input-channel tile is unrolled into
    ⌈positions × channels ÷ size⌉ row slices, each an `mvmul` of 8-bit inputs over the group's
    crossbars and, past the first, a `vvadd` of the window's p·`filters` partial sums: wider
    windows read fewer slices per pixel but write and add wider outputs."""
    model = latencies or Latencies(PRESETS["pimcomp"])
    narrow, wide = Latencies(model.chip, NARROW_BITS // 8, model.obytes), Latencies(model.chip, 4, 4)

    def time(pixels: int) -> float:
        kernel = window_geometry(geometry, pixels).kernel if pixels > 1 else geometry.kernel
        reads = sum(-(-kernel[0] * kernel[1] * c // size) for c in channel_tiles)
        crossbars = -(-pixels * filters // size)
        read = narrow.mvm_compute(8) + narrow.mvmul_local(8, crossbars)
        return float(reads * read + (reads - 1) * wide.vector(pixels * filters)) / pixels

    candidates = [p for p in range(1, max(group * size // max(filters, 1), 1) + 1) if out_width % p == 0]
    return min(candidates, key=lambda p: (time(p), p))


def weight_blocks(
    matrix: np.ndarray,
    positions: int,
    valid: Sequence[int],
    in_bounds: Sequence[tuple[int, int]],
    out_bounds: Sequence[tuple[int, int]],
) -> list[WeightBlock]:
    """The kernel packing: every non-zero block, ordered by output tile, input tile and kernel position."""
    blocks = []
    for j, (f0, f1) in enumerate(out_bounds):
        for i, (c0, c1) in enumerate(in_bounds):
            for k in valid:
                block = matrix[np.arange(c0, c1) * positions + k, f0:f1]
                if block.any():
                    blocks.append(WeightBlock(j, i, block, position=k))
    return blocks


def im2col_blocks(kernel_blocks: list[WeightBlock], size: int) -> list[WeightBlock]:
    """The im2col packing of `kernel_blocks`: per (output tile, input tile), their matrices stacked
    in position order and cut into matrices of at most `size` rows."""
    blocks = []
    for (j, i), pair in groupby(kernel_blocks, key=lambda b: (b.output_tile, b.input_tile)):
        pair = list(pair)
        positions = tuple(b.position for b in pair)
        stacked = np.concatenate([b.matrix for b in pair])
        for start in range(0, len(stacked), size):
            blocks.append(WeightBlock(j, i, stacked[start : start + size], positions=positions, first_row=start))
    return blocks


def weight_origin(
    name: str, rows: tuple[int, int], cols: tuple[int, int], block: WeightBlock, kernel: tuple[int, int]
) -> str:
    where = f"{name}: input channels {rows[0]}:{rows[1]}, output channels {cols[0]}:{cols[1]}"
    if block.positions is not None:
        end = block.first_row + len(block.matrix)
        return f"{where} im2col rows {block.first_row}:{end} of kernel positions {list(block.positions)}"
    ky, kx = divmod(block.position, kernel[1])
    return where + (f" kernel position ({ky}, {kx})" if kernel != (1, 1) else "")
