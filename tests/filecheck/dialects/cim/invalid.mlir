// RUN: cim-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

func.func @gemm_lhs_rhs_types(%x: !cim.crossbarId, %a: tensor<6x3xi32>, %b: tensor<3x6xi16>) {
  %f = cim.op.gemm %x, %a, %b : !cim.crossbarId, tensor<6x3xi32>, tensor<3x6xi16> -> !cim.future<6x6xi32>
  return
}
// CHECK: lhs and rhs must have the same element type

// -----

func.func @gemm_result_type(%x: !cim.crossbarId, %a: tensor<6x3xi32>, %b: tensor<3x6xi32>) {
  %f = cim.op.gemm %x, %a, %b : !cim.crossbarId, tensor<6x3xi32>, tensor<3x6xi32> -> !cim.future<6x6xf32>
  return
}
// CHECK: operands and result must have the same element type

// -----

func.func @gemm_operand_rank(%x: !cim.crossbarId, %a: tensor<3xi32>, %b: tensor<3x6xi32>) {
  %f = cim.op.gemm %x, %a, %b : !cim.crossbarId, tensor<3xi32>, tensor<3x6xi32> -> !cim.future<1x6xi32>
  return
}
// CHECK: lhs and rhs must be matrices (rank 2)

// -----

func.func @gemm_result_rank(%x: !cim.crossbarId, %a: tensor<6x3xi32>, %b: tensor<3x6xi32>) {
  %f = cim.op.gemm %x, %a, %b : !cim.crossbarId, tensor<6x3xi32>, tensor<3x6xi32> -> !cim.future<36xi32>
  return
}
// CHECK: result must be a matrix (rank 2)

// -----

func.func @gemm_shapes(%x: !cim.crossbarId, %a: tensor<6x3xi32>, %b: tensor<4x6xi32>) {
  %f = cim.op.gemm %x, %a, %b : !cim.crossbarId, tensor<6x3xi32>, tensor<4x6xi32> -> !cim.future<6x6xi32>
  return
}
// CHECK: operands and result must have compatible shapes

// -----

func.func @gemv_ranks(%x: !cim.crossbarId, %a: tensor<6x3xi32>, %b: tensor<3x6xi32>) {
  %f = cim.op.gemv %x, %a, %b : !cim.crossbarId, tensor<6x3xi32>, tensor<3x6xi32> -> !cim.future<6xi32>
  return
}
// CHECK: lhs must be a matrix (rank 2) and rhs must be a vector (rank 1)

// -----

func.func @gemv_result_rank(%x: !cim.crossbarId, %a: tensor<6x3xi32>, %v: tensor<3xi32>) {
  %f = cim.op.gemv %x, %a, %v : !cim.crossbarId, tensor<6x3xi32>, tensor<3xi32> -> !cim.future<6x1xi32>
  return
}
// CHECK: result must be a vector (rank 1)

// -----

func.func @gemv_shapes(%x: !cim.crossbarId, %a: tensor<6x3xi32>, %v: tensor<3xi32>) {
  %f = cim.op.gemv %x, %a, %v : !cim.crossbarId, tensor<6x3xi32>, tensor<3xi32> -> !cim.future<3xi32>
  return
}
// CHECK: operands and result must have compatible shapes

// -----

func.func @gemv_element_types(%x: !cim.crossbarId, %a: tensor<6x3xi32>, %v: tensor<3xi8>) {
  %f = cim.op.gemv %x, %a, %v : !cim.crossbarId, tensor<6x3xi32>, tensor<3xi8> -> !cim.future<6xi32>
  return
}
// CHECK: lhs and rhs must have the same element type

// -----

func.func @barrier_type(%f: !cim.future<6x6xi32>) {
  %r = cim.barrier %f : !cim.future<6x6xi32> -> tensor<6x5xi32>
  return
}
// CHECK: 'cim.barrier' result type tensor<6x5xi32> does not match the future !cim.future<6x6xi32>

// -----

func.func @no_crossbars() {
  %d = cim.acquire_device {availableCrossbarCount = 0 : i32} -> !cim.deviceId
  return
}
// CHECK: 'cim.acquire_device' needs at least one crossbar (availableCrossbarCount >= 1)

// -----

func.func @dynamic_future(%f: !cim.future<?x6xi32>) {
  return
}
// CHECK: 'cim.future' dimensions must be static
