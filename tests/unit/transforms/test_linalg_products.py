"""`linalg.matvec` and a `linalg.generic` that is a matrix product (the forms `mlir-opt` users write)
give NumPy's result when interpreted, and the same result after `linalg-to-cinm` and through the
whole memristor flow on the exact device."""

from pathlib import Path

import numpy as np
import pytest

from cimxdsl.interpreters import run
from tests.unit.helpers import apply, parse

PRODUCTS = (Path(__file__).parents[2] / "filecheck" / "transforms" / "linalg-to-cinm.mlir").read_text()
GENERIC = PRODUCTS[PRODUCTS.index("#mk = affine_map") :]
MATVEC = PRODUCTS[PRODUCTS.index("func.func @matvec") : PRODUCTS.index("// CHECK-LABEL: func.func @matvec")]

FLOWS = ["linalg-to-cinm", "linalg-to-cinm,tile{rows=4 cols=3},cinm-to-cim{crossbars=2},schedule-asap"]


def generic_inputs(rng: np.random.Generator) -> list[np.ndarray]:
    a, b, c, v = (rng.standard_normal(shape).astype(np.float32) for shape in ((4, 6), (6, 5), (4, 5), (6,)))
    ai, bi = rng.integers(-128, 128, (4, 6)).astype(np.int32), rng.integers(-128, 128, (6, 5)).astype(np.int32)
    return [a, b, c, v, ai, bi]


EPS = np.finfo(np.float32).eps


def generic_reference(a, b, c, v, ai, bi) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """The six results of `@generic` from NumPy alone (the last is the max over k of `c` and
    `a + b`), each with the bound of its float32 rounding: a k-term sum of products is within
    k·ε·Σ|terms| (integers are exact)."""
    a64, b64, c64, v64 = (x.astype(np.float64) for x in (a, b, c, v))
    k = a.shape[1]
    mm, size = a64 @ b64, np.abs(a64) @ np.abs(b64)
    plus = (c64 + mm, k * EPS * (size + np.abs(c64)))
    sums = a64[:, :, None] + b64[None, :, :]
    maximum = np.maximum(c64, sums.max(axis=1))
    return [
        (mm, k * EPS * size),
        plus,
        plus,
        (a64 @ v64, k * EPS * (np.abs(a64) @ np.abs(v64))),
        (ai.astype(np.int64) @ bi, None),
        (maximum, EPS * (np.abs(c64) + np.abs(sums).max(axis=1))),
    ]


def check(got: list, want: list[tuple[np.ndarray, np.ndarray | None]], where: str) -> None:
    """Integers bitwise, floats within their bound."""
    for index, (g, (w, bound)) in enumerate(zip(got, want, strict=True)):
        if bound is None:
            np.testing.assert_array_equal(g, w, err_msg=f"{where}: result {index}")
        else:
            assert np.all(np.abs(np.asarray(g, np.float64) - w) <= bound), f"{where}: result {index}"


@pytest.mark.parametrize("flow", ["", *FLOWS])
def test_generic_products_keep_their_values(flow):
    rng = np.random.default_rng(7)
    inputs = generic_inputs(rng)
    module = parse(GENERIC)
    if flow:
        apply(module, flow)
        names = {op.name for op in module.walk()}
        assert "linalg.generic" in names  # the max-plus generic stays on the host
        assert sum(op.name == "linalg.generic" for op in module.walk()) == 1
    got = run(module, inputs, "ideal", entry="generic").outputs
    check(got, generic_reference(*inputs), flow or "interpreted")


@pytest.mark.parametrize("flow", ["", *FLOWS, "memristor{device=ideal}"])
def test_matvec_keeps_its_values(flow):
    rng = np.random.default_rng(8)
    a, x, b = rng.integers(-128, 128, (5, 7)), rng.integers(-128, 128, 7), rng.integers(-999, 999, 5)
    a, x, b = (v.astype(np.int32) for v in (a, x, b))
    module = parse(MATVEC)
    if flow:
        apply(module, flow)
        assert not any(op.name == "linalg.matvec" for op in module.walk())
    got = run(module, [a, x, b], "ideal", entry="matvec").outputs
    want = a.astype(np.int64) @ x
    check(got, [(want, None), (want + b, None)], flow or "interpreted")


def test_generic_interpreter_transposes_and_reduces_with_the_body_op():
    """A parallel generic that transposes, and one reducing with `maxsi` along the first loop."""
    module = parse(
        """
        func.func @main(%x: tensor<3x4xi32>, %init: tensor<4x3xi32>, %acc: tensor<4xi32>) -> (tensor<4x3xi32>, tensor<4xi32>) {
          %t = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j, i)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<3x4xi32>) outs(%init : tensor<4x3xi32>) {
          ^bb0(%v: i32, %o: i32):
            %d = arith.addi %v, %v : i32
            linalg.yield %d : i32
          } -> tensor<4x3xi32>
          %m = linalg.generic {indexing_maps = [affine_map<(r, c) -> (r, c)>, affine_map<(r, c) -> (c)>], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<3x4xi32>) outs(%acc : tensor<4xi32>) {
          ^bb0(%v: i32, %o: i32):
            %s = arith.maxsi %o, %v : i32
            linalg.yield %s : i32
          } -> tensor<4xi32>
          return %t, %m : tensor<4x3xi32>, tensor<4xi32>
        }
        """
    )
    x = np.arange(-6, 6, dtype=np.int32).reshape(3, 4)
    acc = np.array([-100, 0, 100, 3], np.int32)
    transposed, maxima = run(module, [x, np.zeros((4, 3), np.int32), acc], "ideal").outputs
    np.testing.assert_array_equal(transposed, 2 * x.T)
    np.testing.assert_array_equal(maxima, np.maximum(acc, x.max(axis=0)))
