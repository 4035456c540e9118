"""`tile{mode=loop}` and `cinm-unroll-loops`: the loop form gives the same results as the unrolled
form and as NumPy, at every stage, on sizes at and across tile edges (tile sizes that must divide
them) and on more than one device."""

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cimxdsl.interpreters import run
from cimxdsl.transforms.memristor.tile_loops import fitting_divisor
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
    product = (
        f"cinm.op.gemm %x, %w plus %b : {x}, {w} plus {c} -> {c}" if bias else f"cinm.op.gemm %x, %w : {x}, {w} -> {c}"
    )
    vector = (
        f"cinm.op.gemv %wt, %v plus %d : {wt}, {v} plus {g} -> {g}"
        if bias
        else f"cinm.op.gemv %wt, %v : {wt}, {v} -> {g}"
    )
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
    module = parse(gemm_and_gemv(m, k, n, bias))
    stages = {  # each applied to the module the one before left
        "loops": f"tile{{rows={tile} cols={tile} mode=loop}}",
        "unrolled": "cinm-unroll-loops",
        "crossbars": "cinm-to-cim{crossbars=3},schedule-asap,cim-to-memristor,memristor-to-func",
    }
    for stage, spec in stages.items():
        outputs = run(apply(module, spec), inputs, "ideal").outputs
        for got, want in zip(outputs, expected, strict=True):
            np.testing.assert_array_equal(got, want, err_msg=stage)


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


REDUCE = {"add": np.sum, "mul": np.prod, "max": np.max, "min": np.min}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shape=st.sampled_from([(12,), (3, 16), (2, 9, 4), (24, 5)]),
    axis=st.integers(0, 2),
    method=st.sampled_from(sorted(REDUCE)),
    window=st.sampled_from([2, 3, 4, 8]),
    seed=st.integers(0, 2**16),
)
def test_reduce_in_loops_equals_numpy_at_every_stage(shape, axis, method, window, seed):
    """A reduce over one dimension becomes window reductions and one more over their results;
    windows of the crossbar's rows (`rows=window`) that divide the dimension or not."""
    axis %= len(shape)
    x = np.random.default_rng(seed).integers(-3, 4, shape)
    kept = [s for d, s in enumerate(shape) if d != axis]
    result = f"tensor<{'x'.join(map(str, kept))}xi32>" if kept else "i32"
    source = f"tensor<{'x'.join(map(str, shape))}xi32>"
    text = f"""
    func.func @main(%x: {source}) -> {result} {{
      %r = cinm.compute -> {result} {{
        %a = cinm.op.reduce {method} (%x) {{dimensions = array<i64: {axis}>}} : {source} -> {result}
        cinm.yield %a : {result}
      }}
      func.return %r : {result}
    }}
    """
    expected = REDUCE[method](x, axis=axis)
    looped = apply(parse(text), f"tile{{rows={window} mode=loop}}")
    windows = shape[axis] // fitting_divisor(shape[axis], window)
    assert sum(op.name == "affine.for" for op in looped.walk()) == (windows > 1)
    np.testing.assert_array_equal(run(looped, [x], "ideal").outputs[0], expected)
    unrolled = apply(looped, "cinm-unroll-loops")
    np.testing.assert_array_equal(run(unrolled, [x], "ideal").outputs[0], expected)


GEMM_WITH_SIZES = """
func.func @main(%x: tensor<8x64xi32>, %w: tensor<64x32xi32>) -> tensor<8x32xi32> {
  %r = cinm.compute -> tensor<8x32xi32> {
    %p = cinm.op.gemm %x, %w {cinm.tile_sizes = array<i64: SIZES>} : tensor<8x64xi32>, tensor<64x32xi32> -> tensor<8x32xi32>
    cinm.yield %p : tensor<8x32xi32>
  }
  func.return %r : tensor<8x32xi32>
}
"""


def test_explicit_tile_sizes_set_the_loop_steps():
    """`cinm.tile_sizes = [M, N, K]` (Cinnamon's later tiling) gives the steps of the three loops,
    even for a product that fits one crossbar; the result is unchanged."""
    rng = np.random.default_rng(3)
    x, w = rng.integers(-8, 8, (8, 64)), rng.integers(-8, 8, (64, 32))
    module = apply(parse(GEMM_WITH_SIZES.replace("SIZES", "4, 16, 32")), "tile{mode=loop}")
    steps = re.findall(r"affine.for %\S+ = 0 to (\d+) step (\d+)", str(module))
    assert steps == [("8", "4"), ("32", "16"), ("64", "32")]
    for spec in ("tile{mode=loop}", "tile{mode=loop},cinm-unroll-loops,cinm-to-cim,schedule-asap,cim-to-memristor"):
        got = run(apply(parse(GEMM_WITH_SIZES.replace("SIZES", "4, 16, 32")), spec), [x, w], "ideal").outputs[0]
        np.testing.assert_array_equal(got, x @ w)


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        ("4, 16", "must be an array of 3 integers"),
        ("4, 16, 48", "48 must divide 64"),
        ("8, 32, 256", "256 must divide 64"),
    ],
)
def test_bad_tile_sizes_are_one_line_errors(sizes, message):
    from xdsl.utils.exceptions import PassFailedException

    with pytest.raises(PassFailedException, match=message) as error:
        apply(parse(GEMM_WITH_SIZES.replace("SIZES", sizes)), "tile{mode=loop}")
    assert "\n" not in str(error.value)
