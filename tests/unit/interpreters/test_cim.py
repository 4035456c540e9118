"""The cim interpreter functions: crossbar products on the device model, futures and barriers,
device and crossbar acquisition."""

import numpy as np
import pytest
from xdsl.utils.exceptions import InterpretationError

from cimxdsl.device import preset
from cimxdsl.interpreters import run
from cimxdsl.tools import cim_run
from tests.unit.helpers import parse

PROGRAM = """func.func @main(%a: tensor<2x3xi32>, %b: tensor<3x4xi32>, %c: tensor<4x2xi32>, %m: tensor<4x3xi32>,
                  %v: tensor<3xi32>) -> (tensor<2x2xi32>, tensor<4xi32>) {
  %layer_dev = cim.acquire_device -> !cim.deviceId
  %x = cim.acquire_crossbar %layer_dev : !cim.deviceId -> !cim.crossbarId
  %y = cim.acquire_crossbar %layer_dev : !cim.deviceId -> !cim.crossbarId
  %ab = cim.op.gemm %x, %a, %b : !cim.crossbarId, tensor<2x3xi32>, tensor<3x4xi32> -> !cim.future<2x4xi32>
  %abc = cim.op.gemm %y, %ab, %c : !cim.crossbarId, !cim.future<2x4xi32>, tensor<4x2xi32> -> !cim.future<2x2xi32>
  %r = cim.barrier %abc : !cim.future<2x2xi32> -> tensor<2x2xi32>
  %mv = cim.op.gemv %x, %m, %v : !cim.crossbarId, tensor<4x3xi32>, tensor<3xi32> -> !cim.future<4xi32>
  %s = cim.barrier %mv : !cim.future<4xi32> -> tensor<4xi32>
  cim.release_crossbar %x : !cim.crossbarId
  cim.release_crossbar %y : !cim.crossbarId
  cim.release_device %layer_dev : !cim.deviceId
  func.return %r, %s : tensor<2x2xi32>, tensor<4xi32>
}"""


def matmul(a, b):
    return [[sum(x * y for x, y in zip(row, column, strict=True)) for column in zip(*b, strict=True)] for row in a]


def test_gemm_of_a_future_and_gemv_on_acquired_crossbars():
    rng = np.random.default_rng(0)
    a, b, c = rng.integers(-8, 8, (2, 3)), rng.integers(-8, 8, (3, 4)), rng.integers(-8, 8, (4, 2))
    m, v = rng.integers(-8, 8, (4, 3)), rng.integers(-8, 8, 3)
    result = run(parse(PROGRAM), [a, b, c, m, v])
    product, vector = result.outputs
    np.testing.assert_array_equal(product, matmul(matmul(a.tolist(), b.tolist()), c.tolist()))
    np.testing.assert_array_equal(vector, [sum(x * y for x, y in zip(row, v, strict=True)) for row in m.tolist()])
    # One layer (the acquired device); b, c and then m (transposed, over b) are written on crossbars.
    ((layer),) = result.layers
    assert layer["layer"] == "layer"
    assert layer["writes"] == 3 and layer["mvms"] == 3


def test_weights_already_on_a_crossbar_are_not_written_again():
    a, b = np.ones((2, 3), int), np.arange(12).reshape(3, 4)
    result = run(parse(PROGRAM), [a, b, np.zeros((4, 2)), b.T, [1, 1, 1]])  # m.T is b: x holds it already
    assert result.layers[0]["writes"] == 2


def test_acquiring_more_crossbars_than_the_device_has_names_the_op_and_its_place():
    device = preset("ideal").replace(crossbars=1)
    second = "%y = cim.acquire_crossbar %layer_dev : !cim.deviceId -> !cim.crossbarId"
    module = parse(PROGRAM.replace(second, second + ' loc("p.mlir":5:3)'))
    with pytest.raises(InterpretationError) as error:
        run(module, [np.zeros((2, 3)), np.zeros((3, 4)), np.zeros((4, 2)), np.zeros((4, 3)), np.zeros(3)], device)
    assert str(error.value) == (
        "p.mlir:5:3: 'cim.acquire_crossbar': the program acquires more crossbars than the device has (1)"
    )


def test_cim_run_reports_a_run_time_error_as_one_line_with_the_place(tmp_path, capsys):
    path = tmp_path / "two.mlir"
    path.write_text(PROGRAM)
    device = tmp_path / "one.toml"
    device.write_text('preset = "ideal"\ncrossbars = 1\n')
    with pytest.raises(SystemExit) as exit:
        cim_run.main([str(path), "--random-inputs", "--device", str(device)])
    assert exit.value.code == 1
    error = capsys.readouterr().err
    assert error == (
        f"cim-run: error: {path}:5:3: 'cim.acquire_crossbar': the program acquires more crossbars than the device has (1)\n"
    )
