"""The instruction-level validator on hand-made artifact directories."""

import numpy as np
import pytest

from cimxdsl.backend import ExecutionError, read_artifacts, validate
from tests.unit.backend.handmade import (
    CONSTANT,
    WEIGHTS,
    expected,
    i,
    setbw,
    three_core_program,
    two_core_program,
    write,
)

X = np.array([[7, -3, 2], [-9, 1, 4]])


@pytest.mark.parametrize("x", list(X))
def test_two_cores_compute_relu_of_product_plus_five(tmp_path, x):
    result = validate(read_artifacts(write(tmp_path, two_core_program())), [x])
    np.testing.assert_array_equal(result.outputs[0], expected(x))
    assert result.executed == sum(len(p) for p in two_core_program().values())


def test_cores_are_stepped_round_robin_and_transfers_wait(tmp_path):
    # One instruction per core per step: core 1 stands at its recv (instruction 2) from step 3 on;
    # core 0 reaches its send (instruction 7) in step 8, which is the transfer and counts as both
    # cores' instruction of that step; core 1's 9 remaining instructions take steps 9 to 17.
    result = validate(read_artifacts(write(tmp_path, two_core_program())), [X[0]])
    assert result.steps == 17
    assert result.per_core == {0: 8, 1: 12}


def test_transfers_between_two_cores_pair_up_in_order(tmp_path):
    program = two_core_program()
    # Core 0 also sends the input itself first; core 1 receives it, then the product, and stores
    # the input where the product would have gone: the first recv must get the first send.
    program[0].insert(5, i("send", rd=0, rs1=0, core=1, size=8))
    program[1][2:2] = [i("sldi", rd=4, imm=128), i("recv", rd=4, core=0, size=8)]
    program[1][-1] = i("st", rd=28, rs1=4, size=8)
    result = validate(read_artifacts(write(tmp_path, program)), [X[0]])
    np.testing.assert_array_equal(result.outputs[0], X[0][:2])


def test_a_transfer_pairs_only_with_its_peer(tmp_path):
    """Core 2 receives from core 1, then from core 0, while core 0 sends to it first (core 1 is
    delayed): a send or recv paired with whichever core stands at a transfer would swap the two."""
    program = three_core_program()
    result = validate(read_artifacts(write(tmp_path, program, {0: [WEIGHTS]})), [X[0]])
    np.testing.assert_array_equal(result.outputs[0], X[0] @ np.array(WEIGHTS) - CONSTANT)
    assert result.per_core == {core: len(instructions) for core, instructions in program.items()}


def test_deadlock_names_the_waiting_cores_and_instructions(tmp_path):
    program = {
        0: [setbw(), i("recv", rd=0, core=1, size=8), i("send", rd=0, rs1=0, core=1, size=8)],
        1: [setbw(), i("recv", rd=0, core=0, size=8), i("send", rd=0, rs1=0, core=0, size=8)],
    }
    with pytest.raises(ExecutionError) as error:
        validate(read_artifacts(write(tmp_path, program)), [X[0]])
    assert str(error.value) == (
        "deadlock: core 0 at instruction 1 (recv from core 1, 8 bytes); "
        "core 1 at instruction 1 (recv from core 0, 8 bytes)"
    )


def test_a_send_nobody_receives_is_reported(tmp_path):
    program = {0: [setbw(), i("send", rd=0, rs1=0, core=1, size=8)], 1: [setbw(), i("nop")]}
    with pytest.raises(ExecutionError) as error:
        validate(read_artifacts(write(tmp_path, program)), [X[0]])
    assert str(error.value) == (
        "unmatched send: core_0.json: instruction 1 (send) sends 8 bytes to core 1, which finished without a "
        "matching recv"
    )


def test_send_and_recv_sizes_must_agree(tmp_path):
    program = two_core_program()
    program[1][2] = i("recv", rd=0, core=0, size=4)
    with pytest.raises(
        ExecutionError,
        match=r"size mismatch: core_0.json: instruction 7 \(send\) sends 8 bytes .*"
        r"core_1.json: instruction 2 \(recv\) receives 4 bytes",
    ):
        validate(read_artifacts(write(tmp_path, program)), [X[0]])


def test_global_accesses_outside_memory_name_the_instruction(tmp_path):
    program = two_core_program()
    program[1][10] = i("sldi", rd=29, imm=16)
    with pytest.raises(ExecutionError, match=r"core_1.json: instruction 11 \(st\): global bytes \[16, 24\) outside"):
        validate(read_artifacts(write(tmp_path, program)), [X[0]])


def test_inputs_are_checked(tmp_path):
    artifacts = read_artifacts(write(tmp_path, two_core_program()))
    with pytest.raises(ExecutionError, match=r"input 0 must have shape \[3\], got \[2\]"):
        validate(artifacts, [np.array([1, 2])])
    with pytest.raises(ExecutionError, match="takes 1 inputs, got 0"):
        validate(artifacts, [])


def test_vector_semantics(tmp_path):
    """vvsub/vvmul/vvmax/vvsra/vvsll, vavg with a stride, vmv, lmv and the scalar ops."""
    program = {
        0: [
            setbw(),
            i("sldi", rd=28, imm=0),
            i("sldi", rd=29, imm=0),
            i("sldi", rd=0, imm=0),
            i("ld", rd=0, rs1=28, size=16),  # a = x[0:4] at local 0
            i("sldi", rd=1, imm=16),
            i("lldi", rd=1, imm=2, len=4),  # b = 2 at local 16
            i("sldi", rd=2, imm=32),
            i("vvsub", rd=2, rs1=0, rs2=1, len=4),  # a - 2
            i("vvmul", rd=2, rs1=2, rs2=1, len=4),  # (a - 2) * 2
            i("vvsra", rd=2, rs1=2, rs2=1, len=4),  # >> 2
            i("vvsll", rd=2, rs1=2, rs2=1, len=4),  # << 2
            i("vvmax", rd=2, rs1=2, rs2=0, len=4),  # max(., a)
            i("sldi", rd=3, imm=48),
            i("sldi", rd=4, imm=2),
            i("vavg", rd=3, rs1=0, rs2=4, len=2),  # floor((a0 + a2) / 2)
            i("saddi", rd=5, rs1=0, imm=4),  # r5 = 4 (address of a1)
            i("sldi", rd=6, imm=52),
            i("vavg", rd=6, rs1=5, rs2=4, len=2),  # floor((a1 + a3) / 2)
            i("sldi", rd=7, imm=56),
            i("lmv", rd=7, rs1=2, len=2, size=8),
            i("sldi", rd=28, imm=0),
            i("sldi", rd=29, imm=16),
            i("sldi", rd=8, imm=32),
            i("st", rd=28, rs1=8, size=16),
            i("sldi", rd=29, imm=32),
            i("st", rd=28, rs1=3, size=16),
        ]
    }
    mem = {
        "element_bytes": 4,
        "dtype": "int32",
        "size": 48,
        "buffers": [
            {"name": "x", "kind": "input", "offset": 0, "shape": [4], "input": 0, "input_elements": [0, 1, 2, 3]},
            {"name": "y", "kind": "output", "offset": 16, "shape": [8]},
        ],
        "inputs": [{"index": 0, "shape": [4]}],
        "outputs": [{"index": 0, "shape": [8], "global_elements": list(range(4, 12))}],
    }
    x = np.array([9, -7, 4, -2])
    (y,) = validate(read_artifacts(write(tmp_path, program, {}, mem)), [x]).outputs
    chain = np.maximum((((x - 2) * 2) >> 2) << 2, x)
    np.testing.assert_array_equal(y[:4], chain)
    np.testing.assert_array_equal(y[4:], [(9 + 4) // 2, (-7 - 2) // 2, chain[0], chain[1]])


def one_word_memory() -> dict:
    """Global word 0 holds input 0 (one element); word 1 is output 0."""
    return {
        "element_bytes": 4,
        "dtype": "int32",
        "size": 8,
        "buffers": [
            {"name": "x", "kind": "input", "offset": 0, "shape": [1], "input": 0, "input_elements": [0]},
            {"name": "y", "kind": "output", "offset": 4, "shape": [1]},
        ],
        "inputs": [{"index": 0, "shape": [1]}],
        "outputs": [{"index": 0, "shape": [1], "global_elements": [1]}],
    }


def prologue() -> list[dict]:
    """setbw; the global address pair r28:r29 = 0; local address r0 = 0."""
    return [setbw(), i("sldi", rd=28, imm=0), i("sldi", rd=29, imm=0), i("sldi", rd=0, imm=0)]


def copy_word_0_to_1(first: list[dict]) -> list[dict]:
    """`first`, then load global word 0 and store it to global word 1."""
    return [
        *first,
        i("ld", rd=0, rs1=28, size=4),
        i("sldi", rd=29, imm=4),
        i("st", rd=28, rs1=0, size=4),
    ]


@pytest.mark.parametrize(("nops", "seen"), [(0, 5), (1, 42)])
def test_global_memory_accesses_follow_the_round_robin_order(tmp_path, nops, seen):
    """Core 0 stores 42 over the input word in step 5; core 1 loads it in step 4 + nops. In step 5
    core 0 goes first, so core 1 reads 42 from step 5 on and the input (5) before."""
    head = prologue()
    program = {
        0: [*head, i("lldi", rd=0, imm=42, len=1), i("st", rd=28, rs1=0, size=4)],
        1: copy_word_0_to_1(head + [i("nop")] * nops),
    }
    result = validate(read_artifacts(write(tmp_path, program, {}, one_word_memory())), [np.array([5])])
    np.testing.assert_array_equal(result.outputs[0], [seen])


def test_wait_blocks_until_the_peer_syncs(tmp_path):
    """Core 1 stores 42 over the input word, then syncs core 0, which waits for that event before
    it copies the word: it copies 42 however late core 1 gets there."""
    head = prologue()
    program = {
        0: copy_word_0_to_1([*head, i("wait", event_register=3, wait_value=1)]),
        1: [
            *head,
            *[i("nop")] * 20,
            i("lldi", rd=0, imm=42, len=1),
            i("st", rd=28, rs1=0, size=4),
            i("sync", event_register=3, core=0),
        ],
    }
    result = validate(read_artifacts(write(tmp_path, program, {}, one_word_memory())), [np.array([5])])
    np.testing.assert_array_equal(result.outputs[0], [42])
    # core 1 syncs in step 26 (its 27th instruction); core 0 sees it in step 27 (core 0 goes first
    # in a step) and runs wait, ld, sldi, st in steps 27 to 30.
    assert result.steps == 31


def test_wait_counts_the_syncs_it_has_not_taken_yet(tmp_path):
    """pimsim-nn's `wait` blocks while its event register holds less than `wait_value`, then takes
    that much from it: two syncs that come before core 0 reaches its waits let both `wait 1` pass,
    and a `wait 2` needs two more (a register that only matched `== wait_value` and was cleared
    would leave core 0 waiting for ever at its first `wait 1`, holding 2)."""
    head = prologue()
    waits = [i("wait", event_register=3, wait_value=1), i("wait", event_register=3, wait_value=1)]
    program = {
        0: copy_word_0_to_1([*head, *[i("nop")] * 10, *waits, i("wait", event_register=3, wait_value=2)]),
        1: [
            *head,
            *[i("sync", event_register=3, core=0)] * 2,
            *[i("nop")] * 20,
            *[i("sync", event_register=3, core=0)] * 2,
        ],
    }
    result = validate(read_artifacts(write(tmp_path, program, {}, one_word_memory())), [np.array([5])])
    np.testing.assert_array_equal(result.outputs[0], [5])
    # the `wait 2` holds core 0 until core 1's last sync (its instruction len(head) + 23)
    assert result.steps > len(head) + 23
    program[1] = program[1][:-1]  # one sync short: `wait 2` never passes
    with pytest.raises(ExecutionError, match=r"deadlock: core 0 at instruction \d+ \(wait\)"):
        validate(read_artifacts(write(tmp_path / "short", program, {}, one_word_memory())), [np.array([5])])


def test_a_wait_nobody_syncs_is_a_deadlock(tmp_path):
    program = {0: [setbw(), i("wait", event_register=0, wait_value=1)], 1: [setbw(), i("nop")]}
    with pytest.raises(ExecutionError, match=r"deadlock: core 0 at instruction 1 \(wait\); finished: cores 1"):
        validate(read_artifacts(write(tmp_path, program, {}, one_word_memory())), [np.array([5])])


def test_mvmul_beyond_float_precision_wraps_as_int64(tmp_path):
    """Weights and inputs near 2**30: the products exceed 2**53 (no exact float product), the
    32-bit result is the low word of the exact integer sum."""
    weights = [[2**30 - 3], [-(2**30) + 7]]
    x = np.array([2**30 - 1, 2**29 + 11])
    program = {
        0: [
            *prologue(),
            i("ld", rd=0, rs1=28, size=8),
            i("sldi", rd=1, imm=64),
            i("mvmul", rd=1, rs1=0, mbiw=8, relu=0, group=0),
            i("sldi", rd=29, imm=8),
            i("st", rd=28, rs1=1, size=4),
        ]
    }
    mem = one_word_memory() | {"size": 12}
    mem["buffers"] = [
        {"name": "x", "kind": "input", "offset": 0, "shape": [2], "input": 0, "input_elements": [0, 1]},
        {"name": "y", "kind": "output", "offset": 8, "shape": [1]},
    ]
    mem["inputs"] = [{"index": 0, "shape": [2]}]
    mem["outputs"] = [{"index": 0, "shape": [1], "global_elements": [2]}]
    (y,) = validate(read_artifacts(write(tmp_path, program, {0: [weights]}, mem)), [x]).outputs
    exact = int(x[0]) * weights[0][0] + int(x[1]) * weights[1][0]
    assert int(y[0]) == (exact + 2**31) % 2**32 - 2**31


def test_setbw_widths_narrow_shift_results_and_8_bit_crossbar_inputs(tmp_path):
    """Under `setbw 32, 8` a shift writes 8-bit results (wrapping: 200 becomes -56); under `setbw 8,
    32` `lldi`, `lmv` and the crossbar's input are 8-bit and the `mvmul` writes 32-bit sums."""
    program = {
        0: [
            *prologue(),
            i("ld", rd=0, rs1=28, size=12),  # x, 3 words at local 0
            i("sldi", rd=1, imm=16),
            i("lldi", rd=1, imm=0, len=3),  # 3 zero words at local 16
            i("setbw", ibiw=32, obiw=8),
            i("sldi", rd=2, imm=32),
            i("vvsra", rd=2, rs1=0, rs2=1, len=3),  # x >> 0 as 3 bytes at local 32
            i("setbw", ibiw=8, obiw=32),
            i("sldi", rd=3, imm=40),
            i("lldi", rd=3, imm=-1, len=8),  # 8 bytes of -1 at local 40
            i("lmv", rd=3, rs1=2, len=3, size=3),  # the 3 bytes to local 40
            i("sldi", rd=4, imm=64),
            i("mvmul", rd=4, rs1=3, mbiw=8, relu=0, group=0),  # 2 words at local 64
            i("setbw", ibiw=32, obiw=32),
            i("sldi", rd=5, imm=44),
            i("vvadd", rd=4, rs1=4, rs2=5, len=1),  # + the word of -1 bytes at local 44
            i("sldi", rd=29, imm=12),
            i("st", rd=28, rs1=4, size=8),
        ]
    }
    x = np.array([7, -3, 200])
    (y,) = validate(read_artifacts(write(tmp_path, program)), [x]).outputs
    np.testing.assert_array_equal(y, np.array([7, -3, -56]) @ np.array(WEIGHTS) + [-1, 0])
