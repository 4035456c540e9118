"""An estimate of a `pim` program's time and energy on a chip (`cimxdsl.device.chip.ChipConfig`,
pimsim-nn's parameters), computed from the per-core instruction streams with NumPy.

What it computes:

* **Per instruction**, a latency in ns from its unit, as pimsim-nn times them: scalar ops and
  `setbw` take `scalar_latency_cycle`; `mvmul` reads 8 × `xbar_rows` input elements from local
  memory (pimsim-nn's `ArrayGroup` times the input as 8 bit planes), runs the crossbar pipeline of
  pimsim-nn's `XbarArray` (input bits ÷ `dac_resolution` DAC steps × ⌈rows ÷ `dac_count`⌉, each a
  DAC + crossbar read + sample-and-hold stage followed by ⌈cols ÷ `adc_count`⌉ ADC conversions;
  stages overlap when `pipeline_mode`) and writes `xbar_cols × cell_precision ÷ mbiw` outputs;
  vector ops read their operands (`len` elements of `ibiw` bits; two for binary ops), compute
  ⌈len ÷ `vector_width`⌉ × `vector_latency_cycle` and write their result (`obiw` bits per element
  for `vvmul`, `vvsll`, `vvsra`, `vtanh`, `vsigm`, `vrsu`, `vrsl`, `ibiw` bits for the others);
  the widths are those of the last `setbw` before the instruction; a memory access of `b`
  bytes takes ⌈b ÷ `data_width`⌉ × its read/write latency; `ld`/`st` add the global memory access
  and the NoC (a load's request is one flit, a store's carries its data); `lldi`/`lmv` are a local
  write / a local read and write of `len` bytes (pimsim-nn reads their `len` as bytes).
* **Per-layer precision**: an `mvmul` on an array group whose layer has its own precision
  (`ArrayGroup.precision`, w-bit weights, a-bit inputs) sends its inputs in ⌈a ÷ `dac_resolution`⌉
  DAC steps instead of the `setbw` width's, and its weights take ⌈w ÷ `cell_precision`⌉ crossbars
  read side by side (pimsim-nn's bit slicing): the same latency, that many times the crossbar
  energy, and that many crossbars' ADCs of static power. Groups without one count as one crossbar.
* **In a core**, instructions run in order, one at a time (pimsim-nn with `rob_size = 1`, its
  default), so every data dependency through local memory is honoured: an instruction starts when
  the previous one ends.
* **Between cores**, `send`/`recv` are blocking: the k-th send from A to B meets the k-th recv of B
  from A; the transfer starts when both have reached them and takes two one-flit handshakes, the
  sender's local read, the data's ⌈bytes ÷ `bus_width`⌉ flits one after another, each over the
  hops of a `mesh_columns`-wide mesh × `noc_hop_latency_cycle` (pimsim-nn's network with the table
  `cimxdsl.backend.pimsim_config` writes), and the receiver's local write; both continue when it
  ends. The loop runs over these synchronisation points only; the instructions between them are
  summed with NumPy.
* **Global memory** sits next to core 0 (one hop further); its busy time is the sum of its
  accesses (it serves one at a time).

Reported: the latency of one image (the last core's end), each core's busy time (its instructions'
latencies, transfers included, waiting excluded), the bottleneck (the busiest core, or the global
memory when it is busier), and the throughput of images streamed through the chip as pimsim-nn's
throughput mode runs them: every core repeats its program, starting the next image as soon as it
ends one, its blocking transfers pairing with the other cores' (`STREAMED` images; one leaves every
(last image's end − first image's end) ÷ (images − 1), and at most one every global memory busy
time). A core holding an early and a late layer cannot start the next image's early layer before
this image's late one, so images overlap only as far as the cores' programs let them;
`throughput_bound` = 1 / max(busiest core, global memory) is what perfect overlap would give.
`critical_path` gives what one image's latency waits on: the cores' spans from the last core's
end back through every transfer where a core waited for its peer.
Energy: the crossbar reads, DACs and ADCs of every `mvmul` (pimsim-nn's per-stage energies), the
vector unit, local and global memory (dynamic power × busy time), the NoC (per byte and hop), and
the ADCs' static power of the crossbars in use over the latency.
"""

from __future__ import annotations

from collections import deque
from dataclasses import asdict, dataclass

import numpy as np

from cimxdsl.backend.artifacts import Artifacts
from cimxdsl.device.chip import ChipConfig
from cimxdsl.device.latency import Latencies, memory_hops, mesh_hops, mvm_cycles_and_energy
from cimxdsl.dialects import pim
from cimxdsl.interpreters.pim_machine import CoreProgram


class PerformanceError(ValueError):
    """The program cannot be timed (e.g. its cores wait on each other forever); one line."""


def _codes(*classes: type[pim.InstructionOp]) -> np.ndarray:
    return np.array([c.OPCODE for c in classes])


VECTOR_BINARY = _codes(
    pim.VvaddOp, pim.VvsubOp, pim.VvmulOp, pim.VvdmulOp, pim.VvmaxOp, pim.VvsllOp, pim.VvsraOp, pim.VrsuOp, pim.VrslOp
)
VECTOR_UNARY = _codes(pim.VavgOp, pim.VreluOp, pim.VtanhOp, pim.VsigmOp, pim.VmvOp)
ONE_ELEMENT_RESULT = _codes(pim.VvdmulOp, pim.VavgOp)
OUTPUT_WIDTH = _codes(pim.VvmulOp, pim.VvsllOp, pim.VvsraOp, pim.VtanhOp, pim.VsigmOp, pim.VrsuOp, pim.VrslOp)
"""The vector ops whose results pimsim-nn writes with `setbw`'s output width (the others: its input width)."""
SYNC = _codes(pim.SendOp, pim.RecvOp)
COMPONENTS = ("crossbar", "vector", "local_memory", "global_memory", "noc", "static")


@dataclass
class PerformanceEstimate:
    """Times in ns per image, energy in pJ per image by component (and `total`)."""

    chip: str
    latency_ns: float
    """One image, alone on the chip: when the last core ends."""
    throughput: float
    """Images per second in pipelined operation: 1 / max(busiest core, global memory)."""
    bottleneck: str
    """`core <id>` or `global memory`."""
    core_busy_ns: list[float]
    core_end_ns: list[float]
    global_memory_busy_ns: float
    energy_pj: dict[str, float]
    throughput_bound: float = 0.0
    """1 / max(busiest core, global memory): the throughput if no core ever waited on another."""

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class CoreCosts:
    """One core's instruction latencies, synchronisation points, global memory time and energy."""

    latency: np.ndarray
    """ns per instruction (a send/recv: its transfer, once both sides are there)."""
    sync: np.ndarray
    """Indices of the send/recv instructions."""
    peer: np.ndarray
    is_send: np.ndarray
    global_busy: float
    energy: dict[str, float]


def core_costs(program: CoreProgram, chip: ChipConfig) -> CoreCosts:
    """Each instruction's latency and energy on `chip`, by unit, for the whole stream at once."""
    stream = pim.InstructionStream.from_ops(program.instructions)
    op = stream.opcodes
    ibytes, obytes = element_widths(stream)
    model = Latencies(chip, ibytes, obytes)  # pyright: ignore[reportArgumentType]
    local_read, local_write, noc = model.local_read, model.local_write, model.noc
    length, size, peer = (stream.column(f).astype(np.int64) for f in ("len", "size", "core"))

    latency = np.full(len(op), chip.scalar_latency_cycle * chip.period, dtype=np.float64)
    local = np.zeros(len(op))
    # matrix unit
    mvm = op == pim.MvmulOp.OPCODE
    mbiw = np.maximum(stream.column("mbiw")[mvm], 1)
    matrix = Latencies(chip, ibytes[mvm], obytes[mvm])  # pyright: ignore[reportArgumentType]
    groups = stream.column("group").astype(np.int64)[mvm]
    input_bits, crossbars, wide = mvmul_bits(program, chip, groups, 8 * ibytes[mvm])
    local[mvm] = matrix.mvmul_local(mbiw, wide)
    cycles, crossbar_energy = mvm_cycles_and_energy(chip, input_bits)  # pyright: ignore[reportArgumentType]
    latency[mvm] = cycles * chip.period + local[mvm]
    # vector unit
    binary, unary = np.isin(op, VECTOR_BINARY), np.isin(op, VECTOR_UNARY)
    vector = binary | unary
    one_result = np.isin(op, ONE_ELEMENT_RESULT)
    vector_local = model.vector_local(length, binary, one_result, np.isin(op, OUTPUT_WIDTH))
    compute = model.vector_compute(length)
    latency[vector] = (compute + vector_local)[vector]
    local[vector] = vector_local[vector]
    # local memory moves
    for code, cost in ((pim.LldiOp.OPCODE, model.fill(length)), (pim.LmvOp.OPCODE, model.move(length))):
        where = op == code
        latency[where] = local[where] = cost[where]
    # global memory
    load, store = op == pim.LdOp.OPCODE, op == pim.StOp.OPCODE
    to_memory = int(memory_hops(chip, program.core_id))
    global_time = np.where(
        load,
        model.access(size, chip.global_memory_data_width, chip.global_memory_read_latency_cycle),
        model.access(size, chip.global_memory_data_width, chip.global_memory_write_latency_cycle),
    )
    moved = load | store
    local_side = np.where(load, local_write(size), local_read(size))
    request = np.where(load, 1, size)  # a load's request is one flit; the data comes back with no flits
    latency[moved] = (global_time + local_side + noc(to_memory, request))[moved]
    local[moved] = local_side[moved]
    # transfers between cores
    sync = np.flatnonzero(np.isin(op, SYNC))
    distance = mesh_hops(chip, program.core_id, peer[sync])
    latency[sync] = model.transfer(size[sync], distance)
    sends = op[sync] == pim.SendOp.OPCODE
    local[sync] = np.where(sends, local_read(size[sync]), local_write(size[sync]))  # each side's own access
    noc_bytes = float(np.sum(size[sync] * distance) / 2 + np.sum(size[moved]) * to_memory)
    energy = {
        "crossbar": float(np.sum(crossbar_energy * crossbars)),
        "vector": float(np.sum(compute[vector]) * chip.vector_dynamic_power),
        "local_memory": float(np.sum(local) * chip.local_memory_dynamic_power),
        "global_memory": float(np.sum(global_time[moved]) * chip.global_memory_dynamic_power),
        "noc": noc_bytes * chip.noc_energy_per_byte_hop,
    }
    return CoreCosts(latency, sync, peer[sync], sends, float(np.sum(global_time[moved])), energy)


def repeated(costs: CoreCosts, rounds: int) -> CoreCosts:
    """A core's costs when it runs its program `rounds` times in a row (images streamed through)."""
    n = len(costs.latency)
    sync = (costs.sync[None, :] + n * np.arange(rounds)[:, None]).reshape(-1)
    return CoreCosts(
        np.tile(costs.latency, rounds),
        sync,
        np.tile(costs.peer, rounds),
        np.tile(costs.is_send, rounds),
        costs.global_busy * rounds,
        costs.energy,
    )


def element_widths(stream: pim.InstructionStream) -> tuple[np.ndarray, np.ndarray]:
    """The input and output bytes per element (`setbw`'s widths in force) of every instruction."""
    op = stream.opcodes
    setbw = np.flatnonzero(op == pim.SetbwOp.OPCODE)
    widths = np.full((len(setbw) + 1, 2), 4, np.int64)  # 32 bits before any setbw
    widths[1:] = stream.fields[setbw, :2] // 8
    in_force = np.searchsorted(setbw, np.arange(len(op)), side="right")
    return widths[in_force, 0], widths[in_force, 1]


def slices(chip: ChipConfig, group) -> int:
    """The crossbars an array group's weights take: its crossbars side by side, each ⌈w ÷
    cell_precision⌉ with its own precision (else one)."""
    return group.crossbars * (1 if group.precision is None else -(-group.precision[0] // chip.cell_precision))


def mvmul_bits(
    program: CoreProgram, chip: ChipConfig, groups: np.ndarray, setbw_bits: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per `mvmul` of the core (on array groups `groups`): its input bits, those of its group's
    layer's own precision or else the `setbw` width in force (`setbw_bits`), the crossbars its
    group reads (`slices`) and those side by side whose outputs it writes."""
    own = np.array([0 if g.precision is None else g.precision[1] for g in program.groups] or [0], np.int64)
    crossbars = np.array([slices(chip, g) for g in program.groups] or [1], np.int64)
    wide = np.array([g.crossbars for g in program.groups] or [1], np.int64)
    if not len(program.groups):
        groups = np.zeros(len(groups), np.int64)
    bits = own[groups]
    return np.where(bits > 0, bits, setbw_bits), crossbars[groups], wide[groups]


@dataclass
class Pairings:
    """Each core's send/recv points in a `rendezvous`: when the core reached each, and the core
    (index) and point it paired with."""

    arrive: list[np.ndarray]
    partner: list[np.ndarray]


def rendezvous(costs: list[CoreCosts], ids: list[int], rounds: int = 1, pairings: Pairings | None = None) -> np.ndarray:
    """When each core ends each of `rounds` runs of its program (`[core, round]`), every core
    starting its next run as soon as it ends one (pimsim-nn's throughput mode), pairing blocking
    sends and receives in order (recorded in `pairings` when given)."""
    lengths = [len(c.latency) for c in costs]
    costs = [repeated(c, rounds) for c in costs] if rounds > 1 else costs
    index = {core: i for i, core in enumerate(ids)}
    ends = [np.concatenate([[0.0], np.cumsum(c.latency)]) for c in costs]
    position = [0] * len(costs)  # the next synchronisation point of each core
    clock = [0.0] * len(costs)  # when each core finished its last synchronisation point
    done = [[0.0] * len(c.sync) for c in costs]  # when each synchronisation point ended
    # per synchronisation point, as Python lists (the loop below reads them one at a time): its
    # peer, whether it sends, its own latency, and the time of the program at it and after the last
    peers = [c.peer.tolist() for c in costs]
    sends = [c.is_send.tolist() for c in costs]
    own = [c.latency[c.sync].tolist() for c in costs]
    at = [e[c.sync].tolist() for c, e in zip(costs, ends, strict=True)]
    after = [
        e[np.concatenate([[0], c.sync[:-1] + 1]).astype(np.int64)].tolist() for c, e in zip(costs, ends, strict=True)
    ]

    def arrival(i: int) -> float:
        k = position[i]
        return clock[i] + at[i][k] - after[i][k]

    pending = deque(range(len(costs)))
    while pending:
        a = pending.popleft()
        if position[a] >= len(peers[a]):
            continue
        k = position[a]
        b = index.get(peers[a][k])
        if b is None or position[b] >= len(peers[b]):
            continue
        kb = position[b]
        if peers[b][kb] != ids[a] or sends[b][kb] == sends[a][k]:
            continue
        transfer = max(own[a][k], own[b][kb])
        if pairings is not None:
            pairings.arrive[a][k], pairings.arrive[b][kb] = arrival(a), arrival(b)
            pairings.partner[a][k], pairings.partner[b][kb] = (b, kb), (a, k)
        clock[a] = clock[b] = done[a][k] = done[b][kb] = max(arrival(a), arrival(b)) + transfer
        position[a] += 1
        position[b] += 1
        pending.extend((a, b))
    stuck = [ids[i] for i in range(len(costs)) if position[i] < len(costs[i].sync)]
    if stuck:
        raise PerformanceError(
            f"cores {', '.join(map(str, stuck))} wait at a send/recv no core matches (the program deadlocks)"
        )
    result = np.zeros((len(costs), rounds))
    for i, c in enumerate(costs):
        boundaries = lengths[i] * np.arange(1, rounds + 1)  # the instruction each round ends before
        result[i] = ends[i][boundaries]
        if len(c.sync):
            last = np.searchsorted(c.sync, boundaries) - 1  # its last synchronisation point (-1: none yet)
            point = np.maximum(last, 0)
            result[i] += np.where(last >= 0, np.asarray(done[i])[point] - ends[i][c.sync[point] + 1], 0.0)
    return result


STREAMED = 4
"""Images the throughput estimate streams through the cores."""


def critical_path(artifacts: Artifacts, chip: ChipConfig) -> list[tuple[int, float, float]]:
    """What the latency of one image waits on, as `(core id, start ns, end ns)` spans in time
    order, from 0 to the latency: from the core that ends last back through every send/recv where
    it waited for its peer, to that peer from when it arrived (the transfer counts to the core
    that waited)."""
    ids = [core.core_id for core in artifacts.cores]
    costs = [core_costs(core, chip) for core in artifacts.cores]
    if not costs:
        return []
    pairings = Pairings([np.zeros(len(c.sync)) for c in costs], [np.zeros((len(c.sync), 2), int) for c in costs])
    ends = rendezvous(costs, ids, pairings=pairings)[:, 0]
    core = int(np.argmax(ends))
    point, end = len(costs[core].sync) - 1, float(ends[core])
    spans = []
    while point >= 0:
        peer, peer_point = pairings.partner[core][point]
        arrived = float(pairings.arrive[peer][peer_point])
        if arrived > pairings.arrive[core][point]:  # it waited for the peer
            spans.append((ids[core], arrived, end))
            core, point, end = int(peer), int(peer_point), arrived
        point -= 1
    spans.append((ids[core], 0.0, end))
    return spans[::-1]


def estimate(artifacts: Artifacts, chip: ChipConfig, images: int = STREAMED) -> PerformanceEstimate:
    """The time and energy of one image, and the throughput of `images` streamed images, of
    `artifacts` on `chip`'s cores (as many as the program uses, even beyond `core_cnt`)."""
    ids = [core.core_id for core in artifacts.cores]
    costs = [core_costs(core, chip) for core in artifacts.cores]
    ends = [float(end) for end in rendezvous(costs, ids)[:, 0]] if costs else []
    busy = [float(np.sum(c.latency)) for c in costs]
    memory_busy = sum(c.global_busy for c in costs)
    latency = max(ends, default=0.0)
    slowest = int(np.argmax(busy)) if busy else 0
    bound = max(max(busy, default=0.0), memory_busy)
    period = bound
    if costs and images > 1:  # an image leaves when every core has ended its round
        leaves = rendezvous(costs, ids, images).max(axis=0)
        period = max(float(leaves[-1] - leaves[0]) / (images - 1), bound)
    bottleneck = "global memory" if busy and memory_busy > busy[slowest] else f"core {ids[slowest] if ids else 0}"
    energy = {k: sum(c.energy[k] for c in costs) for k in COMPONENTS[:-1]}
    crossbars = sum(slices(chip, group) for core in artifacts.cores for group in core.groups)
    energy["static"] = crossbars * chip.adc_count * chip.adc_static_power * latency
    energy["total"] = sum(energy.values())
    return PerformanceEstimate(
        chip.name,
        latency,
        1e9 / period if period > 0 else 0.0,
        bottleneck,
        busy,
        ends,
        memory_busy,
        energy,
        1e9 / bound if bound > 0 else 0.0,
    )
