"""The windows of an ONNX pooling node (MaxPool, AveragePool, LpPool) over any number of spatial
dimensions, as NumPy tables.

Along each spatial axis, window `o` reads the input positions `o·stride - pad_begin + k·dilation`
for `k < kernel`; positions outside the input are padding. There are
`(size + pad_begin + pad_end - span) / stride + 1` windows (`span = (kernel - 1)·dilation + 1`),
rounded down, or up with `ceil_mode` unless the last window would then start in the trailing
padding (onnxruntime's rule, and the ONNX reference's). An average divides by the window's positions
inside the input or, with `count_include_pad`, inside the explicitly padded input (the padding that
`ceil_mode` adds is never counted).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx

from cimxdsl.frontend.attributes import NodeAttributes, node_error


@dataclass(frozen=True)
class Window:
    """A pooling node's windows over the spatial dimensions `size` (all tuples, one entry per axis)."""

    size: tuple[int, ...]
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    begin: tuple[int, ...]
    end: tuple[int, ...]
    """The explicit padding before and after each axis."""
    out: tuple[int, ...]
    """The number of windows along each axis."""

    @property
    def extension(self) -> tuple[int, ...]:
        """The padding `ceil_mode` adds after each axis so that the last window fits (not counted)."""
        return tuple(
            max(0, (o - 1) * s + (k - 1) * d + 1 - (n + b + e))
            for n, k, s, d, b, e, o in zip(
                self.size, self.kernel, self.strides, self.dilations, self.begin, self.end, self.out, strict=True
            )
        )

    def positions(self, axis: int) -> np.ndarray:
        """`[out, kernel]`: the input coordinate each window reads along `axis` (padding outside
        `0 … size - 1`)."""
        windows = np.arange(self.out[axis]) * self.strides[axis] - self.begin[axis]
        return windows[:, None] + np.arange(self.kernel[axis]) * self.dilations[axis]

    def flat_positions(self, column_major: bool = False) -> np.ndarray:
        """`[windows, kernel elements]`, both row-major: the index of each element in the spatial
        dimensions flattened row-major (or column-major), -1 for padding."""
        rank = len(self.size)
        order = range(rank - 1, -1, -1) if column_major else range(rank)
        index = np.zeros((1,) * 2 * rank, np.int64)
        inside = np.ones((1,) * 2 * rank, bool)
        step = 1
        for axis in reversed(order):
            shape = [1] * 2 * rank
            shape[axis], shape[rank + axis] = self.out[axis], self.kernel[axis]
            coordinate = self.positions(axis).reshape(shape)
            index = index + coordinate * step
            inside = inside & (coordinate >= 0) & (coordinate < self.size[axis])
            step *= self.size[axis]
        table = np.where(inside, index, -1)
        return table.reshape(int(np.prod(self.out)), int(np.prod(self.kernel)))

    def counts(self, include_pad: bool) -> np.ndarray:
        """`[windows]`: the positions each window averages over (at least 1: a window that holds only
        padding averages to 0, as in onnxruntime)."""
        total = np.ones((), np.int64)
        for axis, (size, begin, end) in enumerate(zip(self.size, self.begin, self.end, strict=True)):
            low, high = (-begin, size + end) if include_pad else (0, size)
            coordinates = self.positions(axis)
            per_axis = ((coordinates >= low) & (coordinates < high)).sum(axis=1)
            total = np.multiply.outer(total, per_axis)
        return np.maximum(total.reshape(-1), 1)


def pool_window(node: onnx.NodeProto, attrs: NodeAttributes, shape: tuple[int, ...]) -> Window:
    """The windows of a pooling node on an `[N, C, *spatial]` input, its attributes checked."""
    rank = len(shape) - 2
    if rank < 1:
        raise node_error(node, f"the input must be [N, C, spatial…], got {list(shape)}")
    size = tuple(shape[2:])

    def per_axis(name: str, default: int, count: int = rank) -> tuple[int, ...]:
        value = attrs[name]
        if value is None:
            return (default,) * count
        if len(value) != count:
            raise node_error(node, f"attribute '{name}' must have {count} entries for {rank} spatial axes, got {value}")
        return tuple(value)

    kernel = per_axis("kernel_shape", 1)
    strides, dilations = per_axis("strides", 1), per_axis("dilations", 1)
    spans = [(k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True)]
    pads = per_axis("pads", 0, 2 * rank)
    begin, end = pads[:rank], pads[rank:]
    if attrs["auto_pad"] == "VALID":
        begin = end = (0,) * rank
    elif attrs["auto_pad"] != "NOTSET":
        totals = [max(0, (-(-n // s) - 1) * s + span - n) for n, s, span in zip(size, strides, spans, strict=True)]
        small, large = tuple(t // 2 for t in totals), tuple(t - t // 2 for t in totals)
        begin, end = (small, large) if attrs["auto_pad"] == "SAME_UPPER" else (large, small)
    out = []
    for n, s, span, b, e in zip(size, strides, spans, begin, end, strict=True):
        room = n + b + e - span
        if room < 0:
            raise node_error(node, f"the window ({span}) is larger than the padded input ({n + b + e})")
        count = -(-room // s) + 1 if attrs["ceil_mode"] else room // s + 1
        if attrs["ceil_mode"] and (count - 1) * s >= n + b:
            count -= 1  # the last window must start inside the input or its leading padding
        out.append(count)
    return Window(size, kernel, strides, dilations, begin, end, tuple(out))
