"""The performance model against latencies worked out by hand on small programs, on a chip whose
figures make the arithmetic easy."""

import pytest

from cimxdsl.backend.artifacts import Artifacts, MemoryLayout
from cimxdsl.backend.performance import PerformanceError, core_costs, critical_path, estimate, mvm_cycles_and_energy
from cimxdsl.device.chip import ChipConfigError, chip_from_dict, chip_preset, load_chip_config
from cimxdsl.dialects.pim import InstructionOp
from cimxdsl.interpreters.pim_machine import ArrayGroup, CoreProgram
from tests.unit.backend.handmade import WEIGHTS, i, setbw, two_core_program

CHIP = chip_from_dict(
    {
        "xbar_rows": 4,
        "xbar_cols": 2,
        "dac_resolution": 32,  # one DAC step for 32-bit inputs
        "dac_count": 4,
        "adc_count": 2,  # one ADC pass over the 2 columns
        "adc_latency_cycle": 4,
        "xbar_latency": 5.0,
        "local_memory_data_width": 4,
        "local_memory_read_latency_cycle": 1,
        "local_memory_write_latency_cycle": 2,
        "global_memory_data_width": 4,
        "global_memory_read_latency_cycle": 3,
        "global_memory_write_latency_cycle": 5,
        "bus_width": 4,
        "noc_hop_latency_cycle": 10,
        "vector_width": 2,
        "vector_latency_cycle": 3,
        "xbar_read_power": 2.0,
        "adc_dynamic_power": 1.0,
        "adc_static_power": 0.5,
        "vector_dynamic_power": 1.0,
        "local_memory_dynamic_power": 1.0,
        "global_memory_dynamic_power": 1.0,
        "noc_energy_per_byte_hop": 1.0,
    }
)


def artifacts(programs: dict[int, list[dict]], crossbars: dict[int, int] | None = None) -> Artifacts:
    groups = crossbars or {}
    return Artifacts(
        [
            CoreProgram(
                core, [InstructionOp.from_json(obj) for obj in stream], [ArrayGroup(WEIGHTS)] * groups.get(core, 0)
            )
            for core, stream in programs.items()
        ],
        MemoryLayout(4, 0),
    )


def test_mvm_follows_the_crossbar_pipeline():
    # front: DAC 1 + read 5 + sample-and-hold 1 = 7; back: ADC 4 + shift-add 1 + output buffer 1 = 6
    assert mvm_cycles_and_energy(CHIP, 32) == (13, 2.0 * 5 + 1.0 * 4 * 2)
    # 8 DAC steps of 1 bit, pipelined: 7 + 6 + 7 further steps of max(7, 6)
    assert mvm_cycles_and_energy(CHIP.replace(dac_resolution=1), 8)[0] == 7 + 6 + 7 * 7
    assert mvm_cycles_and_energy(CHIP.replace(dac_resolution=1, pipeline_mode=False), 8)[0] == 8 * 13


def test_two_cores_with_a_blocking_transfer():
    e = estimate(artifacts(two_core_program(), {0: 1}), CHIP)
    # core 0: setbw, 3 sldi = 4; ld 12 B: global 3x3 + local 3x2 + its one-flit request over 1 hop
    # (10) = 25; sldi 1; mvmul: 13 + a read of 8 planes of 4 inputs (128 B: 32x1) + a write of
    # 2 x 2 // 8 = 0 outputs = 45 -> at its send at 75. Core 1 is at its recv at 2. The transfer:
    # read 2x1 + two one-flit handshakes (2x10) + 2 flits (2x10) + write 2x2 = 46 -> both at 121.
    # core 1 then: sldi 1, lldi of len 2 (2 B: 1x2) = 2, sldi 1, vvadd 2x(2x1) + 3 + 2x2 = 11,
    # sldi 1, vrelu 2 + 3 + 4 = 9, 2 sldi = 2, st 8 B: local 2 + global 2x5 + 2 flits over 2 hops
    # (2x20) = 52 -> 79 more: 200.
    assert e.core_end_ns == [121.0, 200.0]
    assert e.latency_ns == 200.0
    assert e.core_busy_ns == [121.0, 2 + 46 + 79.0]
    # streamed, core 0 waits for core 1 to be back at its recv: one image every 127 ns
    assert e.bottleneck == "core 1" and e.throughput == pytest.approx(1e9 / 127)
    assert e.global_memory_busy_ns == 9 + 10
    assert e.energy_pj == {
        "crossbar": 18.0,
        "vector": 6.0,  # two vector ops of one 3-cycle pass
        "local_memory": (6 + 32 + 2) + (4 + 2 + 8 + 6 + 2.0),
        "global_memory": 19.0,
        "noc": 8 + 12 + 16.0,  # 8 B over 1 hop, 12 B over 1, 8 B over 2
        "static": 1 * 2 * 0.5 * 200,  # one crossbar's two ADCs over the latency
        "total": 18 + 6 + 62 + 19 + 36 + 200.0,
    }


def stage(core: int, source: int | None, target: int | None, work: int) -> list[dict]:
    """Receive 2 words from `source`, run `work` 2-element ReLUs (1 + 3 + 2 ns each), send them on."""
    stream = [setbw()]
    if source is not None:
        stream.append(i("recv", rd=0, core=source, size=8))
    stream += [i("vrelu", rd=0, rs1=0, len=2)] * work
    if target is not None:
        stream.append(i("send", rd=0, rs1=0, core=target, size=8))
    return stream


def test_pipelined_throughput_is_set_by_the_busiest_stage():
    chip = CHIP.replace(local_memory_write_latency_cycle=1)  # a ReLU: read 2 + 3 + write 2 = 7
    program = {0: stage(0, None, 1, 10), 1: stage(1, 0, 2, 30), 2: stage(2, 1, None, 5)}
    e = estimate(artifacts(program), chip)
    transfer = 2 + 2 * 10 + 2 * 10 + 2  # read, two one-flit handshakes and 2 flits over one hop, write
    assert e.core_busy_ns == [1 + 70 + transfer, 1 + transfer + 210 + transfer, 1 + transfer + 35.0]
    assert e.core_end_ns == [71 + transfer, 71 + transfer + 210 + transfer, 71 + 2 * transfer + 210 + 35.0]
    assert e.bottleneck == "core 1"
    assert e.throughput == pytest.approx(1e9 / (1 + 210 + 2 * transfer))


def test_the_critical_path_goes_back_through_the_transfers_a_core_waited_for():
    chip = CHIP.replace(local_memory_write_latency_cycle=1)  # a ReLU: read 2 + 3 + write 2 = 7
    transfer = 2 + 2 * 10 + 2 * 10 + 2
    chain = artifacts({0: stage(0, None, 1, 10), 1: stage(1, 0, 2, 30), 2: stage(2, 1, None, 5)})
    # core 2 waits at its recv for core 1, which waited at its recv for core 0
    sent = 71 + transfer + 210  # core 1 at its send
    end = sent + transfer + 35
    assert critical_path(chain, chip) == [(0, 0.0, 71.0), (1, 71.0, sent), (2, sent, end)]
    assert estimate(chain, chip).latency_ns == end
    # a last core busy before its recv waits for no one: the path is its own work
    relu = i("vrelu", rd=0, rs1=0, len=2)
    late = [setbw(), *[relu] * 50, i("recv", rd=0, core=1, size=8), relu]
    busy = artifacts({0: stage(0, None, 1, 10), 1: stage(1, 0, 2, 5), 2: late})
    assert critical_path(busy, chip) == [(2, 0.0, 1 + 350 + transfer + 7.0)]


def test_a_busier_global_memory_is_the_bottleneck():
    loads = [setbw(), i("sldi", rd=28, imm=0), i("sldi", rd=29, imm=0)] + [i("ld", rd=0, rs1=28, size=400)] * 2
    e = estimate(artifacts({0: loads, 1: list(loads)}), CHIP.replace(global_memory_read_latency_cycle=10))
    # each core: 3 + 2 x (global 100 x 10 + local 100 x 2 + a one-flit request over 1 or 2 hops)
    # < the memory's 4 x 1000
    assert e.core_busy_ns == [3 + 2 * 1210.0, 3 + 2 * 1220.0]
    assert e.global_memory_busy_ns == 4 * 100 * 10
    assert e.bottleneck == "global memory" and e.throughput == pytest.approx(1e9 / 4000)


def test_cores_waiting_on_each_other_cannot_be_timed():
    program = {0: [setbw(), i("recv", rd=0, core=1, size=8)], 1: [setbw(), i("recv", rd=0, core=0, size=8)]}
    with pytest.raises(PerformanceError, match=r"^cores 0, 1 wait at a send/recv no core matches"):
        estimate(artifacts(program), CHIP)


def test_chip_configs():
    chip = chip_preset("pimcomp")
    assert (chip.core_cnt, chip.xbar_array_count, chip.xbar_rows, chip.xbar_cols) == (64, 64, 128, 128)
    with pytest.raises(ChipConfigError, match=r"^chip config: unknown key 'adc_cnt' \(did you mean 'adc_count'\?\)$"):
        chip_from_dict({"adc_cnt": 4})
    with pytest.raises(ChipConfigError, match=r"^chip config: 'vector_width' must be a positive integer, got 0$"):
        chip_from_dict({"vector_width": 0})
    with pytest.raises(ChipConfigError, match=r"^chip: unknown preset 'pimcom' \(did you mean 'pimcomp'\?\)"):
        load_chip_config("pimcom")


def test_chip_from_a_toml_file(tmp_path):
    path = tmp_path / "chip.toml"
    path.write_text('preset = "pimsim-nn"\ncore_cnt = 16\n')
    chip = load_chip_config(path)
    assert (chip.core_cnt, chip.xbar_latency, chip.adc_count) == (16, 30.0, 2)


def test_a_core_holding_two_stages_counts_both():
    # Core 0 runs the first layer (10 ReLUs) and, after core 1's (30), the last one (25): it
    # starts the next image's first layer only once this image's last one is done, so images do
    # not overlap: one leaves every 1 + 70 + transfer + 210 + transfer + 175, not every 1 + 245 +
    # 2 transfers (core 0's busy time, the bound if it could work on two images at once).
    chip = CHIP.replace(local_memory_write_latency_cycle=1)  # a ReLU: read 2 + 3 + write 2 = 7
    first, last = stage(0, None, 1, 10), stage(0, 1, None, 25)
    program = {0: first + last[1:], 1: stage(1, 0, 0, 30)}
    e = estimate(artifacts(program), chip)
    transfer = 2 + 2 * 10 + 2 * 10 + 2
    assert e.core_busy_ns == [1 + 35 * 7 + 2 * transfer, 1 + 30 * 7 + 2 * transfer]
    assert e.bottleneck == "core 0" and e.throughput_bound == pytest.approx(1e9 / (1 + 245 + 2 * transfer))
    assert e.throughput == pytest.approx(1e9 / (1 + 70 + 210 + 175 + 2 * transfer))


def test_each_instruction_takes_the_widths_of_the_last_setbw():
    """pimsim-nn's widths: a vector op reads `ibiw`-bit operands and writes `ibiw`-bit results,
    but shifts and products (`vvsra`, `vvmul`, ...) write `obiw`-bit ones; an `mvmul` streams
    `ibiw` input bits through the DACs and reads 8 planes of `ibiw`-bit rows."""
    chip = CHIP.replace(dac_resolution=1)
    stream = [
        setbw(),
        i("setbw", ibiw=32, obiw=8),
        i("vvsra", rd=0, rs1=0, rs2=0, len=4),
        i("vvadd", rd=0, rs1=0, rs2=0, len=4),
        i("setbw", ibiw=8, obiw=32),
        i("mvmul", rd=0, rs1=0, mbiw=8, group=0),
        i("vvadd", rd=0, rs1=0, rs2=0, len=4),
        setbw(),
        i("mvmul", rd=0, rs1=0, mbiw=8, group=0),
    ]
    program = artifacts({0: stream}, {0: 1}).cores[0]
    # vvsra (32 -> 8): 2 vector passes of 3 + reads of 2 x 16 B (4 words each, 1 cycle) + a write of
    # 4 B (1 word, 2 cycles); vvadd (32 -> 8): the same reads, but it writes 16 B (4 words); the
    # 8-bit mvmul: 8 pipelined DAC steps 7 + 6 + 7 x 7 + a read of 8 planes of 4 bytes (8 words),
    # its outputs (2 x 2 // 8 = 0) written; the 8-bit vvadd: reads of 2 x 4 B, a write of 4 B; the
    # 32-bit mvmul: 32 steps 7 + 6 + 31 x 7 + a read of 8 planes of 16 bytes (32 words).
    assert core_costs(program, chip).latency.tolist() == [1, 1, 6 + 8 + 2, 6 + 8 + 8, 1, 62 + 8, 6 + 2 + 2, 1, 230 + 32]
