"""`cim-validate`: exit status 0 only when the program ran and matched; every failure is one line."""

import json
import subprocess
import sys

import numpy as np

from cimxdsl.tools.cim_validate import main
from tests.unit.backend.handmade import expected, i, setbw, two_core_program, write

X = np.array([7, -3, 2])


def arrays(tmp_path, y=None):
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "y.npy", expected(X) if y is None else y)
    return ["--input", str(tmp_path / "x.npy"), "--expect", str(tmp_path / "y.npy")]


def test_matching_output(tmp_path, capsys):
    directory = write(tmp_path / "out", two_core_program())
    assert main([str(directory), *arrays(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out == "cim-validate: ok: 2 cores executed 20 instructions in 17 round-robin steps; outputs [2] match\n"


def test_mismatch_is_reported_with_the_first_wrong_element(tmp_path, capsys):
    directory = write(tmp_path / "out", two_core_program())
    wrong = expected(X)
    wrong[1] += 1
    assert main([str(directory), *arrays(tmp_path, wrong)]) == 1
    err = capsys.readouterr().err
    assert err == (
        "cim-validate: mismatch: output 0: 1 of 2 elements differ "
        f"(first at [1]: got {wrong[1] - 1}, expected {wrong[1]})\n"
    )


def test_deadlock_and_malformed_directories_fail_with_one_line(tmp_path, capsys):
    deadlocked = write(
        tmp_path / "deadlock",
        {0: [setbw(), i("recv", rd=0, core=1, size=8)], 1: [setbw(), i("recv", rd=0, core=0, size=8)]},
    )
    assert main([str(deadlocked), *arrays(tmp_path)]) == 1
    assert capsys.readouterr().err.startswith(
        "cim-validate: error: deadlock: core 0 at instruction 1 (recv from core 1"
    )

    program = two_core_program()
    program[1][3] = {"op": "vfoo"}
    malformed = write(tmp_path / "malformed", program)
    assert main([str(malformed), *arrays(tmp_path)]) == 1
    assert capsys.readouterr().err == "cim-validate: error: core_1.json: instruction 3: unknown instruction op 'vfoo'\n"

    assert main([str(tmp_path / "nowhere"), *arrays(tmp_path)]) == 1
    assert capsys.readouterr().err.endswith("nowhere: not a directory\n")

    assert main([str(malformed), "--input", str(tmp_path / "missing.npy")]) == 1
    assert capsys.readouterr().err.count("\n") == 1


def test_command_line_entry_point(tmp_path):
    directory = write(tmp_path / "out", two_core_program())
    run = [
        sys.executable,
        "-m",
        "cimxdsl.tools.cim_validate",
        str(directory),
        *arrays(tmp_path),
        "--output",
        str(tmp_path / "y.npz"),
    ]
    result = subprocess.run(run, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "y.npz")["arr_0"], expected(X))
    (directory / "config.json").write_text(json.dumps({"core_cnt": 2}))
    result = subprocess.run(run, capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert result.stderr == "cim-validate: error: config.json: 'array_group_map' must be an object\n"
