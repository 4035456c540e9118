"""A PyTorch CNN with depthwise convolutions (`examples/depthwise_cnn.onnx`, exported by
`examples/export_torchvision.py`: grouped convolutions, ReLU6, batch norms, adaptive average
pooling, `view` flatten, linear) compiles for `--target pim` with no other flag and its artifacts
execute to exactly the interpreted integer program's result."""

from pathlib import Path

import numpy as np
import onnx

from cimxdsl.tools.cim_compile import main as cim_compile
from cimxdsl.tools.cim_validate import main as cim_validate

MODEL = Path(__file__).resolve().parents[3] / "examples" / "depthwise_cnn.onnx"


def test_the_bundled_depthwise_cnn_is_what_the_issue_describes():
    ops = {node.op_type for node in onnx.load(str(MODEL)).graph.node}
    groups = [a.i for n in onnx.load(str(MODEL)).graph.node if n.op_type == "Conv" for a in n.attribute if a.name == "group"]
    assert max(groups) > 1 and "Reshape" in ops


def test_depthwise_cnn_compiles_with_no_flags_and_validates_exactly(tmp_path, capsys):
    out = tmp_path / "out"
    assert cim_compile([str(MODEL), "--target", "pim", "--random-inputs", "-o", str(out)]) in (0, None)
    report = capsys.readouterr().out
    assert "using chip 'pimcomp'" in report
    expected = np.load(out / "expected_0.npy")
    assert expected.shape == (1, 10) and np.any(expected != 0)
    args = [str(out), "--input", str(out / "input_0.npy"), "--expect", str(out / "expected_0.npy"), "-q"]
    assert cim_validate(args) == 0
    wrong = expected.copy()
    wrong[0, 0] += 1
    np.save(out / "wrong.npy", wrong)
    assert cim_validate([*args[:3], "--expect", str(out / "wrong.npy"), "-q"]) == 1
