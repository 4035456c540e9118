"""What `cinm-to-spatial` knows about each value of the function it lowers (`Lowered`).

An activation becomes `Tiled` (channel tiles, each a compute result or a function-level value); a
constant stays `Constant` until an op needs it; a `tensor.pad`, a flatten and a `tosa.reduce_sum`
wait as `Padded`, `Flattened` and `PartialSum` for the op that consumes them. `Node` is a
`spat.compute` being built.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue

from cimxdsl.dialects.utils import numpy_dtype


@dataclass(frozen=True)
class NodeRef:
    """Result `index` of the compute `node`."""

    node: Node
    index: int


Ref = NodeRef | SSAValue
"""A tile: a compute result or a function-level value."""


@dataclass(frozen=True)
class Layout:
    """How a logical (cinm-level) tensor is held as tiles: pixel-major `[H, W, c]` tiles of an NCHW
    image (`rows is None`), or `[rows, c]` tiles of a matrix."""

    height: int = 1
    width: int = 1
    rows: int | None = None

    def tile_shape(self, channels: int) -> tuple[int, ...]:
        return (self.rows, channels) if self.rows is not None else (self.height, self.width, channels)

    def physical(self, logical: np.ndarray) -> np.ndarray:
        """A logical constant (NCHW, `[1, C]` for a 1×1 image, or `[rows, C]`) in tile layout."""
        if self.rows is not None:
            return logical.reshape(self.rows, -1)
        if logical.ndim == 4:
            return logical[0].transpose(1, 2, 0)
        return logical.reshape(self.height, self.width, -1)


@dataclass
class Tiled:
    """A logical tensor held as channel tiles: `tiles[t]` holds channels `bounds[t]`."""

    logical: tuple[int, ...]
    layout: Layout
    element: Attribute
    tiles: list[Ref]
    bounds: list[tuple[int, int]]
    nonneg: bool = False

    def tile_type(self, t: int) -> TensorType:
        lo, hi = self.bounds[t]
        return TensorType(self.element, self.layout.tile_shape(hi - lo))


@dataclass
class Constant:
    """A known constant tensor (or scalar: shape ()), as a splat value or an array."""

    shape: tuple[int, ...]
    element: Attribute
    splat: int | float | None = None
    array: np.ndarray | None = None

    def values(self) -> np.ndarray:
        if self.array is not None:
            return self.array
        return np.full(self.shape, self.splat, numpy_dtype(self.element))

    def splat_value(self) -> int | float | None:
        if self.splat is not None:
            return self.splat
        assert self.array is not None
        flat = self.array.reshape(-1)
        if flat.size and np.all(flat == flat[0]):
            return flat[0].item()
        return None


@dataclass
class Padded:
    """A `tensor.pad` of an NCHW image on H and W, folded into the window op that reads it."""

    source: SSAValue
    pads: tuple[int, int, int, int]
    value: int | float


FLATTENED_USE = "a flattened image can only feed a gemm"


@dataclass
class Flattened:
    """An NCHW image flattened to `[1, C·H·W]`, awaiting the gemm that reads it: that gemm is a
    convolution whose kernel covers the whole image (row c·H·W + y·W + x of its weights is channel c
    at kernel position (y, x)), with a 1×1 output."""

    image: Tiled


@dataclass
class PartialSum:
    """`tosa.reduce_sum` of an image over some of the axes 2 and 3 (awaiting the division)."""

    source: Tiled
    axes: frozenset[int]


@dataclass(eq=False)
class Node:
    """A `spat.compute` being built: its block grows weights (first) and inputs as ops need them."""

    index: int
    block: Block = field(default_factory=Block)
    weights: list[SSAValue] = field(default_factory=list)
    inputs: list[Ref] = field(default_factory=list)
    input_args: dict = field(default_factory=dict)
    results: list[SSAValue] = field(default_factory=list)

    def add_weight(self, value: SSAValue) -> int:
        self.block.insert_arg(value.type, len(self.weights))
        self.weights.append(value)
        return len(self.weights) - 1

    def use(self, ref: Ref) -> SSAValue:
        """The value of `ref` inside this compute (a new input argument if it comes from outside)."""
        if isinstance(ref, NodeRef) and ref.node is self:
            return self.results[ref.index]
        if ref not in self.input_args:
            value_type = ref.node.results[ref.index].type if isinstance(ref, NodeRef) else ref.type
            self.input_args[ref] = self.block.insert_arg(value_type, len(self.block.args))
            self.inputs.append(ref)
        return self.input_args[ref]

    def add(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def output(self, value: SSAValue) -> NodeRef:
        if value not in self.results:
            self.results.append(value)
        return NodeRef(self, self.results.index(value))


Lowered = Tiled | Constant | Padded | Flattened | PartialSum
"""The lowered form of a value of the source function."""
