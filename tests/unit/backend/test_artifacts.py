"""Reading, writing and checking artifact directories: every defect is one line naming the file
(and the instruction)."""

import json

import numpy as np
import pytest

from cimxdsl.backend import ArtifactError, read_artifacts, write_artifacts
from cimxdsl.backend.artifacts import integer_matrix, matrix_json
from tests.unit.backend.handmade import i, setbw, two_core_program, write


def test_round_trip_keeps_instructions_weights_and_layout(tmp_path):
    artifacts = read_artifacts(write(tmp_path / "a", two_core_program()))
    write_artifacts(tmp_path / "b", artifacts)
    again = read_artifacts(tmp_path / "b")
    assert [[op.to_json() for op in c.instructions] for c in again.cores] == [
        [op.to_json() for op in c.instructions] for c in artifacts.cores
    ]
    np.testing.assert_array_equal(again.cores[0].groups[0].weights, artifacts.cores[0].groups[0].weights)
    assert again.memory.buffers[0].input_elements.tolist() == [0, 1, 2]
    assert json.loads((tmp_path / "b" / "config.json").read_text()) == {
        "core_cnt": 2,
        "array_group_map": {"core0": [1], "core1": []},
    }
    assert again.instruction_counts()["sldi"] == 10


def test_written_instructions_use_pimsim_field_names(tmp_path):
    write_artifacts(tmp_path, read_artifacts(write(tmp_path / "src", two_core_program())))
    core = json.loads((tmp_path / "core_0.json").read_text())
    assert core[0] == {"op": "setbw", "ibiw": 32, "obiw": 32}
    assert core[4] == {"op": "ld", "rd": 0, "rs1": 28, "size": 12, "offset": {"offset_select": 0, "offset_value": 0}}
    assert core[6] == {"op": "mvmul", "rd": 1, "rs1": 0, "mbiw": 8, "relu": 0, "group": 0}


def test_instructions_are_written_one_per_line(tmp_path):
    """Including `ld`s, whose nested offset object closes inside the instruction."""
    write_artifacts(tmp_path, read_artifacts(write(tmp_path / "src", two_core_program())))
    lines = (tmp_path / "core_0.json").read_text().splitlines()
    core = json.loads("\n".join(lines))
    assert lines[0] == "[" and lines[-1] == "]" and len(lines) == len(core) + 2
    assert [json.loads(line.rstrip(",")) for line in lines[1:-1]] == core
    assert any("offset" in instruction for instruction in core)


@pytest.mark.parametrize(
    "matrix",
    [
        np.random.default_rng(0).integers(-128, 128, (16, 9)),
        np.random.default_rng(1).integers(0, 256, (4, 4)).astype(np.uint8),
        np.full((2, 3), -7),
        np.random.default_rng(2).integers(-(2**31), 2**31 - 1, (3, 2)),  # a wide range: plain json
        np.zeros((3, 0), np.int64),
        np.zeros((0, 5), np.int8),
    ],
)
def test_weight_matrices_are_written_as_json_writes_them(matrix):
    assert matrix_json(matrix) == json.dumps(matrix.tolist(), separators=(", ", ": "))


def broken(tmp_path, change) -> str:
    """The error of reading the two-core program after `change(cores, directory)`."""
    cores = two_core_program()
    directory = write(tmp_path, cores)
    change(cores, directory)
    with pytest.raises(ArtifactError) as error:
        read_artifacts(directory)
    message = str(error.value)
    assert "\n" not in message
    return message


def rewrite_core(core: int, instructions, directory):
    (directory / f"core_{core}.json").write_text(json.dumps(instructions))


def test_missing_core_file(tmp_path):
    assert broken(tmp_path, lambda c, d: (d / "core_1.json").unlink()) == "core_1.json: missing"


def test_missing_config_and_memory(tmp_path):
    assert broken(tmp_path / "a", lambda c, d: (d / "config.json").unlink()) == "config.json: missing"
    assert broken(tmp_path / "b", lambda c, d: (d / "memory.json").unlink()) == "memory.json: missing"


def test_unknown_op(tmp_path):
    def change(cores, directory):
        cores[1][3] = {"op": "vfoo", "rd": 1}
        rewrite_core(1, cores[1], directory)

    assert broken(tmp_path, change) == "core_1.json: instruction 3: unknown instruction op 'vfoo'"


def test_bad_fields(tmp_path):
    def field(which, index, **values):
        def change(cores, directory):
            cores[which][index].update(values)
            rewrite_core(which, cores[which], directory)

        return change

    assert broken(tmp_path / "a", field(0, 1, imm="0")) == (
        "core_0.json: instruction 1: 'sldi' field 'imm' must be an integer, got '0'"
    )
    assert (
        broken(tmp_path / "b", field(0, 1, rd=32))
        == "core_0.json: instruction 1: 'pim.sldi' rd must be a register index 0..31, got 32"
    )
    assert broken(tmp_path / "c", field(0, 6, mbiw=0)).startswith(
        "core_0.json: instruction 6: 'pim.mvmul' mbiw must be"
    )
    # The ISA's rules are the dialect's: setbw's element widths are whole bytes.
    assert broken(tmp_path / "h", field(0, 0, ibiw=12)) == (
        "core_0.json: instruction 0: 'pim.setbw' ibiw must be an element width of 8, 16, 32 or 64 bits, got 12"
    )
    assert broken(tmp_path / "d", field(0, 6, group=1)) == (
        "core_0.json: instruction 6 (mvmul): group 1 is outside array_group_map.core0 (1 groups)"
    )
    assert broken(tmp_path / "e", field(0, 4, rs1=27)) == (
        "core_0.json: instruction 4: 'pim.ld' rs1 must name an even register pair (the global address), got 27"
    )
    assert (
        broken(tmp_path / "f", field(1, 2, core=7))
        == "core_1.json: instruction 2 (recv): core 7 does not exist (core_cnt is 2)"
    )
    assert (
        broken(tmp_path / "g", field(1, 6, offset=3))
        == "core_1.json: instruction 6: 'vvadd' offset must be an object, got 3"
    )


def test_setbw_comes_first(tmp_path):
    def change(cores, directory):
        rewrite_core(0, cores[0][1:], directory)

    assert broken(tmp_path, change) == "core_0.json: instruction 0 (sldi): the first instruction must be setbw"


def test_stray_core_file_and_bad_config(tmp_path):
    assert broken(tmp_path / "a", lambda c, d: rewrite_core(5, [setbw()], d)) == (
        "core_5.json: not a core file of a 2-core program (pimsim-nn rejects it)"
    )

    def config(text):
        return lambda c, d: (d / "config.json").write_text(text)

    assert broken(tmp_path / "b", config("{")).startswith("config.json: not valid JSON")
    assert broken(tmp_path / "c", config('{"core_cnt": 0, "array_group_map": {}}')) == (
        "config.json: 'core_cnt' must be a positive integer, got 0"
    )
    assert broken(tmp_path / "d", config('{"core_cnt": 2, "array_group_map": {"core0": [1], "core1": [0]}}')) == (
        "config.json: array_group_map.core1 must be a list of positive crossbar counts, got [0]"
    )


def test_crossbar_file_must_match_the_array_groups(tmp_path):
    def extra_group(cores, directory):
        data = {"core": 0, "array_groups": [{"group": 0, "weights": [[1]]}, {"group": 1, "weights": [[2]]}]}
        (directory / "crossbars_0.json").write_text(json.dumps(data))

    assert broken(tmp_path / "a", extra_group) == (
        "crossbars_0.json: holds 2 array groups, but array_group_map.core0 has 1"
    )

    def ragged(cores, directory):
        data = {"core": 0, "array_groups": [{"group": 0, "weights": [[1, 2], [3]]}]}
        (directory / "crossbars_0.json").write_text(json.dumps(data))

    assert broken(tmp_path / "b", ragged) == "crossbars_0.json: array group 0: 'weights' must be a matrix of integers"


def test_an_array_groups_precision_is_kept_and_checked(tmp_path):
    def group_bits(weight_bits, input_bits):
        def change(cores, directory):
            group = {"group": 0, "weights": [[1, -2]], "weight_bits": weight_bits, "input_bits": input_bits}
            (directory / "crossbars_0.json").write_text(json.dumps({"core": 0, "array_groups": [group]}))

        return change

    directory = write(tmp_path / "a", two_core_program())
    group_bits(3, 5)(None, directory)
    artifacts = read_artifacts(directory)
    assert artifacts.cores[0].groups[0].precision == (3, 5)
    write_artifacts(tmp_path / "b", artifacts)
    assert read_artifacts(tmp_path / "b").cores[0].groups[0].precision == (3, 5)
    assert broken(tmp_path / "c", group_bits(9, 5)) == (
        "crossbars_0.json: array group 0: 'weight_bits' and 'input_bits' must be integers from 1 to 8"
    )


def test_memory_layout_is_checked(tmp_path):
    def memory(change):
        def apply(cores, directory):
            data = json.loads((directory / "memory.json").read_text())
            change(data)
            (directory / "memory.json").write_text(json.dumps(data))

        return apply

    assert broken(tmp_path / "a", memory(lambda m: m["buffers"][1].update(offset=16))) == (
        "memory.json: buffer 1: bytes outside the 20-byte global memory"
    )
    assert broken(tmp_path / "b", memory(lambda m: m["outputs"][0].update(global_elements=[3]))) == (
        "memory.json: outputs 0: 'global_elements' must list one address per element"
    )
    assert broken(tmp_path / "c", memory(lambda m: m.pop("inputs"))) == "memory.json: 'inputs' is missing or not a list"


def test_program_with_an_idle_core_reads(tmp_path):
    artifacts = read_artifacts(write(tmp_path, {**two_core_program(), 2: []}))
    assert [len(c.instructions) for c in artifacts.cores] == [8, 12, 0]
    assert i("nop") == {"op": "nop"}


@pytest.mark.parametrize(
    "text",
    ["[[1, 2], [3]]", "[[1 2], [3, 4]]", "[[]]", "[[1], [2], [3, 4]]", "[[1, 2], 3]", "[[1,,2]]", "[[-]]",
     "[[1-2, 3]]", "[[1.5, 2]]", "[[99999999999999999999999]]", '[["1"]]'],
)
def test_only_regular_integer_matrices_take_the_fast_parser(text):
    assert integer_matrix(text) is None


def test_the_fast_parser_reads_what_json_reads():
    matrix = np.arange(-60, 60).reshape(8, 15) * 12345
    np.testing.assert_array_equal(integer_matrix(matrix_json(matrix)), matrix)
    np.testing.assert_array_equal(integer_matrix("[[ -3 ,4],[5,  6]]"), [[-3, 4], [5, 6]])
