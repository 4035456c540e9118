"""`spatial-to-pim`: assign `spat.compute`s to physical cores (M. Miotti, "Channel-Wise Lowering of ONNX-Based Deep Learning Models for ReRAM Architectures", Master's thesis, Politecnico di Milano, 2025, §4.6).

Computes carrying a `core` attribute (from `spatial-mapping`) go to that core. Otherwise
computes are merged onto at most `cores` cores of `crossbars-per-core` crossbars each (`cores=0`:
consecutive computes fill each core in turn, taking as many cores as that needs): with no more
computes than cores each gets its own core; otherwise consecutive computes (in program order) are
grouped with as few crossbars per core as still fits, and if contiguous groups cannot fit, computes
are packed first-fit. A program needing more crossbars than the cores hold is an error that says how
many it needs.

Each core (`pim.core`, its weights the concatenation of its computes' weights, `apply_filters`
indices shifted accordingly) runs the bodies of its computes in program order. Values between
computes on different cores travel through a fresh channel: a `spat.channel_send` on the producer
core and the matching `spat.channel_receive` on the consumer core, both at one step of a global
order that every core's body follows, so the blocking transfers cannot deadlock: in the layer
pipeline stage by stage (a compute's stage: the longest chain of computes leading to it), the
inputs of all the stage's computes before their bodies, so that the replicas of a layer send one
another the rows their windows share before computing their own; in the row pipeline compute by
compute (its inputs, then its body). With `forward` (the default) a value that would skip a stage
(a residual's input, sent from an early core to a late one) is relayed through the cores of the
stages between the value's (in the row pipeline: its producer core's) and its receiver's, so that
in a stream of images no core waits on a core more than one stage away, and in the layer pipeline
each transfer is a step among the inputs
of the receiving core's first compute in the value's stage or later, each core receiving first the
values ready first: a core receives everything an image needs before computing it, and no sender
waits for an unrelated compute of its receiver (`transfer_key`). A compute that reads only some
rows of a value another core holds (in the layer pipeline, a band of a replicated layer) receives
only those rows, cut on the sender. In the row pipeline, whose wavefront order
already follows the bands' times, a transfer joins the last one between its two cores when the
value is ready by then; otherwise it is a step among its consumer's inputs. Function-level values
a compute reads (function inputs, constants) become global-memory buffers
(`bufferization.to_buffer`) loaded with `pim.load`; compute results the host uses are stored with
`pim.store` into global buffers (`memref.alloc`) read back with
`bufferization.to_tensor` after the cores.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import bufferization, func, memref, tensor
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from cimxdsl.dialects import pim
from cimxdsl.dialects import spatial as spat
from cimxdsl.dialects.utils import (
    crossbar_count,
    crossbars_of,
    i64_array,
    i64_attr,
    memref_type,
    num_elements,
    shape_of,
    shape_of_type,
)
from cimxdsl.interpreters.prepared import cyclic_collector_paused
from cimxdsl.transforms.common.device_option import pass_device
from cimxdsl.transforms.common.errors import pass_error
from cimxdsl.transforms.common.functions import functions_holding
from cimxdsl.transforms.common.options import ChoicePass
from cimxdsl.transforms.pim.cinm_to_spatial import ORIGIN
from cimxdsl.transforms.pim.mapping.bands import (
    BAND,
    BAND_OVERHEAD,
    DEFAULT_ROWS_PER_BAND,
    SLACK,
    Pipeline,
    Rows,
    peel_tail,
    row_bands,
    split_into_bands,
    wavefront_order,
)
from cimxdsl.transforms.pim.spatial_mapping import CORE, fitting_cores, spatial_crossbars

PIPELINE = "spat.pipeline"
"""The discardable attribute of a function lowered with the row pipeline: the pipeline in one line."""

CHANNEL = spat.ChannelType()

DEFAULT_CORES = 16
DEFAULT_CROSSBARS_PER_CORE = 16


def contiguous_groups(weights: list[int], capacity: int) -> list[int]:
    """Group index of each compute when consecutive computes share a core up to `capacity`."""
    groups, load, group = [], 0, 0
    for w in weights:
        if groups and load + w > capacity:
            group, load = group + 1, 0
        groups.append(group)
        load += w
    return groups


def assign_cores(weights: list[int], cores: int, per_core: int, largest_layer: str = "") -> list[int]:
    """The core of each compute, given the crossbars each one holds; `cores = 0` takes as many cores
    as consecutive computes filling each core need. `largest_layer` describes the layer with the
    most crossbars, for the error when the program does not fit."""
    total = sum(weights)
    largest = max(weights, default=0)
    if largest > per_core:
        raise pass_error(
            "spatial-to-pim",
            f"a spat.compute holds {largest} crossbars, more than the {per_core} of a core: lower it with "
            f"cinm-to-spatial{{crossbars-per-compute={per_core}}}",
        )
    if cores == 0:
        return contiguous_groups(weights, per_core)
    if total > cores * per_core:
        layer = f" (largest layer: {largest_layer})" if largest_layer else ""
        raise pass_error(
            "spatial-to-pim",
            f"the program needs {total} crossbars{layer}, but {cores} core{'s' if cores != 1 else ''} x {per_core} "
            f"crossbars per core hold only {cores * per_core}: use at least {-(-total // per_core)} cores",
        )
    if len(weights) <= cores:
        return list(range(len(weights)))
    for capacity in range(max(-(-total // cores), largest, 1), per_core + 1):
        groups = contiguous_groups(weights, capacity)
        if groups[-1] < cores:
            return groups
    loads = [0] * cores
    assignment = []
    for w in weights:
        core = next((c for c in range(cores) if loads[c] + w <= per_core), None)
        if core is None:
            raise pass_error(
                "spatial-to-pim",
                f"the program's {len(weights)} computes ({total} crossbars) cannot be packed onto {cores} cores of "
                f"{per_core} crossbars; use more cores or cinm-to-spatial{{crossbars-per-compute=...}} with fewer",
            )
        loads[core] += w
        assignment.append(core)
    return assignment


Key = tuple
"""Where an op of a core's body lies in the one global order every core follows: the step of the
compute it serves and of its part, 0 for the compute's inputs (transfers, loads) or 1 for its body
(`PimState.step`), the key of the op that made a transferred value ready on its sender (so that a
core receives first the values ready first; `()` otherwise), then the order in which ops were
placed; or the key of another op followed by that order (just after that op)."""


@dataclass(eq=False)
class CoreBuilder:
    core_id: int
    weights: list[SSAValue] = field(default_factory=list)
    body: list[Operation] = field(default_factory=list)
    keys: list[Key] = field(default_factory=list)
    """The place in the global order of each op of `body` (ascending)."""
    placed: dict[Operation, Key] = field(default_factory=dict)
    """The same, by op."""
    computes: list[int] = field(default_factory=list)
    """The positions in program order of the computes placed on the core (ascending)."""
    offsets: dict[tuple[SSAValue, ...], int] = field(default_factory=dict)
    """The first crossbar of each weight list placed (the bands of a layer share its crossbars)."""

    def add(self, ops: Sequence[Operation], key: Key) -> None:
        """Put `ops` into the body at their place `key` in the global order."""
        at = bisect.bisect_right(self.keys, key)
        self.body[at:at] = ops
        self.keys[at:at] = [key] * len(ops)
        self.placed.update(dict.fromkeys(ops, key))

    def build(self) -> pim.CoreOp:
        return pim.CoreOp(self.core_id, self.weights, Region(Block([*self.body, pim.HaltOp()])))


@dataclass
class PimState:
    """What the placement of one function's computes knows so far: each compute's core, the values
    each core holds, and the function-level ops the placement adds (global buffers, channels)."""

    function: func.FuncOp
    pipeline: Pipeline
    cores: dict[spat.ComputeOp, CoreBuilder]
    """Each compute's core, in the order the cores run the computes."""
    prologue: list[Operation]
    """The host ops before the cores (not depending on any compute)."""
    epilogue: list[Operation]
    """The host ops after the cores."""
    produced: dict[SSAValue, tuple[CoreBuilder, SSAValue]] = field(default_factory=dict)
    received: dict[tuple[SSAValue, CoreBuilder, tuple[int, int] | None], SSAValue] = field(default_factory=dict)
    input_buffers: dict[SSAValue, Operation] = field(default_factory=dict)
    output_buffers: dict[SSAValue, tuple[Operation, Operation]] = field(default_factory=dict)
    channels: list[Operation] = field(default_factory=list)
    forward: bool = True
    """Relay values that would skip a stage through the stages between (see `transfer`)."""
    holders: dict[tuple[SSAValue, Rows | None], dict[CoreBuilder, SSAValue]] = field(default_factory=dict)
    """The cores holding each compute result or rows of it (its producer first), and its value on
    each."""
    feeders: dict[CoreBuilder, list[CoreBuilder]] = field(default_factory=dict)
    """The cores whose results each core's computes read."""
    positions: dict[spat.ComputeOp, int] = field(default_factory=dict)
    """The position of each compute in program order (the order the cores run them)."""
    levels: list[int] = field(default_factory=list)
    """The stage of each compute, by position in program order (see `stage`)."""
    placing: int = 0
    """The position in program order of the compute being placed."""
    placed: int = 0
    """Ops put into cores so far (the last part of their `Key`)."""
    links: dict[tuple[CoreBuilder, CoreBuilder], Key] = field(default_factory=dict)
    """The key of the last transfer between two cores (sender, receiver)."""
    stage: dict[CoreBuilder, int] = field(default_factory=dict)
    """The earliest stage of each core's computes (a compute's stage: the longest chain of computes
    leading to it, so that the replicas and tiles of a layer, and parallel branches, share one)."""

    def step(self, position: int, body: bool) -> tuple:
        """The order of the inputs (`body` false) or the body of the compute at `position`: in the
        row pipeline (its wavefront order), compute by compute; in the layer pipeline, stage by
        stage, the inputs of all the stage's computes before their bodies, so that a core sends a
        value to a compute of the same stage as its own next one (another replica of a layer that
        needs its rows) before computing that one."""
        major = (self.levels[position], int(body)) if self.pipeline == "layer" else ()
        return (major, position, int(body))

    def key(self, body: bool, position: int | None = None, ready: tuple = ()) -> Key:
        """The place in the global order of the next ops put into a core: among the inputs
        (`body` false) or the body of the compute at `position` (default: the one being placed),
        for a transfer after those of values ready before `ready`."""
        self.placed += 1
        return (*self.step(self.placing if position is None else position, body), ready, self.placed)


def schedule_function(
    function: func.FuncOp,
    cores: int,
    per_core: int,
    pipeline: Pipeline = "layer",
    rows_per_band: int = DEFAULT_ROWS_PER_BAND,
    forward: bool = True,
    band_slack: float = SLACK,
) -> PimState:
    """The core of each compute (with `pipeline=row`, of each band, in wavefront order); the
    function's block is put in the order the placement visits it: the host ops the computes need,
    the computes in the order the cores run them, then the host ops after them."""
    block = function.body.block
    computes = [op for op in block.ops if isinstance(op, spat.ComputeOp)]
    weights = [crossbar_count(c.weights) for c in computes]
    placed = [c.attributes.get(CORE) for c in computes]
    if computes and all(isinstance(core, IntegerAttr) for core in placed):
        assignment = placed_cores([core.value.data for core in placed], computes, cores, per_core)  # pyright: ignore
    else:
        assignment = assign_cores(weights, cores, per_core, largest_layer(computes))
        if pipeline == "row":
            peeled = [(part, core) for c, core in zip(computes, assignment, strict=True) for part in peel_tail(c)]
            computes = [part for part, _ in peeled]
            bands = [[(band, None) for band in row_bands(c, rows_per_band)] for c in computes]
            on = [[core] * len(b) for (_, core), b in zip(peeled, bands, strict=True)]
            computes = split_into_bands(computes, bands, on, CORE, mark=True)
    if pipeline == "row":
        on = [c.attributes[CORE].value.data for c in computes]  # pyright: ignore[reportAttributeAccessIssue]
        computes = wavefront_order(computes, on, band_slack)
        assignment = [c.attributes[CORE].value.data for c in computes]  # pyright: ignore
        function.attributes[PIPELINE] = StringAttr(pipeline_summary(computes, rows_per_band))
    order = sorted(set(assignment), key=assignment.index)
    builders = {core: CoreBuilder(i) for i, core in enumerate(order)}
    host_ops = [op for op in block.ops if not isinstance(op, spat.ComputeOp)]
    prologue, epilogue = split_host_ops(host_ops, computes)
    ordered = [*prologue, *computes, *epilogue]
    if list(block.ops) != ordered:
        for op in ordered:
            op.detach()
        block.add_ops(ordered)
    placement = {compute: builders[core] for compute, core in zip(computes, assignment, strict=True)}
    depth: dict[SSAValue, int] = {}
    stage: dict[CoreBuilder, int] = {}
    levels = []
    for compute, builder in placement.items():
        level = 1 + max((depth[v] for v in compute.inputs if v in depth), default=0)
        depth.update(dict.fromkeys(compute.results, level))
        stage[builder] = min(stage.get(builder, level), level)
        levels.append(level)
    core_of = {result: placement[compute] for compute in computes for result in compute.results}
    feeders: dict[CoreBuilder, dict[CoreBuilder, None]] = {}
    for compute, builder in placement.items():
        feeders.setdefault(builder, {}).update(dict.fromkeys(core_of[v] for v in compute.inputs if v in core_of))
    return PimState(
        function,
        pipeline,
        placement,
        prologue,
        epilogue,
        forward=forward,
        positions={compute: i for i, compute in enumerate(placement)},
        levels=levels,
        stage=stage,
        feeders={core: list(cores) for core, cores in feeders.items()},
    )


def placed_cores(assignment: list[int], computes: list[spat.ComputeOp], cores: int, per_core: int) -> list[int]:
    """The cores `spatial-mapping` chose (its `core` attributes), checked against the chip (the
    bands of a layer on one core share its crossbars)."""
    held: dict[int, set[tuple[SSAValue, ...]]] = {}
    for core, compute in zip(assignment, computes, strict=True):
        held.setdefault(core, set()).add(tuple(compute.weights))
    loads = {core: crossbar_count(w for group in weights for w in group) for core, weights in held.items()}
    if (cores and len(loads) > cores) or max(loads.values()) > per_core:
        raise pass_error(
            "spatial-to-pim",
            f"the computes' 'core' attributes use {len(loads)} cores and up to {max(loads.values())} crossbars per "
            f"core, more than {cores or 'any number of'} cores of {per_core} crossbars",
        )
    return assignment


def split_host_ops(host_ops: list[Operation], computes: list[spat.ComputeOp]) -> tuple[list, list]:
    """Host ops before the cores (not depending on any compute) and after them."""
    late: set[SSAValue] = {r for c in computes for r in c.results}
    prologue, epilogue = [], []
    for op in host_ops:
        if isinstance(op, func.ReturnOp) or any(v in late for v in op.operands):
            epilogue.append(op)
            late.update(op.results)
        else:
            prologue.append(op)
    for compute in computes:
        for value in compute.inputs:
            if value in late and not isinstance(value.owner, spat.ComputeOp):
                raise pass_error(
                    "spatial-to-pim", "a compute reads a value the host computes from other computes' results"
                )
    return prologue, epilogue


def place_compute(state: PimState, compute: spat.ComputeOp) -> None:
    """A compute of a function being placed: its body moved to the end of its core's, its weights
    to the core's crossbars (`apply_filters` indices shifted), its inputs received from their
    producer cores or loaded from global memory, the results the host uses stored to global memory.
    The function is rebuilt once all its computes are placed (`rebuild_function`)."""
    core = state.cores[compute]
    state.placing = state.positions[compute]
    core.computes.append(state.placing)
    weights = tuple(compute.weights)
    offset = core.offsets.get(weights) if state.pipeline == "row" else None
    if offset is None:
        offset = core.offsets[weights] = len(core.weights)
        core.weights.extend(compute.weights)
    for arg in compute.weight_args:
        if arg.uses:
            raise pass_error("spatial-to-pim", "crossbar weights may only be used through 'spat.apply_filters' indices")
    mapping: dict[SSAValue, SSAValue] = {}
    first_row: dict[SSAValue, int] = {}
    near = list(dict.fromkeys(state.produced[v][0] for v in compute.inputs if v in state.produced))
    for arg, operand in zip(compute.input_args, compute.inputs, strict=True):
        # the layer pipeline's bands receive the rows they read; the row pipeline's, whole bands
        rows = rows_read(arg) if state.pipeline == "layer" or operand not in state.produced else None
        mapping[arg] = local_value(state, operand, core, rows, near)
        sliced = rows is not None and shape_of(mapping[arg])[0] != shape_of(operand)[0]
        first_row[arg] = rows[0] if sliced else 0
    terminator = compute.body.block.last_op
    assert isinstance(terminator, spat.YieldOp)
    body = []
    for op in compute.body.block.ops:
        if op is terminator:
            break
        if isinstance(op, spat.ApplyFiltersOp):
            indices = [i + offset if i >= 0 else -1 for i in op.weight_index_list()]
            op.properties["weightIndices"] = i64_array(indices)
        elif isinstance(op, spat.ExtractRowsOp) and first_row.get(op.input):
            op.properties["offset"] = i64_attr(op.offset.value.data - first_row[op.input])
        body.append(op)
    for arg, local in mapping.items():
        name = local.name_hint
        arg.replace_all_uses_with(local)
        local.name_hint = name
    for op in body:
        op.detach()
    core.add(body, state.key(body=True))
    for result, value in zip(compute.results, terminator.values, strict=True):
        state.produced[result] = (core, value)
        if any(not isinstance(use.operation, spat.ComputeOp) for use in result.uses):
            store(state, result, core, value)


def held_in_time(state: PimState, core: CoreBuilder, held: SSAValue) -> bool:
    """Whether `held`, a value `core` received or loaded for a compute placed before, is there
    before the body of the compute being placed: in the layer pipeline the cores run stage by
    stage, and a compute later in program order may lie in an earlier stage (a parallel branch)
    than the one that received the value (it then receives the value again, in time)."""
    at = core.placed.get(held.owner)  # pyright: ignore[reportArgumentType]
    return at is None or at[:3] <= state.step(state.placing, True)


def local_value(
    state: PimState,
    value: SSAValue,
    core: CoreBuilder,
    rows: tuple[int, int] | None = None,
    near: Sequence[CoreBuilder] = (),
) -> SSAValue:
    """`value` on `core`: local, received from a core holding it, or loaded from global memory
    (only its rows `rows` when given, also when received); `near`: the producers of the consumer's
    other inputs."""
    key = (value, core, rows)
    if key in state.received and held_in_time(state, core, state.received[key]):
        return state.received[key]
    if value in state.produced:
        producer, local = state.produced[value]
        if producer is core:
            return local
        state.received[key] = transfer(state, value, core, near, rows)
    else:
        if not isinstance(value.type, TensorType):
            raise pass_error("spatial-to-pim", f"a compute input must be a tensor, got {value.type}")
        buffer = state.input_buffers.get(value)
        if buffer is None:
            buffer = bufferization.ToBufferOp.create(operands=[value], result_types=[memref_type(value.type)])
            state.input_buffers[value] = buffer
        shape = shape_of_type(value.type)
        start, end = rows if rows is not None else (0, shape[0])
        row = num_elements(shape[1:])
        empty = tensor.EmptyOp([], TensorType(value.type.element_type, (end - start, *shape[1:])))
        load = pim.LoadOp(buffer.results[0], empty.tensor, start * row, (end - start) * row)
        core.add([empty, load], state.key(body=False))
        state.received[key] = load.result
    return state.received[key]


def transfer(
    state: PimState, value: SSAValue, core: CoreBuilder, near: Sequence[CoreBuilder], rows: Rows | None = None
) -> SSAValue:
    """The compute result `value` sent to `core` (only its rows `rows` when given, cut on its
    producer: a band of a replicated consumer receives the rows it reads). With `state.forward`, a
    value that would skip a stage (a residual's input, sent from an early core to a late one) goes
    through the stages between: it is sent from the core of `near` (or else of those whose results
    `core` reads) whose earliest stage lies between the value's and `core`'s and is nearest to
    `core`, that core receiving it first the same way; each transfer goes where `transfer_key`
    says."""
    producer, local = state.produced[value]
    holders = state.holders.get((value, rows))
    if holders is None:
        if rows is not None:
            cut = spat.ExtractRowsOp(local, rows[0], rows[1] - rows[0])
            producer.add([cut], (*producer.placed[local.owner], state.key(body=False)[-1]))  # pyright: ignore
            local = cut.result
        holders = state.holders[(value, rows)] = {producer: local}
    if core in holders and held_in_time(state, core, holders[core]):
        return holders[core]
    sender = producer
    if state.forward:
        stage, made = state.stage, state.stage[producer]
        if state.pipeline == "layer":  # the value's own stage (its core may hold earlier ones)
            made = state.levels[state.positions[value.owner]]  # pyright: ignore[reportArgumentType]
        between = [c for c in [*near, *state.feeders.get(core, ())] if made < stage[c] < stage[core]]
        if between:
            sender = max(between, key=lambda c: (stage[c], c.core_id))
            transfer(state, value, sender, (), rows)
    # (`create`: the ops are well-formed by construction, thousands of them)
    channel = spat.ChannelNewOp.create(result_types=[CHANNEL])
    state.channels.append(channel)
    send = spat.ChannelSendOp.create(operands=[channel.channel, holders[sender]])
    receive = spat.ChannelReceiveOp.create(operands=[channel.channel], result_types=[holders[sender].type])
    key = transfer_key(state, sender, core, sender.placed.get(holders[sender].owner))  # pyright: ignore
    sender.add([send], key)
    core.add([receive], key)
    state.links[(sender, core)] = key
    holders[core] = receive.result
    return receive.result


def transfer_key(state: PimState, sender: CoreBuilder, core: CoreBuilder, ready: Key | None) -> Key:
    """The place in the global order of a transfer from `sender` to `core` of a value ready on the
    sender at `ready`. With `state.forward`, in the layer pipeline: among the inputs of `core`'s first
    compute after `ready` whose stage is not before the value's (its producer's, or the one before
    the compute whose inputs a relayed value came with; after it when `core` is not downstream of
    the sender, so that the replicas of a layer do not wait for one another's results), after
    those of values ready earlier: a sender waits for its receiver's inputs only, never for an
    unrelated compute; in the row pipeline (its wavefront order already follows the bands' times):
    right after the last transfer between the two cores when the value is ready by then. Otherwise
    among the inputs of the compute being placed."""
    if state.forward and ready is not None:
        if state.pipeline == "layer":
            # the value's stage: its producer's, or the one before the compute it came in with
            _, made, body = ready[:3]
            stage = state.levels[made] + body - 1
            if state.stage[core] <= state.stage[sender]:  # not downstream: wait for a later stage
                stage += 1
            later = [p for p in core.computes if state.step(p, False) > ready[:3] and state.levels[p] >= stage]
            position = min(later, key=lambda p: state.step(p, False), default=None)
            return state.key(body=False, position=position, ready=ready)
        last = state.links.get((sender, core))
        if last is not None and ready < last:
            return (*last, state.key(body=False)[-1])
    return state.key(body=False)


def store(state: PimState, result: SSAValue, core: CoreBuilder, local: SSAValue) -> None:
    result_type = result.type
    assert isinstance(result_type, TensorType)
    alloc = memref.AllocOp.get(result_type.element_type, shape=shape_of_type(result_type))
    core.add([pim.StoreOp(local, alloc.memref, 0)], state.key(body=True))
    to_tensor = bufferization.ToTensorOp(alloc.memref, restrict=True, writable=True)
    state.output_buffers[result] = (alloc, to_tensor)


def rebuild_function(state: PimState) -> None:
    """The function's body once every compute is placed: the host ops before the cores, the global
    buffers and channels, the cores, the results read back, then the host ops after them."""
    block = state.function.body.block
    to_tensors = []
    for result, (_, to_tensor) in state.output_buffers.items():
        result.replace_all_uses_with(to_tensor.results[0])
        to_tensors.append(to_tensor)
    new_order = [
        *state.prologue,
        *state.input_buffers.values(),
        *(alloc for alloc, _ in state.output_buffers.values()),
        *state.channels,
        *(builder.build() for builder in dict.fromkeys(state.cores.values())),
        *to_tensors,
        *state.epilogue,
    ]
    for host in [*state.prologue, *state.epilogue]:
        host.detach()
    for compute in reversed(state.cores):
        compute.detach()
        compute.erase(safe_erase=False)
    Rewriter.insert_op(new_order, InsertPoint.at_end(block))


def pipeline_summary(computes: list[spat.ComputeOp], rows_per_band: int) -> str:
    """The row pipeline in one line: the computes in bands, and those left on whole images."""
    whole = sum(1 for c in computes if BAND not in c.attributes)
    note = (
        f"; {whole} compute{'s' if whole != 1 else ''} on whole images (an op needs all of its input: global "
        "pooling, a layer after a flatten, a result the host reads; or its bands would cost over "
        f"{BAND_OVERHEAD:.0%} more than the whole)"
        if whole
        else ""
    )
    rows = f"{rows_per_band} row{'s' if rows_per_band != 1 else ''}"
    return f"row pipeline: {len(computes) - whole} bands of at least {rows}{note}"


def rows_read(arg: SSAValue) -> tuple[int, int] | None:
    """The rows `[start, end)` of a compute's input that its body reads when it reads it only through
    `spat.extract_rows` (a band of a replicated layer) and not all of them; None otherwise."""
    cuts = [use.operation for use in arg.uses]
    if not cuts or not all(isinstance(cut, spat.ExtractRowsOp) for cut in cuts):
        return None
    start = min(cut.offset.value.data for cut in cuts)  # pyright: ignore[reportAttributeAccessIssue]
    end = max(cut.offset.value.data + shape_of(cut.result)[0] for cut in cuts)  # pyright: ignore
    return None if (start, end) == (0, shape_of(arg)[0]) else (start, end)


def largest_layer(computes: list[spat.ComputeOp]) -> str:
    """`name (N crossbars)` of the layer with the most crossbars, from the weights' `origin`."""
    per_layer: dict[str, int] = {}
    for compute in computes:
        for weight in compute.weights:
            origin = weight.owner.attributes.get(ORIGIN) if isinstance(weight.owner, Operation) else None
            if isinstance(origin, StringAttr):
                name = origin.data.split(":")[0]
                per_layer[name] = per_layer.get(name, 0) + crossbars_of(weight)
    if not per_layer:
        return ""
    name = max(per_layer, key=lambda n: per_layer[n])
    return f"{name}, {per_layer[name]} crossbars"


def pim_geometry(device: str, cores: int | None, per_core: int | None) -> tuple[int, int]:
    default_cores, default_per_core = DEFAULT_CORES, DEFAULT_CROSSBARS_PER_CORE
    if device:
        config = pass_device("spatial-to-pim", device)
        default_cores, default_per_core = config.cores, config.crossbars_per_core
    cores = cores if cores is not None else default_cores
    per_core = per_core if per_core is not None else default_per_core
    if cores < 0 or per_core < 1:
        raise pass_error(
            "spatial-to-pim", "cores must be positive (0: as many as needed) and crossbars-per-core positive"
        )
    return cores, per_core


@dataclass(frozen=True)
class SpatialToPimPass(ChoicePass):
    """Assign `spat.compute`s to `cores` physical cores of `crossbars-per-core` crossbars (defaults:
    16 and 16, or the `device` preset's; `cores=0`: as many cores as needed), with channels between
    cores and global-memory loads and stores for the host's values. With `fit`, the program takes
    the `cores` only if its crossbars fit them, else as many as it needs. With `pipeline=row` the layers
    are cut into bands of `rows-per-band` output rows (unless `spatial-mapping` did) and placed in
    wavefront order, so that a band runs as soon as the input rows its windows need have arrived
    (`band-slack`: how much later, in median band times, a deeper band may be ready than the
    earliest and still go first). With `forward` (default) values that would skip a stage are
    relayed through the stages between and, in the layer pipeline, every core receives an image's
    values before its computes need them."""

    name = "spatial-to-pim"

    cores: int | None = None
    crossbars_per_core: int | None = None
    device: str = ""
    fit: bool = False
    pipeline: Pipeline = "layer"
    rows_per_band: int = DEFAULT_ROWS_PER_BAND
    forward: bool = True
    band_slack: float = SLACK

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        cores, per_core = pim_geometry(self.device, self.cores, self.crossbars_per_core)
        if self.rows_per_band < 1:
            raise pass_error(self.name, f"rows-per-band must be positive, got {self.rows_per_band}")
        if not self.band_slack >= 0:
            raise pass_error(self.name, f"band-slack must be >= 0, got {self.band_slack}")
        if self.fit:
            cores = fitting_cores(spatial_crossbars(op), cores, per_core)
        states: dict[Operation, PimState] = {
            f: schedule_function(f, cores, per_core, self.pipeline, self.rows_per_band, self.forward, self.band_slack)
            for f in functions_holding(op, spat.ComputeOp)
        }
        with cyclic_collector_paused():
            for state in states.values():
                for compute in state.cores:
                    place_compute(state, compute)
            for state in states.values():
                rebuild_function(state)
