"""`cim-run -o results.npz`: the results by index and the inputs they came from."""

from pathlib import Path

import numpy as np
import pytest

from cimxdsl.tools.cim_run import main

PRODUCT = Path(__file__).resolve().parents[2] / "filecheck" / "tools" / "inputs" / "product.mlir"


def test_results_are_written_by_index_with_their_inputs(tmp_path, capsys):
    a = np.arange(6, dtype=np.int32).reshape(2, 3) - 2
    b = np.array([[1, -2], [3, 4], [-5, 6]], np.int32)
    np.save(tmp_path / "a.npy", a)
    out = tmp_path / "results.npz"
    main([str(PRODUCT), "--input", f"a={tmp_path / 'a.npy'}", "--random-inputs", "--seed", "3", "-o", str(out)])
    capsys.readouterr()
    with np.load(out) as results:
        assert sorted(results.files) == ["input_a", "input_b", "result_0"]
        np.testing.assert_array_equal(results["input_a"], a)
        b = results["input_b"]
        assert b.shape == (3, 2) and b.dtype == np.int32
        np.testing.assert_array_equal(results["result_0"], a.astype(np.int64) @ b.astype(np.int64))


def test_an_unwritable_output_is_a_one_line_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as caught:
        main([str(PRODUCT), "--random-inputs", "-o", str(tmp_path / "missing" / "r.npz")])
    assert caught.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("cim-run: error: cannot write ") and err.count("\n") == 1


def test_threads_give_the_same_results_and_a_bad_count_is_one_line(tmp_path, capsys):
    outputs = []
    for threads in ("1", "2"):
        out = tmp_path / f"r{threads}.npz"
        main([str(PRODUCT), "--random-inputs", "--device", "cinnamon", "--threads", threads, "-o", str(out)])
        with np.load(out) as results:
            outputs.append(results["result_0"])
    np.testing.assert_array_equal(outputs[0], outputs[1])
    capsys.readouterr()
    with pytest.raises(SystemExit) as caught:
        main([str(PRODUCT), "--random-inputs", "--threads", "0"])
    assert caught.value.code == 1
    assert capsys.readouterr().err == "cim-run: error: --threads must be a positive integer, got 0\n"
