// RUN: cim-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @compute_without_yield(%c: tensor<2xi32>) {
  %r = "cinm.compute"() ({
    "test.termop"() : () -> ()
  }) : () -> tensor<2xi32>
  return
}
// CHECK: 'cinm.compute' body must end with 'cinm.yield'

// -----

func.func @compute_yield_mismatch(%c: tensor<2xi32>) {
  %r = cinm.compute -> tensor<3xi32> {
    cinm.yield %c : tensor<2xi32>
  }
  return
}
// CHECK: 'cinm.compute' yields (tensor<2xi32>) but has results (tensor<3xi32>)

// -----

func.func @yield_outside_compute(%c: tensor<2xi32>) {
  cinm.yield %c : tensor<2xi32>
}
// CHECK: 'cinm.yield' expects parent op to be one of 'cinm.compute', 'cinm.compute_block'

// -----

func.func @gemm_rank(%a: tensor<6xi32>, %b: tensor<6x2xi32>) {
  %d = "cinm.op.gemm"(%a, %b) : (tensor<6xi32>, tensor<6x2xi32>) -> tensor<1x2xi32>
  return
}
// CHECK: 'cinm.op.gemm' operands and result must be matrices (rank 2)

// -----

func.func @gemm_element_types(%a: tensor<2x3xi32>, %b: tensor<3x2xi16>) {
  %d = cinm.op.gemm %a, %b : (tensor<2x3xi32>, tensor<3x2xi16>) -> tensor<2x2xi32>
  return
}
// CHECK: 'cinm.op.gemm' left and right must have the same element type

// -----

func.func @gemm_narrow_result(%a: tensor<2x3xi32>, %b: tensor<3x2xi32>) {
  %d = cinm.op.gemm %a, %b : (tensor<2x3xi32>, tensor<3x2xi32>) -> tensor<2x2xi8>
  return
}
// CHECK: 'cinm.op.gemm' result element type i8 cannot hold products of i32 (it must be the same type or a wider integer)

// -----

func.func @gemm_inner(%a: tensor<6x4xi32>, %b: tensor<5x22xi32>) {
  %d = cinm.op.gemm %a, %b : (tensor<6x4xi32>, tensor<5x22xi32>) -> tensor<6x22xi32>
  return
}
// CHECK: 'cinm.op.gemm' inner dimensions differ: left is 6x4, right is 5x22

// -----

func.func @gemm_result_shape(%a: tensor<6x4xi32>, %b: tensor<4x22xi32>) {
  %d = cinm.op.gemm %a, %b : (tensor<6x4xi32>, tensor<4x22xi32>) -> tensor<6x21xi32>
  return
}
// CHECK: 'cinm.op.gemm' result must be 6x22, got 6x21

// -----

func.func @gemm_bias_type(%a: tensor<6x4xi32>, %b: tensor<4x22xi32>, %c: tensor<6x21xi32>) {
  %d = "cinm.op.gemm"(%a, %b, %c) : (tensor<6x4xi32>, tensor<4x22xi32>, tensor<6x21xi32>) -> tensor<6x22xi32>
  return
}
// CHECK: 'cinm.op.gemm' bias type tensor<6x21xi32> must be the result type tensor<6x22xi32>

// -----

func.func @gemv_ranks(%a: tensor<6x4xi32>, %b: tensor<4x2xi32>) {
  %d = "cinm.op.gemv"(%a, %b) : (tensor<6x4xi32>, tensor<4x2xi32>) -> tensor<6xi32>
  return
}
// CHECK: 'cinm.op.gemv' left must be a matrix (rank 2) and right a vector (rank 1)

// -----

func.func @gemv_result_rank(%a: tensor<6x4xi32>, %v: tensor<4xi32>) {
  %d = "cinm.op.gemv"(%a, %v) : (tensor<6x4xi32>, tensor<4xi32>) -> tensor<6x1xi32>
  return
}
// CHECK: 'cinm.op.gemv' result must be a vector (rank 1)

// -----

func.func @gemv_element_types(%a: tensor<6x4xi32>, %v: tensor<4xi8>) {
  %d = cinm.op.gemv %a, %v : (tensor<6x4xi32>, tensor<4xi8>) -> tensor<6xi32>
  return
}
// CHECK: 'cinm.op.gemv' left and right must have the same element type

// -----

func.func @gemv_narrow_result(%a: tensor<6x4xi32>, %v: tensor<4xi32>) {
  %d = cinm.op.gemv %a, %v : (tensor<6x4xi32>, tensor<4xi32>) -> tensor<6xf32>
  return
}
// CHECK: 'cinm.op.gemv' result element type f32 cannot hold products of i32

// -----

func.func @gemv_inner(%a: tensor<6x4xi32>, %v: tensor<3xi32>) {
  %d = cinm.op.gemv %a, %v : (tensor<6x4xi32>, tensor<3xi32>) -> tensor<6xi32>
  return
}
// CHECK: 'cinm.op.gemv' inner dimensions differ: matrix is 6x4, vector has 3

// -----

// Cinnamon infers the vector's type here; the result has the matrix's row count.
func.func @gemv_result_is_matrix_rows(%a: tensor<6x4xi32>, %v: tensor<4xi32>) {
  %d = cinm.op.gemv %a, %v : (tensor<6x4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return
}
// CHECK: 'cinm.op.gemv' result must have 6 elements (the matrix rows), got 4

// -----

func.func @binary_types(%a: tensor<2xi32>, %b: tensor<3xi32>) {
  %d = "cinm.op.add"(%a, %b) : (tensor<2xi32>, tensor<3xi32>) -> tensor<2xi32>
  return
}
// CHECK: attribute tensor<2xi32> expected from variable 'T', but got tensor<3xi32>

// -----

func.func @scalar_type(%a: tensor<2xi32>, %s: i64) {
  %d = "cinm.op.muls"(%a, %s) : (tensor<2xi32>, i64) -> tensor<2xi32>
  return
}
// CHECK: 'cinm.op.muls' rhs must have the element type of lhs (i32), got i64

// -----

func.func @scalar_result(%a: tensor<2xi32>, %s: i32) {
  %d = "cinm.op.adds"(%a, %s) : (tensor<2xi32>, i32) -> tensor<3xi32>
  return
}
// CHECK: 'cinm.op.adds' result type must match lhs type tensor<2xi32>

// -----

func.func @reduce_rank0(%a: tensor<i32>) {
  %d = cinm.op.reduce add (%a) : tensor<i32> -> i32
  return
}
// CHECK: 'cinm.op.reduce' input must have rank 1 or more

// -----

func.func @reduce_dim(%a: tensor<4x2xi32>) {
  %d = cinm.op.reduce add (%a) {dimensions = array<i64: 2>} : tensor<4x2xi32> -> tensor<4xi32>
  return
}
// CHECK: 'cinm.op.reduce' dimension 2 is out of range for rank 2

// -----

func.func @reduce_type(%a: tensor<4xi32>) {
  %d = cinm.op.reduce add (%a) : tensor<4xi32> -> f32
  return
}
// CHECK: 'cinm.op.reduce' result element type f32 must match the input's i32

// -----

func.func @topk_values(%a: tensor<4xi32>, %k: i64) {
  %v, %i = cinm.op.topK %k (%a) : tensor<4xi32> -> tensor<?xf32>, tensor<?xindex>
  return
}
// CHECK: 'cinm.op.topK' values must have the input's element type

// -----

func.func @topk_indices(%a: tensor<4xi32>, %k: i64) {
  %v, %i = cinm.op.topK %k (%a) : tensor<4xi32> -> tensor<?xi32>, tensor<?xi32>
  return
}
// CHECK: 'cinm.op.topK' indices must be a tensor of index

// -----

func.func @simsearch_types(%a: tensor<4xi32>, %b: tensor<5xi32>) {
  %v, %i = "cinm.op.simSearch"(%a, %b) <{metric = #cinm<similarity_metric dot>, k = 2 : i64}> : (tensor<4xi32>, tensor<5xi32>) -> (tensor<?xi32>, tensor<?xindex>)
  return
}
// CHECK: 'cinm.op.simSearch' left and right must have the same type

// -----

func.func @popcount(%a: tensor<4xi32>) {
  %p = "cinm.op.popCount"(%a) : (tensor<4xi32>) -> i64
  return
}
// CHECK: 'cinm.op.popCount' operand must be a tensor of i1

// -----

func.func @im2col_rank(%x: tensor<4x8x8xi32>) {
  %a = cinm.op.im2col %x {kernel = array<i64: 3, 3>} : tensor<4x8x8xi32> -> tensor<36x36xi32>
  return
}
// CHECK: 'cinm.op.im2col' input must be an NCHW image (rank 4), got rank 3

// -----

func.func @im2col_geometry(%x: tensor<1x4x8x8xi32>) {
  %a = cinm.op.im2col %x {kernel = array<i64: 3, 0>} : tensor<1x4x8x8xi32> -> tensor<36x36xi32>
  return
}
// CHECK: 'cinm.op.im2col' kernel, strides and dilations must be two positive integers

// -----

func.func @im2col_too_big(%x: tensor<1x4x2x2xi32>) {
  %a = cinm.op.im2col %x {kernel = array<i64: 3, 3>} : tensor<1x4x2x2xi32> -> tensor<1x36xi32>
  return
}
// CHECK: 'cinm.op.im2col' kernel [3, 3] does not fit the 2x2 image

// -----

func.func @im2col_result(%x: tensor<1x4x8x8xi32>) {
  %a = cinm.op.im2col %x {kernel = array<i64: 3, 3>} : tensor<1x4x8x8xi32> -> tensor<36x35xi32>
  return
}
// CHECK: 'cinm.op.im2col' result must be 36x36 of i32, got tensor<36x35xi32>

// -----

func.func @reduce_float_method_on_integers(%x: tensor<4xi32>) {
  %r = cinm.op.reduce maxnumf (%x) : tensor<4xi32> -> i32
  return
}
// CHECK: 'cinm.op.reduce' method 'maxnumf' reduces floats, got tensor<4xi32>

// -----

func.func @reduce_integer_method_on_floats(%x: tensor<4xf32>) {
  %r = cinm.op.reduce maxsi (%x) : tensor<4xf32> -> f32
  return
}
// CHECK: 'cinm.op.reduce' method 'maxsi' reduces integers, got tensor<4xf32>

// -----

func.func @compute_block_argument_types(%x: tensor<4xi32>) -> tensor<4xi32> {
  %r = "cinm.compute_block"(%x) ({
  ^bb0(%a: tensor<5xi32>):
    %e = tensor.empty() : tensor<4xi32>
    cinm.yield %e : tensor<4xi32>
  }) : (tensor<4xi32>) -> tensor<4xi32>
  func.return %r : tensor<4xi32>
}
// CHECK: 'cinm.compute_block' body arguments must have the types of its operands

// -----

func.func @compute_block_isolated(%x: tensor<4xi32>) -> tensor<4xi32> {
  %r = cinm.compute_block (%a = %x : tensor<4xi32>) -> tensor<4xi32> {
    cinm.yield %x : tensor<4xi32>
  }
  func.return %r : tensor<4xi32>
}
// CHECK: Operation using value defined out of its IsolatedFromAbove parent

// -----

func.func @precision_out_of_range(%a: tensor<2x3xi32>, %b: tensor<3x4xi32>) -> tensor<2x4xi32> {
  %r = cinm.op.gemm %a, %b {weight_bits = 9 : i64, input_bits = 4 : i64} : (tensor<2x3xi32>, tensor<3x4xi32>) -> tensor<2x4xi32>
  return %r : tensor<2x4xi32>
}
// CHECK: 'cinm.op.gemm' weight_bits must be an integer from 1 to 8, got 9

// -----

func.func @precision_half_given(%a: tensor<2x3xi32>, %b: tensor<3x4xi32>) -> tensor<2x4xi32> {
  %r = cinm.op.gemm %a, %b {input_bits = 4 : i64} : (tensor<2x3xi32>, tensor<3x4xi32>) -> tensor<2x4xi32>
  return %r : tensor<2x4xi32>
}
// CHECK: 'cinm.op.gemm' has 'input_bits' without 'weight_bits'
