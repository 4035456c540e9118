"""`cim-to-memristor` writes what each product needs on its crossbar: a gemm stores its matrix as is, a
gemv stores its matrix transposed, so one matrix used by both is two different crossbar contents."""

import numpy as np
import pytest

from cimxdsl.dialects import memristor
from cimxdsl.interpreters import run
from tests.unit.helpers import apply, parse

STRATEGIES = ["asap", "alap", "list", "round-robin"]
T, V = "tensor<4x4xi32>", "tensor<4xi32>"


def gemm_and_gemv_on_one_matrix(gemv_first: bool) -> str:
    """`x·W` and `W·v` on the same square W in one compute (square, so either orientation fits)."""
    products = ["%p = cinm.op.gemm %x, %w : ({T}, {T}) -> {T}", "%q = cinm.op.gemv %w, %v : ({T}, {V}) -> {V}"]
    if gemv_first:
        products.reverse()
    body = "\n    ".join(p.format(T=T, V=V) for p in products)
    return f"""
    func.func @main(%x: {T}, %w: {T}, %v: {V}) -> ({T}, {V}) {{
      %r:2 = cinm.compute -> {T}, {V} {{
        {body}
        cinm.yield %p, %q : {T}, {V}
      }}
      func.return %r#0, %r#1 : {T}, {V}
    }}
    """


@pytest.mark.parametrize("gemv_first", [False, True])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_gemm_and_gemv_on_one_matrix_on_one_crossbar(strategy: str, gemv_first: bool):
    rng = np.random.default_rng(3)
    x, w, v = (rng.integers(-8, 8, shape).astype(np.int32) for shape in [(4, 4), (4, 4), (4,)])
    module = apply(
        parse(gemm_and_gemv_on_one_matrix(gemv_first)),
        f"cinm-to-cim{{crossbars=1}},schedule-{strategy},cim-to-memristor",
    )
    product, matvec = run(module, [x, w, v], "ideal").outputs
    np.testing.assert_array_equal(product, x @ w)
    np.testing.assert_array_equal(matvec, w @ v)
    # one crossbar, two contents: W for the gemm, Wᵀ for the gemv
    assert len([op for op in module.walk() if isinstance(op, memristor.WriteToCrossbarOp)]) == 2
