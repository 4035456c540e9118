"""Bounds of the integer values the `pim.core`s compute on, by interval arithmetic over the ops of
their (bufferized) bodies: what `pim-codegen` needs to know that a crossbar's input fits 8 bits,
and what the mapping needs to time those crossbars' reads before any core exists (the same over
`spat.compute` bodies, `compute_value_bounds`).

A value's bounds `(low, high)` come from constants, from clamps (`arith.minsi`/`arith.maxsi`,
`spat.vmax` against a constant), ReLU, right shifts by constants, and the ops that only move,
select or average elements (loads, views, pooling, concatenation, transfers between cores: a
received value has the bounds of the value sent). A function argument has the bounds its
`cim.bounds` argument attribute gives (`set_argument_bounds`: the integer importer sets it on the
inputs the host quantizes), a
global constant its values' range. Anything else is unbounded (the full i32 range).
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable

import numpy as np
from xdsl.dialects import arith, bufferization, func, memref, tensor
from xdsl.dialects.builtin import ArrayAttr, DenseIntOrFPElementsAttr, IntegerAttr
from xdsl.dialects.linalg.ops import TransposeOp
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue

from cimxdsl.dialects import pim
from cimxdsl.dialects import spatial as spat
from cimxdsl.dialects.utils import BOUNDS, identity_cache, num_elements, stored_values

Bounds = tuple[int, int]
UNBOUNDED: Bounds = (-(2**31), 2**31 - 1)
INT8: Bounds = (-128, 127)
NARROW_BITS = 8
"""The width of a crossbar's inputs when their values fit it, within `INT8` (`setbw`'s `ibiw` of
those `mvmul`s)."""

_VIEWS = (
    bufferization.ToTensorOp,
    bufferization.ToBufferOp,
    memref.CollapseShapeOp,
    memref.ExpandShapeOp,
    spat.ExtractRowsOp,
    spat.ExtractColumnsOp,
    spat.MaxPoolOp,
    spat.GlobalAvgPoolOp,
)
"""Ops whose result's elements are elements (or floored means) of their first operand's."""
_MOVES = (
    bufferization.ToTensorOp,
    bufferization.ToBufferOp,
    tensor.CollapseShapeOp,
    tensor.ExpandShapeOp,
    tensor.ExtractSliceOp,
    TransposeOp,
)
"""Ops outside the cores whose result's elements are their first operand's (the host's layout
changes of an input)."""


def within(bounds: Bounds, limits: Bounds) -> bool:
    return limits[0] <= bounds[0] and bounds[1] <= limits[1]


def outside_bounds(value: SSAValue) -> Bounds:
    """The bounds of a value defined outside the cores: an argument's attribute, a constant's range."""
    owner = value.owner
    if isinstance(value, BlockArgument):
        function = value.owner.parent_op()
        if isinstance(function, func.FuncOp) and function.arg_attrs is not None:
            entry = function.arg_attrs.data[value.index].data.get(BOUNDS)
            if isinstance(entry, ArrayAttr) and len(entry.data) == 2:
                low, high = (a.value.data for a in entry.data if isinstance(a, IntegerAttr))
                return (low, high)
        return UNBOUNDED
    if isinstance(owner, arith.ConstantOp):
        return constant_bounds(owner)
    if isinstance(owner, _MOVES):
        return outside_bounds(owner.operands[0])
    return UNBOUNDED


def constant_bounds(op: arith.ConstantOp) -> Bounds:
    return attribute_bounds(op.value)


@identity_cache
def attribute_bounds(value: Attribute) -> Bounds:
    """The range of a constant's value (integers only)."""
    if isinstance(value, IntegerAttr):
        return (value.value.data, value.value.data)
    if isinstance(value, DenseIntOrFPElementsAttr):
        values = stored_values(value)  # (a splat's one value: the same range)
        if values.size and num_elements(value.get_shape()) and np.issubdtype(values.dtype, np.integer):
            return (int(values.min()), int(values.max()))
    return UNBOUNDED


def shifted(bounds: Bounds, shift: Bounds) -> Bounds:
    """`x >> s` (arithmetic) for x and s within their bounds (s ≥ 0)."""
    (low, high), (s0, s1) = bounds, shift
    if s0 < 0 or s1 > 63:
        return UNBOUNDED
    return (min(low >> s0, low >> s1), max(high >> s0, high >> s1))


def known_bounds(value: SSAValue, known: dict[SSAValue, Bounds]) -> Bounds:
    bounds = known.get(value)
    return outside_bounds(value) if bounds is None else bounds


def minimum_bounds(op: Operation, known: dict[SSAValue, Bounds], channels: dict[SSAValue, Bounds]) -> Bounds:
    (a0, a1), (b0, b1) = known_bounds(op.operands[0], known), known_bounds(op.operands[1], known)
    return (min(a0, b0), min(a1, b1))


def maximum_bounds(op: Operation, known: dict[SSAValue, Bounds], channels: dict[SSAValue, Bounds]) -> Bounds:
    (a0, a1), (b0, b1) = known_bounds(op.operands[0], known), known_bounds(op.operands[1], known)
    return (max(a0, b0), max(a1, b1))


def relu_bounds(op: Operation, known: dict[SSAValue, Bounds], channels: dict[SSAValue, Bounds]) -> Bounds:
    low, high = known_bounds(op.operands[0], known)
    return (max(low, 0), max(high, 0))


def concat_bounds(op: Operation, known: dict[SSAValue, Bounds], channels: dict[SSAValue, Bounds]) -> Bounds:
    parts = [known_bounds(v, known) for v in op.operands]
    return (min(p[0] for p in parts), max(p[1] for p in parts))


Rule = Callable[[Operation, dict[SSAValue, Bounds], dict[SSAValue, Bounds]], Bounds | None]

_RULES: tuple[tuple[type[Operation] | tuple[type[Operation], ...], Rule], ...] = (
    (arith.ConstantOp, lambda op, known, channels: constant_bounds(op)),  # pyright: ignore[reportArgumentType]
    (pim.LoadOp, lambda op, known, channels: outside_bounds(op.operands[0])),
    (_VIEWS, lambda op, known, channels: known_bounds(op.operands[0], known)),
    (arith.MinSIOp, minimum_bounds),
    ((arith.MaxSIOp, spat.VMaxOp), maximum_bounds),
    (spat.VReluOp, relu_bounds),
    (arith.ShRSIOp, lambda op, known, channels: shifted(*(known_bounds(v, known) for v in op.operands))),
    (spat.ConcatOp, concat_bounds),
    (spat.ChannelReceiveOp, lambda op, known, channels: channels.get(op.operands[0], UNBOUNDED)),
)
"""The bounds of the result of each kind of op, the first that matches."""


@functools.cache
def bounds_rule(kind: type[Operation]) -> Rule:
    """How the bounds of the result of an op of type `kind` follow from its operands' (`_RULES`;
    others are unbounded)."""
    return next(
        (rule for kinds, rule in _RULES if issubclass(kind, kinds)),
        lambda op, known, channels: UNBOUNDED if op.results else None,
    )


def op_bounds(op: Operation, known: dict[SSAValue, Bounds], channels: dict[SSAValue, Bounds]) -> Bounds | None:
    """The bounds of `op`'s (first) result from its operands' (None: the op has no result)."""
    return bounds_rule(type(op))(op, known, channels)


def core_value_bounds(bodies: list[list[Operation]]) -> dict[SSAValue, Bounds]:
    """The bounds of the values of the cores' bodies (each core's ops). Transfers carry bounds from
    core to core: a core is gone over again whenever the bounds of a transfer it receives change
    (the cores' transfers form no cycle of values, so this ends)."""
    receivers = {op.channel: i for i, ops in enumerate(bodies) for op in ops if type(op) is spat.ChannelReceiveOp}
    channels: dict[SSAValue, Bounds] = {}
    known: dict[SSAValue, Bounds] = {}
    waiting = deque(range(len(bodies)))
    queued = set(waiting)
    while waiting:
        index = waiting.popleft()
        queued.discard(index)
        for op in bodies[index]:
            bounds = bounds_rule(type(op))(op, known, channels)
            if bounds is not None:
                known[op.results[0]] = bounds
            if type(op) is spat.ChannelSendOp:  # (exactly: an isinstance test of an op is several times slower)
                sent = known.get(op.value, UNBOUNDED)
                if channels.get(op.channel) != sent:
                    channels[op.channel] = sent
                    receiver = receivers.get(op.channel)
                    if receiver is not None and receiver not in queued:
                        waiting.append(receiver)
                        queued.add(receiver)
    return known


def compute_value_bounds(computes: list[spat.ComputeOp]) -> dict[SSAValue, Bounds]:
    """The bounds of the values of `spat.compute` bodies (in program order) and of their results: a
    body's input arguments have their operands' bounds, its results those of the values it yields."""
    known: dict[SSAValue, Bounds] = {}
    for compute in computes:
        for arg, value in zip(compute.input_args, compute.inputs, strict=True):
            known[arg] = known.get(value) or outside_bounds(value)
        for op in compute.body.block.ops:
            bounds = op_bounds(op, known, {})
            if bounds is not None:
                known[op.results[0]] = bounds
        for result, value in zip(compute.outputs, compute.body.block.last_op.operands, strict=True):  # pyright: ignore[reportOptionalMemberAccess]
            known[result] = known.get(value, UNBOUNDED)
    return known
