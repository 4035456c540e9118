"""Prepared execution computes what the plain xDSL interpreter computes, bit for bit, with the same
metrics, at every stage of the pipeline and on every device preset."""

import numpy as np
import pytest

import cimxdsl
from cimxdsl.api import STAGES
from cimxdsl.device import Device, preset
from cimxdsl.interpreters import Program, build_interpreter, entry_function
from cimxdsl.interpreters.prepared import PreparedFunction
from cimxdsl.interpreters.runtime import CrossbarRuntime
from cimxdsl.interpreters.values import as_type
from tests.unit.helpers import parse

DIGITS = "examples/digits_cnn.onnx"

DEVICES = {
    "ideal": ("exact", preset("ideal")),
    "cinnamon": ("int8", preset("cinnamon")),
    "isaac": ("int8", preset("isaac").replace(crossbars=4)),
    "puma": ("int8", preset("puma")),
    "prime": ("int8", preset("prime")),
    "noisy": ("int8", preset("cinnamon").replace(prog_noise=0.1, read_noise=0.05, stuck_on_rate=0.01, seed=3)),
}


def interpreted(module, inputs, device: Device):
    """Today's run: xDSL's `Interpreter.call_op` on the function, every op dispatched by xDSL."""
    function = entry_function(module, "main")
    runtime = CrossbarRuntime(device)
    interpreter = build_interpreter(module, runtime, release_dead_values=True)
    types = function.function_type.inputs.data
    outputs = interpreter.call_op(function, tuple(as_type(x, t) for x, t in zip(inputs, types, strict=True)))
    device.sync()
    return [np.asarray(o) for o in outputs], runtime.layers


@pytest.fixture(scope="module", params=sorted(DEVICES))
def compiled(request):
    mode, config = DEVICES[request.param]
    calibration = np.load("examples/digits_train.npz")["inputs"][:8]
    return cimxdsl.compile(DIGITS, device=config, mode=mode, calibration=calibration, batch=2, crossbars=4)


@pytest.mark.parametrize("stage", STAGES)
def test_prepared_runs_equal_the_interpreter(compiled, stage):
    """Two inputs in a row on one device (the second run finds weights resident): the same outputs,
    layers and metrics, per crossbar, as the interpreter gives on a device of its own."""
    if stage not in compiled.stages:
        pytest.skip(f"exact mode has no '{stage}' stage")
    module = compiled.module(stage)
    images = np.load("examples/digits_test.npz")["inputs"]
    program = Program(module, Device(compiled.device))
    reference = Device(compiled.device)
    for batch in (images[:2], images[2:4]):
        program.device.reset_metrics()
        reference.reset_metrics()
        ours = program([batch.astype(np.float32)])
        outputs, layers = interpreted(module, [batch.astype(np.float32)], reference)
        for mine, theirs in zip(ours.outputs, outputs, strict=True):
            assert mine.dtype == theirs.dtype
            np.testing.assert_array_equal(mine, theirs)
        assert ours.layers == layers
        assert program.device.report() == reference.report()


def test_constants_are_evaluated_once_and_shared_read_only():
    module = parse("""
    func.func @main(%x: tensor<2xi32>) -> tensor<2xi32> {
      %c = arith.constant dense<[1, 2]> : tensor<2xi32>
      %s = arith.constant dense<[2]> : tensor<1xi64>
      %r = tensor.reshape %c(%s) : (tensor<2xi32>, tensor<1xi64>) -> tensor<2xi32>
      %y = arith.addi %x, %r : tensor<2xi32>
      func.return %y : tensor<2xi32>
    }
    """)
    function = entry_function(module, "main")
    prepared = PreparedFunction(build_interpreter(module, Device("ideal")), function)
    assert [step.op.name for step in prepared.steps] == ["arith.addi", "func.return"]
    constants = [c for c in prepared.constants if c is not None]
    assert len(constants) == 3 and not any(c.flags.writeable for c in constants if isinstance(c, np.ndarray))
    for x in ([1, 1], [5, -7]):
        (y,) = prepared((np.array(x, np.int32),))
        np.testing.assert_array_equal(y, np.array(x) + [1, 2])


def test_values_are_released_after_their_last_use():
    """As in `lifetimes`: the run's slots hold only what later ops still need."""
    module = parse("""
    func.func @main(%x: tensor<2xi32>) -> tensor<2xi32> {
      %a = arith.addi %x, %x : tensor<2xi32>
      %b = arith.muli %a, %a : tensor<2xi32>
      func.return %b : tensor<2xi32>
    }
    """)
    prepared = PreparedFunction(build_interpreter(module, Device("ideal")), entry_function(module, "main"))
    add, mul, _ = prepared.steps
    assert add.released == add.operands[:1]  # %x, after the add
    assert mul.released == mul.operands[:1]  # %a, after the mul
