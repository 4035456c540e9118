"""`cim-run -o results.npz`: the results by the names of the returned values and the inputs they came from."""

from pathlib import Path

import numpy as np
import pytest

from cimxdsl.tools.cim_run import main

PRODUCT = Path(__file__).resolve().parents[2] / "filecheck" / "tools" / "inputs" / "product.mlir"


def test_results_are_written_by_name_with_their_inputs(tmp_path, capsys):
    a = np.arange(6, dtype=np.int32).reshape(2, 3) - 2
    b = np.array([[1, -2], [3, 4], [-5, 6]], np.int32)
    np.save(tmp_path / "a.npy", a)
    out = tmp_path / "results.npz"
    main([str(PRODUCT), "--input", f"a={tmp_path / 'a.npy'}", "--random-inputs", "--seed", "3", "-o", str(out)])
    capsys.readouterr()
    with np.load(out) as results:
        assert sorted(results.files) == ["input_a", "input_b", "r"]  # product.mlir returns %r
        np.testing.assert_array_equal(results["input_a"], a)
        b = results["input_b"]
        assert b.shape == (3, 2) and b.dtype == np.int32
        np.testing.assert_array_equal(results["r"], a.astype(np.int64) @ b.astype(np.int64))


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
            outputs.append(results["r"])
    np.testing.assert_array_equal(outputs[0], outputs[1])
    capsys.readouterr()
    with pytest.raises(SystemExit) as caught:
        main([str(PRODUCT), "--random-inputs", "--threads", "0"])
    assert caught.value.code == 1
    assert capsys.readouterr().err == "cim-run: error: --threads must be a positive integer, got 0\n"


LOOKUP = """func.func @main(%ids: tensor<64xi32>, %table: tensor<ROWSx3xi8>) -> tensor<64x3xi8> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %init = tensor.empty() : tensor<64x3xi8>
  %r = scf.for %t = %c0 to %c64 step %c1 iter_args(%acc = %init) -> (tensor<64x3xi8>) {
    %id32 = tensor.extract %ids[%t] : tensor<64xi32>
    %id = arith.index_cast %id32 : i32 to index
    %row = tensor.extract_slice %table [%id, 0] [1, 3] [1, 1] : tensor<ROWSx3xi8> to tensor<3xi8>
    %acc2 = tensor.insert_slice %row into %acc [%t, 0] [1, 3] [1, 1] : tensor<3xi8> into tensor<64x3xi8>
    scf.yield %acc2 : tensor<64x3xi8>
  }
  return %r : tensor<64x3xi8>
}
"""


def test_random_integers_that_become_indices_are_not_negative(tmp_path, capsys):
    """Token ids read from a tensor and cast to `index` (an embedding lookup) are drawn in 0..127,
    so that they do not wrap around to the table's last rows."""
    program = tmp_path / "lookup.mlir"
    program.write_text(LOOKUP.replace("ROWS", "128"))
    out = tmp_path / "r.npz"
    main([str(program), "--random-inputs", "--seed", "1", "-o", str(out)])
    capsys.readouterr()
    with np.load(out) as results:
        ids, table = results["input_ids"], results["input_table"]
        assert ids.min() >= 0 and ids.max() < 128 and table.min() < 0  # the table keeps signed values
        np.testing.assert_array_equal(results["r"], np.stack([table[i] for i in ids]))


@pytest.mark.parametrize("bad", [-1, 16])
def test_a_slice_out_of_range_is_a_one_line_error_at_the_op(tmp_path, capsys, bad):
    program = tmp_path / "lookup.mlir"
    program.write_text(LOOKUP.replace("ROWS", "16"))
    ids = np.arange(64, dtype=np.int32) % 16
    ids[5] = bad
    np.save(tmp_path / "ids.npy", ids)
    with pytest.raises(SystemExit) as caught:
        main([str(program), "--input", f"ids={tmp_path / 'ids.npy'}", "--random-inputs"])
    assert caught.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"cim-run: error: {program}:9:5: 'tensor.extract_slice': slice at offsets [{bad}, 0]")
    assert "out of range for shape [16, 3]" in err


def test_an_element_index_out_of_range_is_a_one_line_error(tmp_path, capsys):
    program = tmp_path / "extract.mlir"
    program.write_text(
        "func.func @main(%t: tensor<4xi32>, %i: index) -> i32 {\n"
        "  %e = tensor.extract %t[%i] : tensor<4xi32>\n  return %e : i32\n}\n"
    )
    np.save(tmp_path / "i.npy", np.array(-2))
    with pytest.raises(SystemExit):
        main([str(program), "--input", f"i={tmp_path / 'i.npy'}", "--random-inputs"])
    err = capsys.readouterr().err
    assert err == f"cim-run: error: {program}:2:3: 'tensor.extract': index [-2] is out of range for tensor<4xi32>\n"
