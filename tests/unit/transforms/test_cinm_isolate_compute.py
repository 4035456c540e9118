"""`cinm-isolate-compute`: stray cinm ops are offloaded, with the same results before and after."""

import numpy as np
import pytest

from cimxdsl.interpreters import run
from tests.unit.helpers import apply, parse

STRAY = """
func.func @main(%a: tensor<5x9xi32>, %b: tensor<9x3xi32>, %v: tensor<9xi32>) -> (tensor<5x3xi32>, tensor<5xi32>) {
  %r = cinm.op.gemm %a, %b : (tensor<5x9xi32>, tensor<9x3xi32>) -> tensor<5x3xi32>
  %s = cinm.op.add %r, %r : tensor<5x3xi32>
  %g = cinm.op.gemv %a, %v : (tensor<5x9xi32>, tensor<9xi32>) -> tensor<5xi32>
  func.return %s, %g : tensor<5x3xi32>, tensor<5xi32>
}
"""


@pytest.mark.parametrize("device", ["ideal", "cinnamon"])
def test_stray_ops_run_on_crossbars_with_the_same_results(device):
    rng = np.random.default_rng(3)
    a, b, v = rng.integers(-3, 4, (5, 9)), rng.integers(-3, 4, (9, 3)), rng.integers(-3, 4, 9)
    expected = [2 * (a @ b), a @ v]
    before = run(parse(STRAY), [a, b, v], device)
    assert before.device.metrics["total"]["mvms"] == 0  # interpreted on the host: nothing offloaded
    lowered = apply(parse(STRAY), f'memristor{{device="{device}" crossbars=2}}')
    after = run(lowered, [a, b, v], device)
    for got_before, got_after, want in zip(before.outputs, after.outputs, expected, strict=True):
        np.testing.assert_array_equal(got_before, want)
        np.testing.assert_array_equal(got_after, want)
    assert after.device.metrics["total"]["mvms"] > 0


MAIN_BRANCH = """
func.func @main(%X: tensor<3x20xi32>, %W: tensor<20x7xi32>, %b: tensor<3x7xi32>, %v: tensor<20xi32>, %M: tensor<5x20xi32>) -> (tensor<3x7xi32>, tensor<5xi32>) {
  %q = cinm.op.gemm %X, %W plus %b : tensor<3x20xi32>, tensor<20x7xi32> plus tensor<3x7xi32> -> tensor<3x7xi32>
  %r:2 = cinm.compute -> tensor<3x7xi32>, tensor<5xi32> attributes {workgroupShape = array<i64: 1, 4, 1>} {
    %p = cinm.op.gemm %X, %W : tensor<3x20xi32>, tensor<20x7xi32> -> tensor<3x7xi32>
    %s = cinm.op.elementwise sub %p, %b : tensor<3x7xi32>
    %u = cinm.op.gemv %M, %v : tensor<5x20xi32>, tensor<20xi32> -> tensor<5xi32>
    cinm.yield %s, %u : tensor<3x7xi32>, tensor<5xi32>
  }
  %t = cinm.op.elementwise add %q, %r#0 : tensor<3x7xi32>
  func.return %t, %r#1 : tensor<3x7xi32>, tensor<5xi32>
}
"""


@pytest.mark.parametrize("device", ["ideal", "cinnamon"])
def test_a_program_in_cinnamons_main_branch_syntax_lowers_and_runs(device):
    rng = np.random.default_rng(5)
    x, w, b = rng.integers(-3, 4, (3, 20)), rng.integers(-3, 4, (20, 7)), rng.integers(-9, 9, (3, 7))
    v, m = rng.integers(-3, 4, 20), rng.integers(-3, 4, (5, 20))
    expected = [2 * (x @ w), m @ v]  # (xW + b) + (xW - b)
    lowered = apply(parse(MAIN_BRANCH), f'memristor{{device="{device}" crossbars=3}}')
    result = run(lowered, [x, w, b, v, m], device)
    for got, want in zip(result.outputs, expected, strict=True):
        np.testing.assert_array_equal(got, want)
    assert result.device.metrics["total"]["mvms"] > 0


COMPUTE_BLOCK = """
func.func @main(%x: tensor<4x40xi32>, %w: tensor<40x6xi32>, %m: tensor<9x40xi32>, %v: tensor<40xi32>, %c: tensor<9xi32>)
    -> (tensor<4x6xi32>, tensor<9xi32>) {
  %r:2 = cinm.compute_block (%a = %x : tensor<4x40xi32>, %b = %w : tensor<40x6xi32>, %n = %m : tensor<9x40xi32>,
                             %u = %v : tensor<40xi32>, %d = %c : tensor<9xi32>) -> tensor<4x6xi32>, tensor<9xi32> {
    %g = cinm.op.gemm %a, %b : tensor<4x40xi32>, tensor<40x6xi32> -> tensor<4x6xi32>
    %h = cinm.op.gemv %n, %u plus %d : tensor<9x40xi32>, tensor<40xi32> plus tensor<9xi32> -> tensor<9xi32>
    cinm.yield %g, %h : tensor<4x6xi32>, tensor<9xi32>
  }
  func.return %r#0, %r#1 : tensor<4x6xi32>, tensor<9xi32>
}
"""


@pytest.mark.parametrize("tiling", ["unroll", "loop"])
def test_a_compute_block_runs_before_and_after_the_memristor_flow(tiling):
    rng = np.random.default_rng(8)
    x, w, m = rng.integers(-8, 8, (4, 40)), rng.integers(-8, 8, (40, 6)), rng.integers(-8, 8, (9, 40))
    v, c = rng.integers(-8, 8, 40), rng.integers(-99, 100, 9)  # 4-bit values: the cinnamon preset's
    inputs, expected = [x, w, m, v, c], [x @ w, m @ v + c]
    before = run(parse(COMPUTE_BLOCK), inputs)
    lowered = apply(parse(COMPUTE_BLOCK), f'memristor{{device="cinnamon" crossbars=2 tiling={tiling}}}')
    after = run(lowered, inputs, "cinnamon")
    for got_before, got_after, want in zip(before.outputs, after.outputs, expected, strict=True):
        np.testing.assert_array_equal(got_before, want)
        np.testing.assert_array_equal(got_after, want)
    assert after.device.metrics["total"]["mvms"] > 0
