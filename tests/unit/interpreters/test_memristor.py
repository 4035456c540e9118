"""The memristor interpreter functions: the ops and the runtime functions they lower to
(`memristor-to-func`) run on the device model."""

import numpy as np
import pytest
from xdsl.utils.exceptions import InterpretationError

from cimxdsl.device import preset
from cimxdsl.dialects import memristor
from cimxdsl.interpreters import run
from cimxdsl.interpreters.memristor import runtime_op
from tests.unit.helpers import apply, parse

PROGRAM = """func.func @main(%w: memref<3x4xi8>, %a: memref<2x3xi8>, %v: memref<3xi8>) -> (memref<2x4xi32>, memref<4xi32>) {
  %t = arith.constant {tile} : index
  %u = arith.constant 0 : index
  memristor.write_to_crossbar %t, %w : index, memref<3x4xi8>
  %c = memref.alloc() : memref<2x4xi32>
  memristor.gemm %u, %a, %c : index, memref<2x3xi8>, memref<2x4xi32>
  memristor.barrier %u : index
  %d = memref.alloc() : memref<4xi32>
  memristor.gevm %u, %v, %d : index, memref<3xi8>, memref<4xi32>
  memristor.barrier %u : index
  func.return %c, %d : memref<2x4xi32>, memref<4xi32>
}"""

RNG = np.random.default_rng(0)
W, A, V = RNG.integers(-100, 100, (3, 4)), RNG.integers(-100, 100, (2, 3)), RNG.integers(-100, 100, 3)


def expected():
    gemm = [[sum(int(A[i, k]) * int(W[k, j]) for k in range(3)) for j in range(4)] for i in range(2)]
    gevm = [sum(int(V[k]) * int(W[k, j]) for k in range(3)) for j in range(4)]
    return gemm, gevm


@pytest.mark.parametrize("lowered", [False, True], ids=["ops", "runtime-calls"])
def test_products_with_the_written_matrix(lowered):
    module = parse(PROGRAM.replace("{tile}", "0"))
    if lowered:
        module = apply(module, "memristor-to-func")
        assert "memristor_gemm_i8_i32" in str(module)
    gemm, gevm = run(module, [W, A, V]).outputs
    reference_gemm, reference_gevm = expected()
    np.testing.assert_array_equal(gemm, reference_gemm)
    np.testing.assert_array_equal(gevm, reference_gevm)
    assert gemm.dtype == np.int32


def test_tile_ids_beyond_the_device_wrap_around():
    """Tile 16 of the 16-crossbar ideal device is crossbar 0, which the products read."""
    gemm, _ = run(parse(PROGRAM.replace("{tile}", "16")), [W, A, V], "ideal").outputs
    np.testing.assert_array_equal(gemm, expected()[0])


def test_every_memristor_op_has_a_runtime_function():
    for op_type in memristor.Memristor.operations:
        assert runtime_op(op_type.name.replace(".", "_") + "_i8_i32") is op_type
    assert runtime_op("memristor_gemmx_i32") is None


def test_an_unknown_runtime_function_names_the_call_and_its_place():
    module = parse(
        """func.func private @memristor_reset(index) -> ()
           func.func @main() -> () {
             %t = arith.constant 0 : index
             func.call @memristor_reset(%t) : (index) -> () loc("low.mlir":4:14)
             func.return
           }"""
    )
    with pytest.raises(InterpretationError) as error:
        run(module, [])
    assert str(error.value) == "low.mlir:4:14: 'func.call': unknown crossbar runtime function 'memristor_reset'"


def test_a_device_error_names_the_op_and_its_place():
    """The device model's errors (plain ValueErrors) are reported as the failing op's."""
    gemm = "memristor.gemm %u, %a, %c : index, memref<2x3xi8>, memref<2x4xi32>"
    module = parse(PROGRAM.replace("{tile}", "0").replace(gemm, gemm + ' loc("low.mlir":6:3)'))
    with pytest.raises(InterpretationError) as error:
        run(module, [W // 8, A, V], preset("cinnamon").replace(input_bits=2))  # weights fit, inputs do not
    assert str(error.value).startswith("low.mlir:6:3: 'memristor.gemm': crossbar 0: input ")
