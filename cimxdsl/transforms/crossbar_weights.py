"""Cutting a convolution's or gemm's weight matrix into crossbar matrices (`cinm-to-spatial`).

The `(C·KH·KW) × F` matrix (row `c·KH·KW + k` holds channel `c` at kernel position `k`) is cut
into one block per output-channel tile, input-channel tile and kernel position. Kernel positions
that never read an image pixel and blocks of all zeros are skipped (weight skipping).
"""

from collections.abc import Sequence

import numpy as np

from cimxdsl.dialects.crossbar_ops import FilterGeometry


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


def weight_blocks(
    matrix: np.ndarray,
    positions: int,
    valid: Sequence[int],
    in_bounds: Sequence[tuple[int, int]],
    out_bounds: Sequence[tuple[int, int]],
) -> list[tuple[int, int, int, np.ndarray]]:
    """`(output tile j, input tile i, kernel position k, block)` of every non-zero block, ordered by
    output tile, input tile and kernel position."""
    blocks = []
    for j, (f0, f1) in enumerate(out_bounds):
        for i, (c0, c1) in enumerate(in_bounds):
            for k in valid:
                block = matrix[np.arange(c0, c1) * positions + k, f0:f1]
                if block.any():
                    blocks.append((j, i, k, block))
    return blocks


def weight_origin(name: str, rows: tuple[int, int], cols: tuple[int, int], k: int, kernel: tuple[int, int]) -> str:
    ky, kx = divmod(k, kernel[1])
    position = f" kernel position ({ky}, {kx})" if kernel != (1, 1) else ""
    return f"{name}: input channels {rows[0]}:{rows[1]}, output channels {cols[0]}:{cols[1]}{position}"
