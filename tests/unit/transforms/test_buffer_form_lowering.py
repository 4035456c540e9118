"""Cinnamon's main-branch buffer form through the memristor flow: cinm products adding into memrefs,
and cim ops on memrefs, give the same values before and after lowering."""

import numpy as np
import pytest

from cimxdsl.dialects import cim, memristor
from cimxdsl.interpreters import run
from xdsl.utils.exceptions import PassFailedException
from tests.unit.helpers import apply, parse

GEMMS = """
func.func @main(%a: memref<3x4xi32>, %b: memref<4x2xi32>, %c: memref<3x2xi32>, %m: memref<2x4xi32>, %v: memref<4xi32>) -> (memref<3x2xi32>, memref<2xi32>) {
  %o = memref.alloc() : memref<3x2xi32>
  %g = memref.alloc() : memref<2xi32>
  %z = arith.constant 0 : i32
  linalg.fill ins(%z : i32) outs(%o : memref<3x2xi32>)
  linalg.fill ins(%z : i32) outs(%g : memref<2xi32>)
  cinm.op.gemm %a, %b plus %c into %o : memref<3x4xi32>, memref<4x2xi32> plus memref<3x2xi32> into memref<3x2xi32>
  cinm.op.gemm %a, %b into %o : memref<3x4xi32>, memref<4x2xi32> into memref<3x2xi32>
  cinm.op.gemv %m, %v into %g : memref<2x4xi32>, memref<4xi32> into memref<2xi32>
  return %o, %g : memref<3x2xi32>, memref<2xi32>
}
"""


def inputs(seed: int = 5):
    rng = np.random.default_rng(seed)
    shapes = [(3, 4), (4, 2), (3, 2), (2, 4), (4,)]
    return [rng.integers(-9, 9, s).astype(np.int32) for s in shapes]


@pytest.mark.parametrize("strategy", ["asap", "list"])
def test_buffer_form_products_lower_and_run_on_crossbars(strategy: str):
    a, b, c, m, v = inputs()
    lowered = apply(parse(GEMMS), f"memristor{{strategy={strategy} crossbars=2}}")
    assert not [op for op in lowered.walk() if op.dialect_name() in ("cinm", "cim", "memristor")]
    outputs = run(lowered, [a, b, c, m, v], "ideal").outputs
    np.testing.assert_array_equal(outputs[0], 2 * (a.astype(np.int64) @ b) + c)
    np.testing.assert_array_equal(outputs[1], m.astype(np.int64) @ v)


def test_cim_ops_on_memrefs_schedule_and_lower():
    """Cinnamon's `schedule-asap-undersaturated` shape: cim ops on memrefs, barriers giving memrefs."""
    text = """
    func.func @main(%a: memref<6x3xi32>, %b: memref<3x6xi32>) -> memref<6x6xi32> {
      %d = cim.acquire_device {availableCrossbarCount = 2 : i32} -> !cim.deviceId
      %x = cim.acquire_crossbar %d : !cim.deviceId -> !cim.crossbarId
      %f0 = cim.op.gemm %x, %a, %b : !cim.crossbarId, memref<6x3xi32>, memref<3x6xi32> -> !cim.future<6x6xi32>
      %r0 = cim.barrier %f0 : !cim.future<6x6xi32> -> memref<6x6xi32>
      %f1 = cim.op.gemm %x, %r0, %r0 : !cim.crossbarId, memref<6x6xi32>, memref<6x6xi32> -> !cim.future<6x6xi32>
      %r1 = cim.barrier %f1 : !cim.future<6x6xi32> -> memref<6x6xi32>
      cim.release_crossbar %x : !cim.crossbarId
      cim.release_device %d : !cim.deviceId
      return %r1 : memref<6x6xi32>
    }
    """
    rng = np.random.default_rng(6)
    a, b = rng.integers(-4, 4, (6, 3)).astype(np.int32), rng.integers(-4, 4, (3, 6)).astype(np.int32)
    expected = (a.astype(np.int64) @ b) @ (a.astype(np.int64) @ b)
    scheduled = apply(parse(text), "cim-schedule-asap")
    barriers = [op for op in scheduled.walk() if isinstance(op, cim.BarrierOp)]
    assert barriers and all(str(op.result.type).startswith("memref") for op in barriers)
    np.testing.assert_array_equal(run(scheduled, [a, b], "ideal").outputs[0], expected)
    lowered = apply(scheduled, "cim-to-memristor")
    assert [op for op in lowered.walk() if isinstance(op, memristor.GemmOp)]
    assert not [op for op in lowered.walk() if op.name.startswith("bufferization")]
    np.testing.assert_array_equal(run(lowered, [a, b], "ideal").outputs[0], expected)


def test_a_buffer_form_product_larger_than_a_crossbar_is_a_clear_error():
    with pytest.raises(PassFailedException, match="on memrefs .* is not tiled and its 4x2 weights do not fit a 2x2 crossbar"):
        apply(parse(GEMMS), "cinm-isolate-compute,tile{rows=2 cols=2}")


def test_element_wise_buffer_ops_in_a_compute_stay_on_the_host():
    text = """
    func.func @main(%a: memref<2x3xi32>, %b: memref<3x2xi32>) -> memref<2x2xi32> {
      %o = memref.alloc() : memref<2x2xi32>
      %z = arith.constant 0 : i32
      linalg.fill ins(%z : i32) outs(%o : memref<2x2xi32>)
      cinm.compute {
        cinm.op.gemm %a, %b into %o : memref<2x3xi32>, memref<3x2xi32> into memref<2x2xi32>
        cinm.op.elementwise mul %o, %o into %o : memref<2x2xi32> into memref<2x2xi32>
        cinm.yield
      }
      return %o : memref<2x2xi32>
    }
    """
    rng = np.random.default_rng(7)
    a, b = rng.integers(-5, 5, (2, 3)).astype(np.int32), rng.integers(-5, 5, (3, 2)).astype(np.int32)
    lowered = apply(parse(text), "memristor")
    assert not [op.name for op in lowered.walk() if op.dialect_name() == "cinm"]
    assert [op.name for op in lowered.walk() if op.name == "linalg.map"] == ["linalg.map"]  # cinm-to-linalg's
    np.testing.assert_array_equal(run(lowered, [a, b], "ideal").outputs[0], (a.astype(np.int64) @ b) ** 2)
