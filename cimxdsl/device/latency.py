"""The latency of each pimsim-nn instruction class on a chip (`cimxdsl.device.chip.ChipConfig`),
in ns, with NumPy: the one set of rules that the performance model (`cimxdsl.backend.performance`,
whole instruction streams) and the PIM mapping's cost (`cimxdsl.transforms.pim.mapping`, computes before
any instruction exists) share."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cimxdsl.device.chip import ChipConfig


def mesh_hops(chip: ChipConfig, a, b) -> np.ndarray:
    """Mesh hops between cores `a` and `b` (arrays work element-wise)."""
    a, b = np.asarray(a), np.asarray(b)
    columns = chip.mesh_columns
    return np.abs(a // columns - b // columns) + np.abs(a % columns - b % columns)


def memory_hops(chip: ChipConfig, core) -> np.ndarray:
    """Hops from a core to the global memory, attached one hop beyond core 0."""
    return mesh_hops(chip, core, 0) + 1


def flit_latency(chip: ChipConfig, hops) -> np.ndarray:
    """The latency in ns of one flit of `bus_width` bytes over `hops` hops (at least one: two
    cores never share a switch); pimsim-nn's network sends a message's flits one after another."""
    return np.maximum(np.asarray(hops), 1) * chip.noc_hop_latency_cycle * chip.period


def mvm_cycles_and_energy(chip: ChipConfig, input_bits: int) -> tuple[int, float]:
    """One crossbar MVM of `input_bits`-bit inputs: pimsim-nn's pipeline of DAC steps and ADC
    passes (cycles), and the energy of its crossbar reads, DACs and ADCs (pJ)."""
    steps = -(-input_bits // chip.dac_resolution) * -(-chip.xbar_rows // chip.dac_count)
    adc_passes = -(-chip.xbar_cols // chip.adc_count)
    front = (
        chip.input_buffer_latency_cycle
        + chip.dac_latency_cycle
        + int(np.ceil(chip.xbar_latency / chip.period))
        + chip.sample_hold_latency_cycle
    )
    after_adc = chip.shift_adder_latency_cycle + chip.output_buffer_latency_cycle
    back = chip.adc_latency_cycle + after_adc + (adc_passes - 1) * max(chip.adc_latency_cycle, after_adc)
    cycles = front + back + (steps - 1) * max(front, back) if chip.pipeline_mode else (front + back) * steps
    step_energy = (
        chip.period * chip.dac_dynamic_power * chip.dac_latency_cycle * chip.dac_count
        + chip.xbar_read_power * chip.xbar_latency
        + adc_passes * chip.period * chip.adc_dynamic_power * chip.adc_latency_cycle * chip.adc_count
    )
    return cycles, steps * step_energy


@dataclass(frozen=True)
class Latencies:
    """The latency in ns of each instruction class on `chip` for data of `ibytes`/`obytes` bytes
    per element (the `setbw` widths): the one set of rules behind `core_costs`, which times whole
    streams with them, and the mapping's cost (`transforms/pim/mapping`), which estimates computes
    with them before any instruction exists. Lengths count elements; arrays work element-wise."""

    chip: ChipConfig
    ibytes: int = 4
    obytes: int = 4

    def access(self, nbytes, width: int, cycles: int) -> np.ndarray:
        return -(-np.asarray(nbytes, np.int64) // width) * cycles * self.chip.period

    def local_read(self, nbytes) -> np.ndarray:
        return self.access(nbytes, self.chip.local_memory_data_width, self.chip.local_memory_read_latency_cycle)

    def local_write(self, nbytes) -> np.ndarray:
        return self.access(nbytes, self.chip.local_memory_data_width, self.chip.local_memory_write_latency_cycle)

    def noc(self, h, nbytes) -> np.ndarray:
        """A message of `nbytes` over `h` hops: its flits one after another."""
        return -(-np.asarray(nbytes) // self.chip.bus_width) * flit_latency(self.chip, h)

    def mvmul_local(self, mbiw=8, crossbars=1) -> np.ndarray:
        """An `mvmul`'s local memory time as pimsim-nn counts it: a read of 8 input rows of
        `xbar_rows` elements (its `XbarArray` times the input as bit-serial planes), the write of
        the `xbar_cols × cell_precision ÷ mbiw` outputs of `mbiw`-bit weights of each of the
        `crossbars` side by side in its array group."""
        outputs = self.chip.xbar_cols * self.chip.cell_precision // np.asarray(mbiw) * np.asarray(crossbars)
        return self.local_read(8 * self.chip.xbar_rows * self.ibytes) + self.local_write(outputs * self.obytes)

    def mvm_compute(self, input_bits: int | None = None) -> float:
        """An `mvmul`'s crossbar time for `input_bits`-bit inputs (None: the `setbw` width)."""
        cycles, _ = mvm_cycles_and_energy(self.chip, 8 * self.ibytes if input_bits is None else input_bits)
        return cycles * self.chip.period

    def mvmul(self, mbiw=8, input_bits: int | None = None) -> np.ndarray:
        """An `mvmul` of `mbiw`-bit weights and `input_bits`-bit inputs, its local memory included."""
        return self.mvm_compute(input_bits) + self.mvmul_local(mbiw)

    def vector_compute(self, length) -> np.ndarray:
        return -(-np.asarray(length) // self.chip.vector_width) * self.chip.vector_latency_cycle * self.chip.period

    def vector_local(self, length, binary=True, one_result=False, output_width=True) -> np.ndarray:
        """Its operands read (`ibytes` per element) and its result written: `obytes` per element
        when `output_width` (pimsim-nn's `vvmul`, `vvsll`, `vvsra`, `vtanh`, `vsigm`, `vrsu`,
        `vrsl`), else `ibytes`."""
        out = np.where(one_result, 1, length)
        return (1 + np.asarray(binary)) * self.local_read(np.asarray(length) * self.ibytes) + self.local_write(
            out * np.where(output_width, self.obytes, self.ibytes)
        )

    def vector(self, length, binary=True, one_result=False, output_width=True) -> np.ndarray:
        """A vector instruction over `length` elements (two operands when `binary`)."""
        return self.vector_compute(length) + self.vector_local(length, binary, one_result, output_width)

    def fill(self, length) -> np.ndarray:
        """`lldi` of `length` elements: a local write of `length` bytes (pimsim-nn times these
        local ops by their `len` field as bytes)."""
        return self.local_write(length)

    def move(self, length) -> np.ndarray:
        """`lmv` of `length` elements: a local read and write of `length` bytes (as `fill`)."""
        return self.local_read(length) + self.local_write(length)

    def transfer(self, nbytes, h=1) -> np.ndarray:
        """A `send`/`recv` pair over `h` hops: the two one-flit handshakes, the sender's read, the
        data's flits and the receiver's write."""
        return self.local_read(nbytes) + 2 * self.noc(h, 1) + self.noc(h, nbytes) + self.local_write(nbytes)
