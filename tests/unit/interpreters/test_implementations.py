"""The interpreter functions of the dialects: one implementation per op, registered without override."""

import numpy as np
import pytest
from xdsl.dialects import arith
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from cimxdsl.device import Device
from cimxdsl.interpreters import build_interpreter, implementations
from cimxdsl.interpreters.runtime import CrossbarRuntime
from tests.unit.helpers import parse

LOWERED = """
func.func private @memristor_write_to_crossbar_i8(index, memref<3x4xi8>) -> ()
func.func private @memristor_barrier(index) -> ()
func.func @main(%w: memref<3x4xi8>) -> () {
  %t = arith.constant 0 : index
  func.call @memristor_write_to_crossbar_i8(%t, %w) : (index, memref<3x4xi8>) -> ()
  func.call @memristor_barrier(%t) : (index) -> ()
  func.return
}
"""


@register_impls
class SecondAddi(InterpreterFunctions):
    @impl(arith.AddiOp)
    def run_addi(self, interpreter: Interpreter, op: arith.AddiOp, args: PythonValues):
        return (args[0] + args[1],)


def test_no_two_classes_implement_one_op():
    """Registering every class without override succeeds: xDSL refuses an op implemented twice."""
    module = parse(LOWERED)
    interpreter = Interpreter(module)
    classes = implementations(module, CrossbarRuntime(Device("ideal")))
    for functions in classes:
        interpreter.register_implementations(functions)
    assert len({type(f) for f in classes}) == len(classes)


def test_an_op_implemented_twice_is_refused():
    interpreter = build_interpreter(parse(LOWERED), Device("ideal"))
    with pytest.raises(ValueError, match=r"AddiOp.*already registered"):
        interpreter.register_implementations(SecondAddi())


def test_runtime_calls_are_external_functions_of_the_declarations():
    """`func.call` of a `memristor_*` declaration runs through xDSL's `call_external`: the call
    writes the weights on the device."""
    module, device = parse(LOWERED), Device("ideal")
    interpreter = build_interpreter(module, device)
    weights = np.arange(12, dtype=np.int8).reshape(3, 4)
    assert not device.holds(0, weights)
    assert interpreter.call_op("main", (weights,)) == ()
    assert device.holds(0, weights)
    assert interpreter.call_external("memristor_barrier", module.body.block.first_op, (0,)) == ()
