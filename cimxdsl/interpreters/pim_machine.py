"""The pimsim-nn instruction set executed in NumPy: a chip of cores sharing a global memory.

Each core has 32 registers, a program counter and a local memory (bytes, grown on demand); all
cores share the global memory. Cores are stepped round-robin, one instruction per core per step.
`send`/`recv` are blocking rendezvous: a transfer happens when a core stands at `send` to core B
while B stands at `recv` from it; until then the core waits at the instruction. So the k-th send
from A to B is received by the k-th recv of B from A, and a size mismatch is an error naming both
instructions. A step in which no core can move while some have not finished is a deadlock (or an
unmatched send/recv when the awaited core has finished), reported with the cores and instruction
indices involved.

The round-robin order is simulated, not stepped: only instructions that touch another core or the
global memory (`ld`, `st`, `sld`, `send`, `recv`, `sync`, `wait`) see the other cores, so each core
runs its other instructions ahead, counting steps on its own clock, and stops at the next such
instruction, which then executes in the order of (step, core id) that round-robin stepping gives
it (a transfer at the later of its two cores' steps). Errors surface in that order too.

Semantics: registers hold byte addresses; `ld`/`st` take the global address from an even register
pair (`R[r] << 32 | R[r+1]`) and move `size` bytes; `offset_select` bits (0 rd, 1 rs1, 2 rs2) add
`offset_value` (elements for vector ops, bytes otherwise) to an address. Vector ops, `lldi` and
`lmv` work on `len` elements of the input width `ibiw` (`setbw`'s, set anywhere in the stream for
the instructions after it), and so do vector results but those of `vvmul`, `vvsll`, `vvsra`, `vtanh`
and `vsigm`, which have `obiw` bits (as pimsim-nn sizes their memory accesses: a shift under `setbw
32, 8` narrows 32-bit values to 8 bits, wrapping); `mvmul` reads `rows` elements of `ibiw` bits of
its array group's `rows × cols` matrix and writes `cols` elements of `obiw` bits, `x · W`, exactly
(int64, wrapped to the element width), with optional ReLU. `vavg` is the floor of the mean of `len`
elements taken every `R[rs2]` elements; `vmv` gathers with stride `R[rs2]`. `wait`/`sync` use
per-core event registers as pimsim-nn's transfer unit does: `sync` adds 1 to the peer's register,
`wait` blocks while its register holds less than `wait_value`, then takes `wait_value` from it
(a counting semaphore: events that come early are kept). `vrsu`/`vrsl` have no defined semantics here.

The interpreter runs instruction-level `pim.core`s on this machine, and the artifact validator
(`cimxdsl.backend.validator`) runs artifact directories on it.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from cimxdsl.dialects import pim
from cimxdsl.dialects.pim import InstructionOp, InstructionStream


def core_file(core: int) -> str:
    """The name of core `core`'s instruction stream (its file in an artifact directory)."""
    return f"core_{core}.json"


@dataclass
class ArrayGroup:
    """An array group of a core: `crossbars` crossbars side by side holding `weights` (`rows ×
    cols`, `x · weights`), read together by one `mvmul`."""

    weights: np.ndarray
    origin: str = ""
    precision: tuple[int, int] | None = None
    """Its layer's own (weight bits, input bits), if any: what the performance model times its
    `mvmul`s with (weight slices and input passes)."""
    crossbars: int = 1


@dataclass
class CoreProgram:
    """A core's instruction stream and the array groups its `mvmul`s use."""

    core_id: int
    instructions: Sequence[InstructionOp]
    groups: list[ArrayGroup] = field(default_factory=list)
    local_bytes: int = 0
    """Local memory the compiler allocated (0 when unknown, e.g. read back from a directory)."""


MAX_LOCAL_BYTES = 1 << 31
"""What a (signed 32-bit) register addresses: VGG-19's first core at 224×224 uses 434 MB."""


class ExecutionError(ValueError):
    """The program misbehaved: bad address, deadlock, unmatched transfer, ... (one line)."""


def describe(instruction: dict) -> str:
    name = instruction["op"]
    if name in ("send", "recv"):
        direction = "to" if name == "send" else "from"
        return f"{name} {direction} core {instruction['core']}, {instruction['size']} bytes"
    return name


@dataclass
class Core:
    program: CoreProgram
    stream: InstructionStream = field(init=False)
    registers: list[int] = field(default_factory=lambda: [0] * 32)
    local: np.ndarray = field(default_factory=lambda: np.zeros(1 << 12, np.uint8))
    pc: int = 0
    ibiw: int = 32
    obiw: int = 32
    events: dict[int, int] = field(default_factory=dict)
    executed: int = 0
    clock: int = 0
    """The round-robin step at which the core executes its current instruction."""
    parked: bool = False
    """Waiting at a transfer or `wait` for another core."""
    error: ExecutionError | None = None
    """An error of the current instruction, raised when its step comes."""
    codes: list[int] = field(init=False)
    chunk: tuple[int, list[list[int]]] = (0, [])
    """Fields of instructions `chunk[0]`, ... as Python lists (converted in chunks, on demand)."""

    @property
    def core_id(self) -> int:
        return self.program.core_id

    def __post_init__(self):
        self.stream = InstructionStream.from_ops(self.program.instructions)
        self.codes = self.stream.opcodes.tolist()

    @property
    def done(self) -> bool:
        return self.pc >= len(self.codes)

    def fields_at(self, pc: int) -> list[int]:
        base, rows = self.chunk
        if not 0 <= pc - base < len(rows):
            base, rows = self.chunk = (pc, self.stream.fields[pc : pc + CHUNK].tolist())
        return rows[pc - base]

    @property
    def current(self) -> dict:
        """The current instruction's op name and fields."""
        cls = pim.BY_OPCODE[self.codes[self.pc]]
        return {"op": cls.mnemonic(), **dict(zip(cls.FIELDS, self.fields_at(self.pc)))}

    def where(self, pc: int | None = None) -> str:
        pc = self.pc if pc is None else pc
        return f"{core_file(self.core_id)}: instruction {pc} ({pim.BY_OPCODE[self.codes[pc]].mnemonic()})"

    def ensure(self, end: int) -> None:
        if end > len(self.local):
            if end > MAX_LOCAL_BYTES:
                raise ExecutionError(f"{self.where()}: local address {end} beyond {MAX_LOCAL_BYTES} bytes")
            grown = np.zeros(max(end, 2 * len(self.local)), np.uint8)
            grown[: len(self.local)] = self.local
            self.local = grown

    def view(self, address: int, count: int, bits: int) -> np.ndarray:
        """`count` elements of `bits` bits at local byte `address`, in place."""
        if address < 0:
            raise ExecutionError(f"{self.where()}: negative local address {address}")
        end = address + count * bits // 8
        if end > len(self.local):
            self.ensure(end)
        return self.local[address:end].view(DTYPES[bits])

    def read(self, address: int, count: int, bits: int) -> np.ndarray:
        return self.view(address, count, bits).astype(np.int64)

    def write(self, address: int, values: np.ndarray, bits: int) -> None:
        values = np.asarray(values)
        self.view(address, len(values), bits)[:] = values.astype(DTYPES[bits], copy=False)


CHUNK = 4096
DTYPES = {bits: np.dtype(f"<i{bits // 8}") for bits in (8, 16, 32, 64)}
EXACT_IN_FLOAT = 1 << 53


def to_int32(value: int) -> int:
    return (value + (1 << 31)) % (1 << 32) - (1 << 31)


def address(core: Core, register: int, select: int, bit: int, offset: int) -> int:
    """`R[register]`, plus `offset` when `select` has `bit`."""
    return core.registers[register] + (offset if select & bit else 0)


class Machine:
    """A chip of cores and a global memory, executing instruction streams."""

    def __init__(self, cores: Sequence[CoreProgram], global_memory: np.ndarray):
        self.cores = [Core(p) for p in sorted(cores, key=lambda p: p.core_id)]
        self.by_id = {c.core_id: c for c in self.cores}
        self.memory = global_memory
        self.steps = 0
        self.ready: list[tuple[int, int]] = []
        """(step, core id) of the cores standing at an instruction that sees other cores."""
        self.matrices: dict[tuple[int, int], tuple[np.ndarray, int]] = {}
        names = {cls.OPCODE: cls.mnemonic() for cls in pim.INSTRUCTION_CLASSES}
        self.local_ops: list[Callable | None] = [None] * (max(names) + 1)
        self.shared_ops: list[Callable | None] = [None] * (max(names) + 1)
        for code, name in names.items():
            table = self.shared_ops if name in SHARED else self.local_ops
            table[code] = getattr(self, f"op_{name}")

    # --- running ---------------------------------------------------------------------------------
    def run(self) -> None:
        """Execute every core to its end, in the order round-robin stepping gives (Algorithm 5.1)."""
        for core in self.cores:
            self.run_ahead(core)
        while self.ready:
            _, core_id = heapq.heappop(self.ready)
            core = self.by_id[core_id]
            if core.error is not None:
                raise core.error
            shared = self.shared_ops[core.codes[core.pc]]
            assert shared is not None
            shared(core, core.fields_at(core.pc))
        waiting = [c for c in self.cores if not c.done]
        if waiting:
            raise ExecutionError(self.stall_report(waiting))
        self.steps = max((c.clock for c in self.cores), default=0)

    def run_ahead(self, core: Core) -> None:
        """Run the core's instructions that see only the core, up to the next one that sees other
        cores (queued at its step) or the end."""
        codes, local_ops = core.codes, self.local_ops
        start = pc = core.pc
        try:
            while pc < len(codes) and (function := local_ops[codes[pc]]) is not None:
                core.pc = pc
                function(core, core.fields_at(pc))
                pc += 1
        except ExecutionError as e:
            core.error = e
        core.pc = pc
        core.executed += pc - start
        core.clock += pc - start
        if pc < len(codes):
            heapq.heappush(self.ready, (core.clock, core.core_id))

    def retire(self, *cores: Core) -> None:
        """The cores' current shared instructions executed (at the first one's step)."""
        step = cores[0].clock
        for core in cores:
            core.pc += 1
            core.executed += 1
            core.clock = step + 1
            core.parked = False
            self.run_ahead(core)

    def stall_report(self, waiting: list[Core]) -> str:
        for core in waiting:
            ins = core.current
            if ins["op"] in ("send", "recv") and self.by_id[ins["core"]].done:
                verb = "sends" if ins["op"] == "send" else "receives"
                prep = "to" if ins["op"] == "send" else "from"
                return (
                    f"unmatched {ins['op']}: {core.where()} {verb} {ins['size']} bytes {prep} core {ins['core']}, "
                    f"which finished without a matching {'recv' if ins['op'] == 'send' else 'send'}"
                )
        parts = [f"core {c.core_id} at instruction {c.pc} ({describe(c.current)})" for c in waiting]
        finished = [str(c.core_id) for c in self.cores if c.done]
        tail = f"; finished: cores {', '.join(finished)}" if finished else ""
        return "deadlock: " + "; ".join(parts) + tail

    # --- instructions that see other cores ------------------------------------------------------
    def global_range(self, core: Core, register: int, size: int) -> slice:
        address = (core.registers[register] << 32) | (core.registers[register + 1] & 0xFFFFFFFF)
        if address < 0 or address + size > len(self.memory):
            raise ExecutionError(
                f"{core.where()}: global bytes [{address}, {address + size}) outside the "
                f"{len(self.memory)}-byte global memory"
            )
        return slice(address, address + size)

    def op_ld(self, core: Core, f: list[int]) -> None:
        rd, rs1, size, select, offset = f[:5]
        source = self.global_range(core, rs1, size)
        target = address(core, rd, select, 1, offset)
        core.ensure(target + size)
        core.local[target : target + size] = self.memory[source]
        self.retire(core)

    def op_st(self, core: Core, f: list[int]) -> None:
        rd, rs1, size, select, offset = f[:5]
        target = self.global_range(core, rd, size)
        source = address(core, rs1, select, 2, offset)
        core.ensure(source + size)
        self.memory[target] = core.local[source : source + size]
        self.retire(core)

    def op_sld(self, core: Core, f: list[int]) -> None:
        rd, rs1, offset = f[:3]
        start = core.registers[rs1] + offset
        if start < 0 or start + 4 > len(self.memory):
            raise ExecutionError(f"{core.where()}: global address {start} outside the global memory")
        core.registers[rd] = int(self.memory[start : start + 4].view("<i4")[0])
        self.retire(core)

    def op_sync(self, core: Core, f: list[int]) -> None:
        register, peer = f[:2]
        target = self.by_id[peer]
        target.events[register] = target.events.get(register, 0) + 1
        if target.parked:  # it sees the event in this step if stepped after this core, else in the next
            target.parked = False
            step = core.clock + (target.core_id <= core.core_id)
            heapq.heappush(self.ready, (max(target.clock, step), target.core_id))
            target.clock = max(target.clock, step)
        self.retire(core)

    def op_wait(self, core: Core, f: list[int]) -> None:
        register, value = f[:2]
        held = core.events.get(register, 0)
        if held < value:
            core.parked = True
            return
        core.events[register] = held - value
        self.retire(core)

    def op_send(self, core: Core, f: list[int]) -> None:
        self.transfer(core, "send", f[2])

    def op_recv(self, core: Core, f: list[int]) -> None:
        self.transfer(core, "recv", f[1])

    def transfer(self, core: Core, name: str, peer_id: int) -> None:
        """Rendezvous with the peer: it stands at the matching instruction (parked there at an
        earlier or the same step) or this core parks until the peer gets there."""
        peer = self.by_id[peer_id]
        other = peer.current if peer.parked else None
        if other is None or other["op"] != ("recv" if name == "send" else "send") or other["core"] != core.core_id:
            core.parked = True
            return
        ins = core.current
        sender, receiver = (core, peer) if name == "send" else (peer, core)
        send, recv = (ins, other) if name == "send" else (other, ins)
        if send["size"] != recv["size"]:
            raise ExecutionError(
                f"send/recv size mismatch: {sender.where()} sends {send['size']} bytes to core {receiver.core_id}, "
                f"{receiver.where()} receives {recv['size']} bytes"
            )
        size = send["size"]
        source = address(sender, send["rd"], send["offset_select"], 1, send["offset_value"])
        target = address(receiver, recv["rd"], recv["offset_select"], 1, recv["offset_value"])
        sender.ensure(source + size)
        receiver.ensure(target + size)
        receiver.local[target : target + size] = sender.local[source : source + size]
        self.retire(core, peer)

    # --- scalar and control --------------------------------------------------------------------
    def op_nop(self, core: Core, f: list[int]) -> None:
        pass

    def op_sldi(self, core: Core, f: list[int]) -> None:
        core.registers[f[0]] = f[1]

    def op_sadd(self, core: Core, f: list[int]) -> None:
        r = core.registers
        r[f[0]] = to_int32(r[f[1]] + r[f[2]])

    def op_ssub(self, core: Core, f: list[int]) -> None:
        r = core.registers
        r[f[0]] = to_int32(r[f[1]] - r[f[2]])

    def op_smul(self, core: Core, f: list[int]) -> None:
        r = core.registers
        r[f[0]] = to_int32(r[f[1]] * r[f[2]])

    def op_saddi(self, core: Core, f: list[int]) -> None:
        core.registers[f[0]] = to_int32(core.registers[f[1]] + f[2])

    def op_smuli(self, core: Core, f: list[int]) -> None:
        core.registers[f[0]] = to_int32(core.registers[f[1]] * f[2])

    def op_setbw(self, core: Core, f: list[int]) -> None:
        core.ibiw, core.obiw = f[0], f[1]

    # --- matrix --------------------------------------------------------------------------------
    def matrix(self, core: Core, group: int) -> tuple[np.ndarray, bool]:
        """The group's weights, as float64 when every product sum of `ibiw`-bit inputs is an
        integer below 2**53 (exact, and BLAS is several times faster), else as int64."""
        key = (core.core_id, group)
        if key not in self.matrices:
            weights = core.program.groups[group].weights
            bound = int(np.abs(weights.astype(np.int64)).sum(axis=0).max(initial=0))
            self.matrices[key] = (weights.astype(np.float64), bound)
        floats, bound = self.matrices[key]
        if bound << (core.ibiw - 1) < EXACT_IN_FLOAT:
            return floats, True
        return core.program.groups[group].weights.astype(np.int64), False

    def op_mvmul(self, core: Core, f: list[int]) -> None:
        rd, rs1, _, relu, group = f[:5]
        weights, exact_in_float = self.matrix(core, group)
        x = core.view(core.registers[rs1], weights.shape[0], core.ibiw)
        y = x @ weights if exact_in_float else x.astype(np.int64) @ weights
        if relu:
            y = np.maximum(y, 0)
        core.write(core.registers[rd], y.astype(np.int64) if exact_in_float else y, core.obiw)

    # --- vector --------------------------------------------------------------------------------
    def vector(
        self, core: Core, f: list[int], function, operands: int, wide: bool = False, output_width: bool = False
    ) -> None:
        """`rd ← function(rs1[, rs2])` on `len` elements of `ibiw` bits, the result of `ibiw` bits
        (`output_width`: of `obiw` bits): in the element type (wrapping, as the wrap of the int64
        result) or, `wide` or when the widths differ, in int64 then wrapped."""
        n, select, offset = f[1 + operands : 4 + operands]
        bits = core.ibiw
        out_bits = core.obiw if output_width else bits
        views = [
            core.view(address(core, f[1 + k], select, 2 << k, offset * bits // 8), n, bits) for k in range(operands)
        ]
        target = address(core, f[0], select, 1, offset * out_bits // 8)
        if wide or out_bits != bits:
            core.write(target, function(*(v.astype(np.int64) for v in views)), out_bits)
        else:
            function(*views, out=core.view(target, n, bits))

    def op_vvadd(self, core: Core, f: list[int]) -> None:
        self.vector(core, f, np.add, 2)

    def op_vvsub(self, core: Core, f: list[int]) -> None:
        self.vector(core, f, np.subtract, 2)

    def op_vvmul(self, core: Core, f: list[int]) -> None:
        self.vector(core, f, np.multiply, 2, output_width=True)

    def op_vvmax(self, core: Core, f: list[int]) -> None:
        self.vector(core, f, np.maximum, 2)

    def op_vvsll(self, core: Core, f: list[int]) -> None:
        self.vector(core, f, lambda a, b: np.left_shift(a, b & 63), 2, wide=True, output_width=True)

    def op_vvsra(self, core: Core, f: list[int]) -> None:
        self.vector(core, f, lambda a, b: np.right_shift(a, np.clip(b, 0, 63)), 2, wide=True, output_width=True)

    def op_vvdmul(self, core: Core, f: list[int]) -> None:
        self.vector(core, f, lambda a, b: np.array([np.dot(a, b)]), 2, wide=True)

    def op_vrelu(self, core: Core, f: list[int]) -> None:
        self.vector(core, f, lambda a, out: np.maximum(a, 0, out=out), 1)

    def op_vtanh(self, core: Core, f: list[int]) -> None:
        self.vector(core, f, lambda a: np.tanh(a.astype(np.float64)).astype(np.int64), 1, wide=True, output_width=True)

    def op_vsigm(self, core: Core, f: list[int]) -> None:
        self.vector(
            core,
            f,
            lambda a: (1 / (1 + np.exp(-a.astype(np.float64)))).astype(np.int64),
            1,
            wide=True,
            output_width=True,
        )

    def strided(self, core: Core, start: int, stride: int, count: int) -> np.ndarray:
        if count == 0:
            return np.zeros(0, np.int64)
        span = core.read(start, (count - 1) * stride + 1, core.ibiw)
        return span[::stride] if stride > 0 else span[:1].repeat(count)

    def op_vavg(self, core: Core, f: list[int]) -> None:
        rd, rs1, rs2, n, select, offset = f[:6]
        scale = core.ibiw // 8
        values = self.strided(core, address(core, rs1, select, 2, offset * scale), core.registers[rs2], n)
        if values.size == 0:
            raise ExecutionError(f"{core.where()}: average of 0 elements")
        core.write(address(core, rd, select, 1, offset * scale), np.array([values.sum() // values.size]), core.ibiw)

    def op_vmv(self, core: Core, f: list[int]) -> None:
        rd, rs1, rs2, n = f[:4]
        core.write(core.registers[rd], self.strided(core, core.registers[rs1], core.registers[rs2], n), core.ibiw)

    def unsupported(self, core: Core, f: list[int]) -> None:
        raise ExecutionError(f"{core.where()}: the validator has no semantics for '{core.current['op']}'")

    op_vrsu = op_vrsl = unsupported

    # --- local transfers ------------------------------------------------------------------------
    def op_lldi(self, core: Core, f: list[int]) -> None:
        rd, imm, n, select, offset = f[:5]
        core.write(address(core, rd, select, 1, offset), np.full(n, imm), core.ibiw)

    def op_lmv(self, core: Core, f: list[int]) -> None:
        rd, rs1, n, size, select, offset = f[:6]
        if size != n * core.ibiw // 8:
            raise ExecutionError(f"{core.where()}: size {size} bytes differs from len {n} elements of {core.ibiw} bits")
        values = core.read(address(core, rs1, select, 2, offset), n, core.ibiw)
        core.write(address(core, rd, select, 1, offset), values, core.ibiw)


SHARED = frozenset({"ld", "st", "sld", "send", "recv", "sync", "wait"})
"""The instructions that see other cores or the global memory."""
