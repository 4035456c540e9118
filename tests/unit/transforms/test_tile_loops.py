"""`tile{mode=loop}` and `cinm-unroll-loops`: the loop form gives the same results as the unrolled
form and as NumPy, at every stage, on sizes at and across tile edges (tile sizes that must divide
them) and on more than one device."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cimxdsl.interpreters import run
from cimxdsl.transforms.tile_loops import fitting_divisor
from tests.unit.helpers import apply, parse


def gemm_and_gemv(m: int, k: int, n: int, bias: bool) -> str:
    """A gemm and a gemv (both with or without bias) on the same weights, transposed, in one compute."""
    x, w, wt, c, v, g = (
        f"tensor<{m}x{k}xi32>",
        f"tensor<{k}x{n}xi32>",
        f"tensor<{n}x{k}xi32>",
        f"tensor<{m}x{n}xi32>",
        f"tensor<{k}xi32>",
        f"tensor<{n}xi32>",
    )
    product = f"cinm.op.gemm %x, %w plus %b : {x}, {w} plus {c} -> {c}" if bias else f"cinm.op.gemm %x, %w : {x}, {w} -> {c}"
    vector = f"cinm.op.gemv %wt, %v plus %d : {wt}, {v} plus {g} -> {g}" if bias else f"cinm.op.gemv %wt, %v : {wt}, {v} -> {g}"
    return f"""
    func.func @main(%x: {x}, %w: {w}, %wt: {wt}, %b: {c}, %v: {v}, %d: {g}) -> ({c}, {g}) {{
      %r:2 = cinm.compute -> {c}, {g} {{
        %p = {product}
        %q = {vector}
        cinm.yield %p, %q : {c}, {g}
      }}
      func.return %r#0, %r#1 : {c}, {g}
    }}
    """


def test_fitting_divisor_is_the_largest_divisor_within_the_limit():
    assert [fitting_divisor(s, 8) for s in (8, 12, 7, 1, 30, 64)] == [8, 6, 7, 1, 6, 8]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    m=st.integers(1, 5),
    k=st.sampled_from([3, 8, 9, 16, 24, 30]),
    n=st.sampled_from([4, 7, 8, 12, 20]),
    tile=st.sampled_from([4, 8]),
    bias=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_loop_tiling_equals_numpy_at_every_stage(m, k, n, tile, bias, seed):
    rng = np.random.default_rng(seed)
    x, w = rng.integers(-128, 128, (m, k)), rng.integers(-128, 128, (k, n))
    b, v, d = rng.integers(-1000, 1000, (m, n)), rng.integers(-128, 128, k), rng.integers(-1000, 1000, n)
    inputs = [x, w, w.T.copy(), b, v, d]
    expected = [x @ w + (b if bias else 0), w.T @ v + (d if bias else 0)]
    text = gemm_and_gemv(m, k, n, bias)
    stages = {
        "loops": f"tile{{rows={tile} cols={tile} mode=loop}}",
        "unrolled": f"tile{{rows={tile} cols={tile} mode=loop}},cinm-unroll-loops",
        "crossbars": f"tile{{rows={tile} cols={tile} mode=loop}},cinm-unroll-loops,cinm-to-cim{{crossbars=3}},"
        "schedule-asap,cim-to-memristor,memristor-to-func",
    }
    for spec in stages.values():
        outputs = run(apply(parse(text), spec), inputs, "ideal").outputs
        for got, want in zip(outputs, expected, strict=True):
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("device", ["ideal", "cinnamon"])
def test_the_memristor_pipeline_with_loop_tiling_equals_unrolled_tiling(device):
    rng = np.random.default_rng(11)
    m, k, n = 3, 300, 40
    x, w = rng.integers(-8, 8, (m, k)), rng.integers(-8, 8, (k, n))
    b, v, d = rng.integers(-50, 50, (m, n)), rng.integers(-8, 8, k), rng.integers(-50, 50, n)
    inputs = [x, w, w.T.copy(), b, v, d]
    text = gemm_and_gemv(m, k, n, bias=True)
    results = {}
    for tiling in ("unroll", "loop"):
        lowered = apply(parse(text), f'memristor{{device="{device}" crossbars=4 tiling={tiling}}}')
        result = run(lowered, inputs, device)
        results[tiling] = result
        np.testing.assert_array_equal(result.outputs[0], x @ w + b)
        np.testing.assert_array_equal(result.outputs[1], w.T @ v + d)
    assert results["loop"].device.metrics["total"]["mvms"] > 0
