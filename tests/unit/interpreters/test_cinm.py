"""The cinm interpreter functions, op by op, against NumPy references."""

import math
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pytest
from xdsl.utils.exceptions import InterpretationError

from cimxdsl.dialects.cinm import ElementwiseKind, ReduceMethod, ScanMethod, SimilarityMetric
from cimxdsl.interpreters import run
from tests.unit.helpers import parse
from tests.unit.interpreters.programs import run_main


def test_gemm_in_a_compute_accumulates_int8_products_in_int32():
    rng = np.random.default_rng(0)
    a, b = rng.integers(-128, 128, (3, 5)), rng.integers(-128, 128, (5, 4))
    (out,) = run_main(
        "%a: tensor<3x5xi8>, %b: tensor<5x4xi8>",
        """%r = cinm.compute -> tensor<3x4xi32> {
             %g = cinm.op.gemm %a, %b : (tensor<3x5xi8>, tensor<5x4xi8>) -> tensor<3x4xi32>
             cinm.yield %g : tensor<3x4xi32>
           }
           func.return %r : tensor<3x4xi32>""",
        "tensor<3x4xi32>",
        a,
        b,
    )
    expected = [[sum(int(a[i, k]) * int(b[k, j]) for k in range(5)) for j in range(4)] for i in range(3)]
    np.testing.assert_array_equal(out, expected)
    assert out.dtype == np.int32


def test_gemm_with_bias():
    a, b, c = np.arange(6).reshape(2, 3), np.arange(12).reshape(3, 4) - 5, np.full((2, 4), 100)
    (out,) = run_main(
        "%a: tensor<2x3xi32>, %b: tensor<3x4xi32>, %c: tensor<2x4xi32>",
        """%g = cinm.op.gemm %a, %b plus %c : (tensor<2x3xi32>, tensor<3x4xi32>) -> tensor<2x4xi32>
           func.return %g : tensor<2x4xi32>""",
        "tensor<2x4xi32>",
        a,
        b,
        c,
    )
    expected = [[sum(a[i, k] * b[k, j] for k in range(3)) + 100 for j in range(4)] for i in range(2)]
    np.testing.assert_array_equal(out, expected)


def test_gemv_is_matrix_times_vector():
    m, v = np.arange(12).reshape(4, 3) - 6, np.array([2, -1, 3])
    (out,) = run_main(
        "%m: tensor<4x3xi8>, %v: tensor<3xi8>",
        """%g = cinm.op.gemv %m, %v : (tensor<4x3xi8>, tensor<3xi8>) -> tensor<4xi32>
           func.return %g : tensor<4xi32>""",
        "tensor<4xi32>",
        m,
        v,
    )
    np.testing.assert_array_equal(out, [sum(row * v) for row in m])


@pytest.mark.parametrize(
    ("op", "reference"),
    [
        ("add", lambda a, b: a + b),
        ("sub", lambda a, b: a - b),
        ("mul", lambda a, b: a * b),
        ("div", lambda a, b: [int(x / y) for x, y in zip(a, b, strict=True)]),  # truncates towards zero
    ],
)
def test_elementwise_binary_ops(op, reference):
    a, b = np.array([7, -7, 9, -9, 4]), np.array([2, 2, -4, -4, 5])
    t = "tensor<5xi32>"
    (tensor,) = run_main(f"%a: {t}, %b: {t}", f"%r = cinm.op.{op} %a, %b : {t}\nfunc.return %r : {t}", t, a, b)
    (scalar,) = run_main(
        f"%a: {t}, %s: i32", f"%r = cinm.op.{op}s %a, %s : {t}\nfunc.return %r : {t}", t, a, np.int32(-3)
    )
    np.testing.assert_array_equal(tensor, reference(a, b))
    np.testing.assert_array_equal(scalar, reference(a, np.full(5, -3)))


def test_float_division_is_not_truncated():
    t = "tensor<2xf32>"
    (out,) = run_main(f"%a: {t}, %b: {t}", f"%r = cinm.op.div %a, %b : {t}\nfunc.return %r : {t}", t, [7, -1], [2, 4])
    np.testing.assert_allclose(out, [3.5, -0.25])


def round_half_away(values):
    return [float(Decimal(float(v)).quantize(Decimal(1), ROUND_HALF_UP)) for v in values]


ELEMENTWISE_REFERENCE = {
    ElementwiseKind.EXP: lambda x: [math.exp(v) for v in x],
    ElementwiseKind.LOG: lambda x: [math.log(v) for v in x],
    ElementwiseKind.ABS: lambda x: [abs(v) for v in x],
    ElementwiseKind.CEIL: lambda x: [math.ceil(v) for v in x],
    ElementwiseKind.FLOOR: lambda x: [math.floor(v) for v in x],
    ElementwiseKind.NEGF: lambda x: [-v for v in x],
    ElementwiseKind.RECIPROCAL: lambda x: [1 / v for v in x],
    ElementwiseKind.ROUND: round_half_away,
    ElementwiseKind.SQRT: lambda x: [math.sqrt(v) for v in x],
    ElementwiseKind.RSQRT: lambda x: [1 / math.sqrt(v) for v in x],
    ElementwiseKind.SQUARE: lambda x: [v * v for v in x],
    ElementwiseKind.TANH: lambda x: [math.tanh(v) for v in x],
    ElementwiseKind.ERF: lambda x: [math.erf(v) for v in x],
}


@pytest.mark.parametrize("kind", list(ElementwiseKind))
def test_every_elementwise_kind_is_interpreted(kind):
    """Every member of the enum runs (a member without an implementation fails here)."""
    x = np.array([0.5, 1.5, 2.5, 0.25, 3.0, 2.375], np.float32)
    t = "tensor<6xf32>"
    (out,) = run_main(f"%x: {t}", f"%r = cinm.op.element_wise {kind.value} (%x) : {t}\nfunc.return %r : {t}", t, x)
    np.testing.assert_allclose(out, ELEMENTWISE_REFERENCE[kind]([float(v) for v in x]), rtol=1e-6)
    assert out.dtype == np.float32


def test_round_takes_halves_away_from_zero():
    x = np.array([-2.5, -0.5, 0.49999997, 1.5, -1.25], np.float32)
    t = "tensor<5xf32>"
    (out,) = run_main(f"%x: {t}", f"%r = cinm.op.element_wise round (%x) : {t}\nfunc.return %r : {t}", t, x)
    np.testing.assert_array_equal(out, [-3, -1, 0, 2, -1])


def as_u32(v: int) -> int:
    return v % 2**32


def as_i32(v: int) -> int:
    return v - 2**32 if v >= 2**31 else v


def number_max(r):
    return max(v for v in r if v == v)  # NaN is the one value unequal to itself


def number_min(r):
    return min(v for v in r if v == v)


REDUCE_REFERENCE = {
    ReduceMethod.ADD: lambda rows: [sum(r) for r in rows],
    ReduceMethod.MUL: lambda rows: [math.prod(r) for r in rows],
    ReduceMethod.MAX: lambda rows: [max(r) for r in rows],
    ReduceMethod.MIN: lambda rows: [min(r) for r in rows],
    ReduceMethod.MAXNUMF: lambda rows: [number_max(r) for r in rows],
    ReduceMethod.MINNUMF: lambda rows: [number_min(r) for r in rows],
    ReduceMethod.MAXSI: lambda rows: [max(r) for r in rows],
    ReduceMethod.MINSI: lambda rows: [min(r) for r in rows],
    ReduceMethod.MAXUI: lambda rows: [as_i32(max(as_u32(v) for v in r)) for r in rows],
    ReduceMethod.MINUI: lambda rows: [as_i32(min(as_u32(v) for v in r)) for r in rows],
}


@pytest.mark.parametrize("method", list(ReduceMethod))
def test_every_reduce_method_along_the_given_dimension(method):
    floats = method.value.endswith("f")
    element = "f32" if floats else "i32"
    x = np.array([[3, -1, 4], [1, 5, -9]], np.float32 if floats else np.int32)
    if floats:
        x[0, 1] = np.nan  # ignored by maxnumf/minnumf
    (last,) = run_main(
        f"%x: tensor<2x3x{element}>",
        f"%r = cinm.op.reduce {method.value} (%x) : tensor<2x3x{element}> -> tensor<2x{element}>\n"
        f"func.return %r : tensor<2x{element}>",
        f"tensor<2x{element}>",
        x,
    )
    (first,) = run_main(
        f"%x: tensor<2x3x{element}>",
        f"%r = cinm.op.reduce {method.value} (%x) {{dimensions = array<i64: 0>}} : tensor<2x3x{element}> -> "
        f"tensor<3x{element}>\nfunc.return %r : tensor<3x{element}>",
        f"tensor<3x{element}>",
        x,
    )
    rows = x.tolist() if floats else x.astype(int).tolist()
    np.testing.assert_array_equal(last, REDUCE_REFERENCE[method](rows))
    np.testing.assert_array_equal(first, REDUCE_REFERENCE[method]([list(c) for c in zip(*rows, strict=True)]))


def test_reduce_of_a_vector_to_a_scalar():
    (out,) = run_main(
        "%x: tensor<4xi32>",
        "%r = cinm.op.reduce add (%x) : tensor<4xi32> -> i32\nfunc.return %r : i32",
        "i32",
        [1, 2, 3, 4],
    )
    assert out == 10


SCAN_REFERENCE = {
    ScanMethod.ADD: lambda row: [sum(row[: i + 1]) for i in range(len(row))],
    ScanMethod.MUL: lambda row: [math.prod(row[: i + 1]) for i in range(len(row))],
}


@pytest.mark.parametrize("method", list(ScanMethod))
def test_every_scan_method_is_inclusive_along_the_last_dimension(method):
    x = np.array([[2, 3, -1, 4], [1, 1, 2, -2]])
    t = "tensor<2x4xi32>"
    (out,) = run_main(f"%x: {t}", f"%r = cinm.op.scan {method.value} (%x) : {t}\nfunc.return %r : {t}", t, x)
    np.testing.assert_array_equal(out, [SCAN_REFERENCE[method](row) for row in x.tolist()])


def test_top_k_values_and_indices():
    x = np.array([3, 9, -2, 9, 5])
    values, indices = run_main(
        "%x: tensor<5xi32>, %k: i64",
        """%v, %i = cinm.op.topK %k (%x) : tensor<5xi32> -> tensor<?xi32>, tensor<?xindex>
           func.return %v, %i : tensor<?xi32>, tensor<?xindex>""",
        "tensor<?xi32>, tensor<?xindex>",
        x,
        3,
    )
    np.testing.assert_array_equal(values, [9, 9, 5])
    np.testing.assert_array_equal(indices, [1, 3, 4])  # ties: the first index first


def test_top_k_beyond_the_input_names_the_op_and_its_place():
    module = parse(
        """func.func @main(%x: tensor<5xi32>, %k: i64) -> tensor<?xi32> {
             %v, %i = cinm.op.topK %k (%x) : tensor<5xi32> -> tensor<?xi32>, tensor<?xindex> loc("prog.mlir":2:14)
             func.return %v : tensor<?xi32>
           }"""
    )
    with pytest.raises(InterpretationError, match=r"^prog.mlir:2:14: 'cinm.op.topK': k = 6 is not in 0..5"):
        run(module, [np.arange(5), 6])


SIMILARITY_REFERENCE = {
    SimilarityMetric.DOT: lambda a, b: sum(x * y for x, y in zip(a, b, strict=True)),
    SimilarityMetric.COS: lambda a, b: (
        sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))
    ),
}


@pytest.mark.parametrize("metric", list(SimilarityMetric))
def test_every_similarity_metric_ranks_the_rows(metric):
    left, right = np.array([[1.0, 0.0], [3.0, 4.0], [0.0, -2.0]]), np.array([[1.0, 1.0]])
    t = "tensor<3x2xf32>"
    values, indices = run_main(
        f"%a: {t}, %b: {t}",
        f"""%v, %i = cinm.op.simSearch {metric.value} 3 (%a, %b) : {t}
            func.return %v, %i : tensor<?xf32>, tensor<?xindex>""",
        "tensor<?xf32>, tensor<?xindex>",
        left,
        np.repeat(right, 3, axis=0),
    )
    # Every right row is (1, 1): scores of left row i against the three right rows are equal.
    scores = [SIMILARITY_REFERENCE[metric](row, [1.0, 1.0]) for row in left.tolist() for _ in range(3)]
    order = sorted(range(9), key=lambda i: (-scores[i], i))[:3]
    np.testing.assert_allclose(values, [scores[i] for i in order], rtol=1e-6)
    np.testing.assert_array_equal(indices, order)


def test_im2col_rows_are_the_windows_in_channel_kernel_order():
    x = np.arange(2 * 2 * 5 * 5).reshape(2, 2, 5, 5)
    (out,) = run_main(
        "%x: tensor<2x2x5x5xi32>",
        """%c = cinm.op.im2col %x {kernel = array<i64: 2, 3>, strides = array<i64: 2, 1>, dilations = array<i64: 1, 2>}
             : tensor<2x2x5x5xi32> -> tensor<4x12xi32>
           func.return %c : tensor<4x12xi32>""",
        "tensor<4x12xi32>",
        x,
    )
    expected = [
        [x[n, c, 2 * oy + ky, ox + 2 * kx] for c in range(2) for ky in range(2) for kx in range(3)]
        for n in range(2)
        for oy in range(2)
        for ox in range(1)
    ]
    np.testing.assert_array_equal(out, expected)


def test_quantize_rounds_clamps_and_scales_per_channel():
    x = np.array([[0.3, -2.0, 1.0], [0.26, 9.0, -9.0]], np.float32)
    signed, unsigned = run_main(
        "%x: tensor<2x3xf32>",
        """%s = cinm.op.quantize %x {scale = dense<[0.1, 1.0]> : tensor<2xf32>, axis = 0 : i64, bits = 4 : i64}
             : tensor<2x3xf32> -> tensor<2x3xi8>
           %u = cinm.op.quantize %x {scale = dense<0.5> : tensor<f32>, bits = 3 : i64, signed = false}
             : tensor<2x3xf32> -> tensor<2x3xi8>
           func.return %s, %u : tensor<2x3xi8>, tensor<2x3xi8>""",
        "tensor<2x3xi8>, tensor<2x3xi8>",
        x,
    )
    # Row 0 / 0.1 = (3, -20, 10) and row 1 / 1 = (0.26, 9, -9), each clamped to ±7.
    np.testing.assert_array_equal(signed, [[3, -7, 7], [0, 7, -7]])
    # / 0.5 = (0.6, -4, 2), (0.52, 18, -18), clamped to 0..7.
    np.testing.assert_array_equal(unsigned, [[1, 0, 2], [1, 7, 0]])


def test_dequantize_scales_per_channel():
    (out,) = run_main(
        "%x: tensor<2x2xi32>",
        """%d = cinm.op.dequantize %x {scale = dense<[0.5, 0.25]> : tensor<2xf32>} : tensor<2x2xi32> -> tensor<2x2xf32>
           func.return %d : tensor<2x2xf32>""",
        "tensor<2x2xf32>",
        [[2, 4], [-8, 1]],
    )
    np.testing.assert_allclose(out, [[1.0, 1.0], [-4.0, 0.25]])


def transpose_program(perm: str) -> str:
    return f"""func.func @main(%x: tensor<2x3x4xi32>) -> tensor<4x2x3xi32> {{
      %p = arith.constant dense<{perm}> : tensor<3xi32>
      %t = "cinm.op.transpose"(%x, %p) : (tensor<2x3x4xi32>, tensor<3xi32>) -> tensor<4x2x3xi32> loc("t.mlir":3:7)
      func.return %t : tensor<4x2x3xi32>
    }}"""


def test_transpose_permutes_the_dimensions():
    x = np.arange(24).reshape(2, 3, 4)
    (out,) = run(parse(transpose_program("[2, 0, 1]")), [x]).outputs
    assert out.shape == (4, 2, 3)
    assert all(out[k, i, j] == x[i, j, k] for i in range(2) for j in range(3) for k in range(4))


def test_transpose_by_a_non_permutation_names_the_op_and_its_place():
    with pytest.raises(
        InterpretationError, match=r"^t.mlir:3:7: 'cinm.op.transpose': \[2, 0, 0\] is not a permutation"
    ):
        run(parse(transpose_program("[2, 0, 0]")), [np.zeros((2, 3, 4))])


def test_pop_count_counts_the_set_bits():
    (out,) = run_main(
        "%b: tensor<6xi1>",
        '%p = "cinm.op.popCount"(%b) : (tensor<6xi1>) -> i64\nfunc.return %p : i64',
        "i64",
        np.array([1, 0, 1, 1, 0, 1], bool),
    )
    assert out == 4


def test_buffer_form_gemm_adds_the_product_and_bias_into_its_buffer():
    """Cinnamon's buffer form: `out += a·b (+ bias)`; two products into one buffer add up."""
    rng = np.random.default_rng(4)
    a, b = rng.integers(-9, 9, (3, 4)), rng.integers(-9, 9, (4, 2))
    c, start = rng.integers(-9, 9, (3, 2)), rng.integers(-9, 9, (3, 2))
    (out,) = run_main(
        "%a: memref<3x4xi32>, %b: memref<4x2xi32>, %c: memref<3x2xi32>, %o: memref<3x2xi32>",
        """cinm.op.gemm %a, %b into %o : memref<3x4xi32>, memref<4x2xi32> into memref<3x2xi32>
           cinm.op.gemm %a, %b plus %c into %o : memref<3x4xi32>, memref<4x2xi32> plus memref<3x2xi32> into memref<3x2xi32>
           func.return %o : memref<3x2xi32>""",
        "memref<3x2xi32>",
        a,
        b,
        c,
        start.copy(),
    )
    expected = [[start[i, j] + 2 * sum(a[i, k] * b[k, j] for k in range(4)) + c[i, j] for j in range(2)] for i in range(3)]
    np.testing.assert_array_equal(out, expected)


def test_buffer_form_gemv_and_elementwise_write_their_buffers():
    m, v = np.arange(12).reshape(3, 4) - 5, np.array([1, -2, 0, 3])
    x = np.array([0.5, -1.0, 2.0])
    gemv, product, exp = run_main(
        "%m: memref<3x4xi32>, %v: memref<4xi32>, %x: memref<3xf32>",
        """%g = memref.alloc() : memref<3xi32>
           %z = arith.constant 0 : i32
           linalg.fill ins(%z : i32) outs(%g : memref<3xi32>)
           cinm.op.gemv %m, %v into %g : memref<3x4xi32>, memref<4xi32> into memref<3xi32>
           %p = memref.alloc() : memref<3xf32>
           cinm.op.elementwise mul %x, %x into %p : memref<3xf32> into memref<3xf32>
           %e = memref.alloc() : memref<3xf32>
           cinm.op.elementwise exp %x into %e : memref<3xf32> into memref<3xf32>
           func.return %g, %p, %e : memref<3xi32>, memref<3xf32>, memref<3xf32>""",
        "memref<3xi32>, memref<3xf32>, memref<3xf32>",
        m,
        v,
        x,
    )
    np.testing.assert_array_equal(gemv, [sum(int(m[i, k]) * int(v[k]) for k in range(4)) for i in range(3)])
    np.testing.assert_array_equal(product, [0.25, 1.0, 4.0])
    np.testing.assert_allclose(exp, [math.exp(0.5), math.exp(-1.0), math.exp(2.0)], rtol=1e-6)
