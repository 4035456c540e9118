"""The artifact directory written from `pim-codegen`'s IR: the files pimsim-nn and the validator
read, exactly, for the two-core program of tests/filecheck/transforms/pim-codegen.mlir."""

import json
from pathlib import Path

import numpy as np
import pytest

from cimxdsl.backend import read_artifacts, validate
from cimxdsl.backend.artifacts import ArtifactError
from cimxdsl.backend.emit import artifacts_of, write_program
from cimxdsl.dialects import pim
from tests.unit.helpers import apply, parse

PROGRAM = Path(__file__).parents[2] / "filecheck" / "transforms" / "pim-codegen.mlir"


@pytest.fixture
def written(tmp_path) -> Path:
    module = apply(parse(PROGRAM.read_text()), "pim-codegen")
    write_program(module, tmp_path)
    return tmp_path


def test_config_names_one_array_group_per_crossbar(written: Path):
    assert (written / "config.json").read_text() == (
        '{\n "core_cnt": 2,\n "array_group_map": {\n  "core0": [\n   1\n  ],\n  "core1": []\n }\n}\n'
    )


def test_core_stream_is_the_ops_json_one_per_line(written: Path):
    lines = (written / "core_0.json").read_text().splitlines()
    assert lines[1] == '{"op": "setbw", "ibiw": 32, "obiw": 32},'
    assert (
        lines[5] == '{"op": "ld", "rd": 0, "rs1": 28, "size": 32, "offset": {"offset_select": 0, "offset_value": 0}},'
    )
    assert lines[7] == '{"op": "mvmul", "rd": 1, "rs1": 0, "mbiw": 8, "relu": 0, "group": 0},'
    assert lines[-2:] == [
        '{"op": "send", "rd": 1, "rs1": 1, "core": 1, "size": 32, "offset": {"offset_select": 0, "offset_value": 0}}',
        "]",
    ]


def test_crossbars_and_memory_layout(written: Path):
    assert (written / "crossbars_0.json").read_text() == (
        '{"core": 0, "array_groups": [{"group": 0, "crossbars": 1, "rows": 2, "cols": 2, "origin": "example", '
        '"weights": [[1, 2], [3, 4]]}]}\n'
    )
    # The input buffer holds the function's input in order; the output is read from global elements 8..15.
    assert json.loads((written / "memory.json").read_text()) == {
        "element_bytes": 4,
        "dtype": "int32",
        "size": 64,
        "buffers": [
            {"name": "in0", "kind": "input", "offset": 0, "bytes": 32, "shape": [2, 2, 2], "input": 0,
             "input_elements": list(range(8))},
            {"name": "out1", "kind": "output", "offset": 32, "bytes": 32, "shape": [2, 2, 2]},
        ],
        "inputs": [{"index": 0, "shape": [2, 2, 2]}],
        "outputs": [{"index": 0, "shape": [2, 2, 2], "global_elements": list(range(8, 16))}],
    }  # fmt: skip


def test_read_back_gives_the_same_ops_and_validates(written: Path):
    module = apply(parse(PROGRAM.read_text()), "pim-codegen")
    emitted = artifacts_of(module)
    artifacts = read_artifacts(written)
    for core, again in zip(emitted.cores, artifacts.cores, strict=True):
        assert [str(op) for op in again.instructions] == [str(op) for op in core.instructions]
        assert all(isinstance(op, pim.InstructionOp) for op in again.instructions)
    assert [c.local_bytes for c in emitted.cores] == [72, 128]
    x = np.arange(8).reshape(2, 2, 2) - 3
    # Core 0: y[p] = x[p] @ W plus, at pixel (1, 1), x[0, 0] @ W (the kernel's other position);
    # core 1: y >> 1, then 2x2 max pooling padded below and right.
    w = np.array([[1, 2], [3, 4]])
    y = x @ w
    y[1, 1] += x[0, 0] @ w
    shifted = np.pad(y >> 1, ((0, 1), (0, 1), (0, 0)), constant_values=np.iinfo(np.int32).min)
    pooled = np.max([shifted[dy : dy + 2, dx : dx + 2] for dy in (0, 1) for dx in (0, 1)], axis=0)
    (got,) = validate(artifacts, [x]).outputs
    np.testing.assert_array_equal(got, pooled)


def test_a_module_without_instruction_level_cores_has_no_artifacts():
    with pytest.raises(
        ArtifactError, match=r"expected one function with instruction-level cores \(run pim-codegen\), found 0"
    ):
        artifacts_of(parse(PROGRAM.read_text()))
