"""The pimsim-nn instruction set executed in NumPy: a chip of cores sharing a global memory.

Each core has 32 registers, a program counter and a local memory (bytes, grown on demand); all
cores share the global memory. Cores are stepped round-robin, one instruction per core per step.
`send`/`recv` are blocking rendezvous: a transfer happens when a core stands at `send` to core B
while B stands at `recv` from it; until then the core waits at the instruction. So the k-th send
from A to B is received by the k-th recv of B from A, and a size mismatch is an error naming both
instructions. A step in which no core can move while some have not finished is a deadlock (or an
unmatched send/recv when the awaited core has finished), reported with the cores and instruction
indices involved.

Semantics: registers hold byte addresses; `ld`/`st` take the global address from an even register
pair (`R[r] << 32 | R[r+1]`) and move `size` bytes; `offset_select` bits (0 rd, 1 rs1, 2 rs2) add
`offset_value` (elements for vector ops, bytes otherwise) to an address. Vector ops, `lldi` and
`lmv` work on `len` elements of `obiw` bits; `mvmul` reads `rows` elements of `ibiw` bits of its
array group's `rows × cols` matrix and writes `cols` elements of `obiw` bits, `x · W`, exactly
(int64, wrapped to the element width), with optional ReLU. `vavg` is the floor of the mean of `len`
elements taken every `R[rs2]` elements; `vmv` gathers with stride `R[rs2]`. `wait`/`sync` use
per-core event registers. `vrsu`/`vrsl` have no defined semantics here.

The interpreter runs instruction-level `pim.core`s on this machine, and the artifact validator
(`cimxdsl.backend.validator`) runs artifact directories on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from cimxdsl.dialects.pim import InstructionOp


def core_file(core: int) -> str:
    """The name of core `core`'s instruction stream (its file in an artifact directory)."""
    return f"core_{core}.json"


@dataclass
class ArrayGroup:
    """An array group of a core: one crossbar holding `weights` (`rows × cols`, `x · weights`)."""

    weights: np.ndarray
    origin: str = ""


@dataclass
class CoreProgram:
    """A core's instruction stream and the array groups its `mvmul`s use."""

    core_id: int
    instructions: Sequence[InstructionOp]
    groups: list[ArrayGroup] = field(default_factory=list)
    local_bytes: int = 0
    """Local memory the compiler allocated (0 when unknown, e.g. read back from a directory)."""


MAX_LOCAL_BYTES = 1 << 28


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
    instructions: list[dict] = field(default_factory=list)
    """The program's instructions with flat fields (offsets lifted)."""
    registers: list[int] = field(default_factory=lambda: [0] * 32)
    local: np.ndarray = field(default_factory=lambda: np.zeros(1 << 12, np.uint8))
    pc: int = 0
    ibiw: int = 32
    obiw: int = 32
    events: dict[int, int] = field(default_factory=dict)
    executed: int = 0

    @property
    def core_id(self) -> int:
        return self.program.core_id

    def __post_init__(self):
        self.instructions = [{"op": op.mnemonic(), **op.fields()} for op in self.program.instructions]

    @property
    def done(self) -> bool:
        return self.pc >= len(self.instructions)

    @property
    def current(self) -> dict:
        return self.instructions[self.pc]

    def where(self, pc: int | None = None) -> str:
        pc = self.pc if pc is None else pc
        return f"{core_file(self.core_id)}: instruction {pc} ({self.instructions[pc]['op']})"

    def ensure(self, end: int) -> None:
        if end > len(self.local):
            if end > MAX_LOCAL_BYTES:
                raise ExecutionError(f"{self.where()}: local address {end} beyond {MAX_LOCAL_BYTES} bytes")
            grown = np.zeros(max(end, 2 * len(self.local)), np.uint8)
            grown[: len(self.local)] = self.local
            self.local = grown

    def read(self, address: int, count: int, bits: int) -> np.ndarray:
        size = count * bits // 8
        if address < 0:
            raise ExecutionError(f"{self.where()}: negative local address {address}")
        self.ensure(address + size)
        return self.local[address : address + size].view(f"<i{bits // 8}").astype(np.int64)

    def write(self, address: int, values: np.ndarray, bits: int) -> None:
        data = np.ascontiguousarray(np.asarray(values, np.int64).astype(f"<i{bits // 8}")).view(np.uint8)
        if address < 0:
            raise ExecutionError(f"{self.where()}: negative local address {address}")
        self.ensure(address + len(data))
        self.local[address : address + len(data)] = data


def to_int32(value: int) -> int:
    return (value + (1 << 31)) % (1 << 32) - (1 << 31)


class Machine:
    """A chip of cores and a global memory, executing instruction streams."""

    def __init__(self, cores: Sequence[CoreProgram], global_memory: np.ndarray):
        self.cores = [Core(p) for p in sorted(cores, key=lambda p: p.core_id)]
        self.by_id = {c.core_id: c for c in self.cores}
        self.memory = global_memory
        self.steps = 0
        self.stepped: set[int] = set()

    # --- addressing ------------------------------------------------------------------------------
    @staticmethod
    def address(core: Core, ins: dict, field_name: str, bit: int, scale: int) -> int:
        offset = ins.get("offset_value", 0) * scale if ins.get("offset_select", 0) & bit else 0
        return core.registers[ins[field_name]] + offset

    def global_range(self, core: Core, ins: dict, register: int, size: int) -> slice:
        address = (core.registers[register] << 32) | (core.registers[register + 1] & 0xFFFFFFFF)
        if address < 0 or address + size > len(self.memory):
            raise ExecutionError(
                f"{core.where()}: global bytes [{address}, {address + size}) outside the "
                f"{len(self.memory)}-byte global memory"
            )
        return slice(address, address + size)

    # --- running ---------------------------------------------------------------------------------
    def run(self) -> None:
        """Round-robin until every core has finished (Algorithm 5.1)."""
        active = [c for c in self.cores if not c.done]
        while active:
            moved = False
            self.stepped: set[int] = set()
            for core in active:
                if core.done or core.core_id in self.stepped:
                    continue  # a transfer already ran this core's instruction of the step
                if self.step(core):
                    moved = True
                    self.stepped.add(core.core_id)
            self.steps += 1
            active = [c for c in active if not c.done]
            if active and not moved:
                raise ExecutionError(self.stall_report(active))

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

    def step(self, core: Core) -> bool:
        """Execute the core's current instruction; False if it has to wait."""
        ins = core.current
        name = ins["op"]
        if name in ("send", "recv"):
            return self.transfer(core, ins)
        if name == "wait":
            register = ins["event_register"]
            if core.events.get(register, 0) != ins["wait_value"]:
                return False
            core.events[register] = 0
        else:
            getattr(self, f"op_{name}")(core, ins)
        core.pc += 1
        core.executed += 1
        return True

    def transfer(self, core: Core, ins: dict) -> bool:
        peer = self.by_id[ins["core"]]
        if peer.done or peer.core_id in self.stepped:
            return False  # the peer finished, or already ran its instruction of this step
        other = peer.current
        wanted = "recv" if ins["op"] == "send" else "send"
        if other["op"] != wanted or other["core"] != core.core_id:
            return False
        sender, receiver = (core, peer) if ins["op"] == "send" else (peer, core)
        send, recv = (ins, other) if ins["op"] == "send" else (other, ins)
        if send["size"] != recv["size"]:
            raise ExecutionError(
                f"send/recv size mismatch: {sender.where()} sends {send['size']} bytes to core {receiver.core_id}, "
                f"{receiver.where()} receives {recv['size']} bytes"
            )
        source = self.address(sender, send, "rd", 1, 1)
        target = self.address(receiver, recv, "rd", 1, 1)
        sender.ensure(source + send["size"])
        receiver.ensure(target + send["size"])
        receiver.local[target : target + send["size"]] = sender.local[source : source + send["size"]]
        for c in (sender, receiver):
            c.pc += 1
            c.executed += 1
        self.stepped.update((sender.core_id, receiver.core_id))
        return True

    # --- scalar and control --------------------------------------------------------------------
    def op_nop(self, core: Core, ins: dict) -> None:
        pass

    def op_sldi(self, core: Core, ins: dict) -> None:
        core.registers[ins["rd"]] = ins["imm"]

    def op_sld(self, core: Core, ins: dict) -> None:
        start = core.registers[ins["rs1"]] + ins["offset_value"]
        if start < 0 or start + 4 > len(self.memory):
            raise ExecutionError(f"{core.where()}: global address {start} outside the global memory")
        core.registers[ins["rd"]] = int(self.memory[start : start + 4].view("<i4")[0])

    def op_sadd(self, core: Core, ins: dict) -> None:
        r = core.registers
        r[ins["rd"]] = to_int32(r[ins["rs1"]] + r[ins["rs2"]])

    def op_ssub(self, core: Core, ins: dict) -> None:
        r = core.registers
        r[ins["rd"]] = to_int32(r[ins["rs1"]] - r[ins["rs2"]])

    def op_smul(self, core: Core, ins: dict) -> None:
        r = core.registers
        r[ins["rd"]] = to_int32(r[ins["rs1"]] * r[ins["rs2"]])

    def op_saddi(self, core: Core, ins: dict) -> None:
        core.registers[ins["rd"]] = to_int32(core.registers[ins["rs1"]] + ins["imm"])

    def op_smuli(self, core: Core, ins: dict) -> None:
        core.registers[ins["rd"]] = to_int32(core.registers[ins["rs1"]] * ins["imm"])

    def op_setbw(self, core: Core, ins: dict) -> None:
        core.ibiw, core.obiw = ins["ibiw"], ins["obiw"]

    def op_sync(self, core: Core, ins: dict) -> None:
        target = self.by_id[ins["core"]]
        target.events[ins["event_register"]] = target.events.get(ins["event_register"], 0) + 1

    # --- matrix --------------------------------------------------------------------------------
    def op_mvmul(self, core: Core, ins: dict) -> None:
        weights = core.program.groups[ins["group"]].weights
        rows = weights.shape[0]
        x = core.read(self.address(core, ins, "rs1", 2, 1), rows, core.ibiw)
        y = x @ weights
        if ins["relu"]:
            y = np.maximum(y, 0)
        core.write(self.address(core, ins, "rd", 1, 1), y, core.obiw)

    # --- vector --------------------------------------------------------------------------------
    def vector_operands(self, core: Core, ins: dict, count: int) -> list[np.ndarray]:
        scale = core.obiw // 8
        fields = (("rs1", 2), ("rs2", 4))[:count]
        return [core.read(self.address(core, ins, f, bit, scale), ins["len"], core.obiw) for f, bit in fields]

    def vector_result(self, core: Core, ins: dict, values: np.ndarray) -> None:
        core.write(self.address(core, ins, "rd", 1, core.obiw // 8), values, core.obiw)

    def binary(self, core: Core, ins: dict, function) -> None:
        a, b = self.vector_operands(core, ins, 2)
        self.vector_result(core, ins, function(a, b))

    def op_vvadd(self, core: Core, ins: dict) -> None:
        self.binary(core, ins, np.add)

    def op_vvsub(self, core: Core, ins: dict) -> None:
        self.binary(core, ins, np.subtract)

    def op_vvmul(self, core: Core, ins: dict) -> None:
        self.binary(core, ins, np.multiply)

    def op_vvmax(self, core: Core, ins: dict) -> None:
        self.binary(core, ins, np.maximum)

    def op_vvsll(self, core: Core, ins: dict) -> None:
        self.binary(core, ins, lambda a, b: np.left_shift(a, b & 63))

    def op_vvsra(self, core: Core, ins: dict) -> None:
        self.binary(core, ins, lambda a, b: np.right_shift(a, np.clip(b, 0, 63)))

    def op_vvdmul(self, core: Core, ins: dict) -> None:
        a, b = self.vector_operands(core, ins, 2)
        self.vector_result(core, ins, np.array([np.dot(a, b)]))

    def strided(self, core: Core, ins: dict) -> np.ndarray:
        bytes_per = core.obiw // 8
        start = self.address(core, ins, "rs1", 2, bytes_per)
        stride = core.registers[ins["rs2"]]
        count = ins["len"]
        if count == 0:
            return np.zeros(0, np.int64)
        core.ensure(start + ((count - 1) * stride + 1) * bytes_per)
        span = core.read(start, (count - 1) * stride + 1, core.obiw)
        return span[::stride] if stride > 0 else span[:1].repeat(count)

    def op_vavg(self, core: Core, ins: dict) -> None:
        values = self.strided(core, ins)
        if values.size == 0:
            raise ExecutionError(f"{core.where()}: average of 0 elements")
        self.vector_result(core, ins, np.array([values.sum() // values.size]))

    def op_vmv(self, core: Core, ins: dict) -> None:
        self.vector_result(core, ins, self.strided(core, ins))

    def op_vrelu(self, core: Core, ins: dict) -> None:
        (a,) = self.vector_operands(core, ins, 1)
        self.vector_result(core, ins, np.maximum(a, 0))

    def op_vtanh(self, core: Core, ins: dict) -> None:
        (a,) = self.vector_operands(core, ins, 1)
        self.vector_result(core, ins, np.tanh(a.astype(np.float64)).astype(np.int64))

    def op_vsigm(self, core: Core, ins: dict) -> None:
        (a,) = self.vector_operands(core, ins, 1)
        self.vector_result(core, ins, (1 / (1 + np.exp(-a.astype(np.float64)))).astype(np.int64))

    def unsupported(self, core: Core, ins: dict) -> None:
        raise ExecutionError(f"{core.where()}: the validator has no semantics for '{ins['op']}'")

    op_vrsu = op_vrsl = unsupported

    # --- transfers -----------------------------------------------------------------------------
    def op_ld(self, core: Core, ins: dict) -> None:
        source = self.global_range(core, ins, ins["rs1"], ins["size"])
        target = self.address(core, ins, "rd", 1, 1)
        core.ensure(target + ins["size"])
        core.local[target : target + ins["size"]] = self.memory[source]

    def op_st(self, core: Core, ins: dict) -> None:
        target = self.global_range(core, ins, ins["rd"], ins["size"])
        source = self.address(core, ins, "rs1", 2, 1)
        core.ensure(source + ins["size"])
        self.memory[target] = core.local[source : source + ins["size"]]

    def op_lldi(self, core: Core, ins: dict) -> None:
        core.write(self.address(core, ins, "rd", 1, 1), np.full(ins["len"], ins["imm"]), core.obiw)

    def op_lmv(self, core: Core, ins: dict) -> None:
        if ins["size"] != ins["len"] * core.obiw // 8:
            raise ExecutionError(
                f"{core.where()}: size {ins['size']} bytes differs from len {ins['len']} elements of {core.obiw} bits"
            )
        values = core.read(self.address(core, ins, "rs1", 2, 1), ins["len"], core.obiw)
        core.write(self.address(core, ins, "rd", 1, 1), values, core.obiw)
