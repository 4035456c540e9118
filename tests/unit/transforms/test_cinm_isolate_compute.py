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
