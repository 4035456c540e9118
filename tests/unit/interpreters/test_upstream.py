"""Interpreter functions of the upstream ops cimxdsl adds (`dialects/upstream.py`), against NumPy."""

import numpy as np
import pytest
from xdsl.utils.exceptions import InterpretationError

from cimxdsl.interpreters import run
from tests.unit.helpers import parse

MAP = """
func.func @main(%a: tensor<3x4xf32>, %b: tensor<3x4xf32>, %init: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %sum = linalg.map ins(%a, %b : tensor<3x4xf32>, tensor<3x4xf32>) outs(%init : tensor<3x4xf32>)
    (%x: f32, %y: f32) {
      %two = arith.constant 2.0 : f32
      %t = arith.mulf %x, %two : f32
      %s = arith.addf %t, %y : f32
      linalg.yield %s : f32
    }
  %r = linalg.map { arith.mulf } ins(%sum, %b : tensor<3x4xf32>, tensor<3x4xf32>) outs(%init : tensor<3x4xf32>)
  func.return %r : tensor<3x4xf32>
}
"""

GENERATE = """
func.func @main(%n: index) -> tensor<?x3xi64> {
  %t = tensor.generate %n {
  ^bb0(%i: index, %j: index):
    %ten = arith.constant 10 : index
    %row = arith.muli %i, %ten : index
    %s = arith.addi %row, %j : index
    %v = arith.index_cast %s : index to i64
    tensor.yield %v : i64
  } : tensor<?x3xi64>
  func.return %t : tensor<?x3xi64>
}
"""

BUFFERS = """
func.func @main(%t: tensor<2x3xi32>, %m: memref<2x3xi32>) -> memref<2x3xi32> {
  %b = bufferization.to_memref %t : tensor<2x3xi32> to memref<2x3xi32>
  %d = memref.cast %b : memref<2x3xi32> to memref<?x?xi32>
  memref.copy %b, %m : memref<2x3xi32> to memref<2x3xi32>
  linalg.map ins(%m : memref<2x3xi32>) outs(%m : memref<2x3xi32>)
    (%x: i32) {
      %n = arith.subi %x, %x : i32
      %one = arith.constant 1 : i32
      %y = arith.subi %n, %x : i32
      %z = arith.addi %y, %one : i32
      linalg.yield %z : i32
    }
  func.return %m : memref<2x3xi32>
}
"""


def test_map_runs_its_body_on_every_element():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)
    (out,) = run(parse(MAP), [a, b, np.zeros((3, 4), np.float32)]).outputs
    np.testing.assert_allclose(out, (2 * a + b) * b, rtol=1e-6)
    assert out.dtype == np.float32 and out.shape == (3, 4)


def test_generate_gives_the_value_of_every_index_with_a_dynamic_extent():
    (out,) = run(parse(GENERATE), [4]).outputs
    expected = np.array([[10 * i + j for j in range(3)] for i in range(4)])
    np.testing.assert_array_equal(out, expected)
    assert out.dtype == np.int64


def test_to_memref_cast_copy_and_map_on_buffers():
    t = np.arange(6, dtype=np.int32).reshape(2, 3)
    m = np.full((2, 3), 99, np.int32)
    (out,) = run(parse(BUFFERS), [t, m]).outputs
    np.testing.assert_array_equal(out, 1 - t)


PRODUCTS = """
func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>, %t: tensor<6x3xf32>, %i: tensor<2x2x1xi64>)
    -> (tensor<2x3x5xf32>, tensor<2x2x3xf32>) {
  %c = tensor.empty() : tensor<2x3x5xf32>
  %p = linalg.batch_matmul ins(%a, %b : tensor<2x3x4xf32>, tensor<2x4x5xf32>) outs(%c : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %g = tensor.gather %t[%i] gather_dims([0]) unique : (tensor<6x3xf32>, tensor<2x2x1xi64>) -> tensor<2x2x3xf32>
  func.return %p, %g : tensor<2x3x5xf32>, tensor<2x2x3xf32>
}
"""


def test_batch_matmul_and_gather():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 3, 4)).astype(np.float32), rng.standard_normal((2, 4, 5)).astype(np.float32)
    table, rows = rng.standard_normal((6, 3)).astype(np.float32), np.array([[[5], [0]], [[2], [2]]])
    product, gathered = run(parse(PRODUCTS), [a, b, table, rows]).outputs
    np.testing.assert_allclose(product, np.einsum("bmk,bkn->bmn", a, b), rtol=1e-5)
    np.testing.assert_array_equal(gathered, table[rows[..., 0]])


def test_gather_out_of_range_names_the_op_and_the_index():
    rows = np.array([[[6], [0]], [[2], [2]]])
    with pytest.raises(InterpretationError) as error:
        run(parse(PRODUCTS), [np.zeros((2, 3, 4)), np.zeros((2, 4, 5)), np.zeros((6, 3)), rows])
    assert str(error.value).splitlines()[0] == "'tensor.gather': index 6 is out of range for dimension 0 of size 6"


HOST_OPS = """
func.func @main(%x: tensor<5xf32>, %n: tensor<5xi32>, %acc: tensor<5xf32>, %i: index) -> (tensor<5xf32>, tensor<5xi32>, tensor<5xf32>) {
  %init = tensor.empty() : tensor<5xf32>
  %m = linalg.map ins(%x : tensor<5xf32>) outs(%acc : tensor<5xf32>) (%v: f32, %o: f32) {
    %r = math.rsqrt %v : f32
    %c = math.cos %o : f32
    %s = math.sin %o : f32
    %cs = arith.mulf %c, %s : f32
    %y = arith.addf %r, %cs : f32
    linalg.yield %y : f32
  }
  %seven = arith.constant 7 : i32
  %sevens = tensor.splat %seven : tensor<5xi32>
  %a = math.absi %n : tensor<5xi32>
  %q = arith.remui %a, %sevens : tensor<5xi32>
  %three = arith.constant 3.0 : f32
  %t = tensor.insert %three into %m[%i] : tensor<5xf32>
  %u = bufferization.materialize_in_destination %t in %init : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  func.return %m, %q, %u : tensor<5xf32>, tensor<5xi32>, tensor<5xf32>
}
"""


def test_map_with_the_init_as_argument_and_host_math():
    rng = np.random.default_rng(2)
    x, acc = rng.uniform(0.5, 4, 5).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    n = np.array([-20, -3, 0, 9, 15], np.int32)
    mapped, remainders, inserted = run(parse(HOST_OPS), [x, n, acc, 2]).outputs
    np.testing.assert_allclose(mapped, 1 / np.sqrt(x) + np.cos(acc) * np.sin(acc), rtol=1e-5)
    np.testing.assert_array_equal(remainders, [6, 3, 0, 2, 1])
    np.testing.assert_allclose(inserted, [*mapped[:2], 3.0, *mapped[3:]])
