// RUN: cim-opt %s -p linalg-to-cinm | filecheck %s
// RUN: cim-opt %s -p 'linalg-to-cinm{placement=crossbar}' | filecheck %s --check-prefix=XBAR
// RUN: cim-opt %s -p 'memristor{device=ideal placement=host}' | filecheck %s --check-prefix=HOST-FLOW
// RUN: cim-opt %s -p 'memristor{device=ideal placement=crossbar}' | filecheck %s --check-prefix=XBAR-FLOW
// RUN: not cim-opt %s -p 'linalg-to-cinm{placement=gpu}' 2>&1 | filecheck %s --check-prefix=BAD

// Attention's Q·Kᵀ for two heads: a product of two run-time tensors.
func.func @scores(%q: tensor<2x4x3xf32>, %k: tensor<2x3x4xf32>) -> tensor<2x4x4xf32> {
  %e = tensor.empty() : tensor<2x4x4xf32>
  %s = linalg.batch_matmul ins(%q, %k : tensor<2x4x3xf32>, tensor<2x3x4xf32>) outs(%e : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %s : tensor<2x4x4xf32>
}

// One compute per product, one gemm per head, placed on the host by default.
// CHECK:      %s = cinm.compute attributes {cimxdsl.placement = "host"} -> tensor<2x4x4xf32> {
// CHECK-NEXT:   %[[Q0:.*]] = tensor.extract_slice %q[0, 0, 0] [1, 4, 3] [1, 1, 1] : tensor<2x4x3xf32> to tensor<4x3xf32>
// CHECK-NEXT:   %[[K0:.*]] = tensor.extract_slice %k[0, 0, 0] [1, 3, 4] [1, 1, 1] : tensor<2x3x4xf32> to tensor<3x4xf32>
// CHECK-NEXT:   %[[P0:.*]] = cinm.op.gemm %[[Q0]], %[[K0]] : (tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:   %[[Q1:.*]] = tensor.extract_slice %q[1, 0, 0] [1, 4, 3] [1, 1, 1] : tensor<2x4x3xf32> to tensor<4x3xf32>
// CHECK-NEXT:   %[[K1:.*]] = tensor.extract_slice %k[1, 0, 0] [1, 3, 4] [1, 1, 1] : tensor<2x3x4xf32> to tensor<3x4xf32>
// CHECK-NEXT:   %[[P1:.*]] = cinm.op.gemm %[[Q1]], %[[K1]] : (tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:   %[[ROWS:.*]] = tensor.concat dim(0) %[[P0]], %[[P1]] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:   %[[ALL:.*]] = tensor.expand_shape %[[ROWS]] {{\[}}[0 : i64, 1 : i64], [2 : i64]] output_shape [2, 4, 4] : tensor<8x4xf32> into tensor<2x4x4xf32>
// CHECK-NEXT:   cinm.yield %[[ALL]] : tensor<2x4x4xf32>
// CHECK-NEXT: }
// CHECK-NOT:  linalg.batch_matmul

// XBAR: cinm.compute attributes {cimxdsl.placement = "crossbar"}
// XBAR-COUNT-2: cinm.op.gemm

// On the host the products end as `linalg.matmul`s that keep the placement and their layer (the
// interpreter counts them on the digital unit); no cinm op is left.
// HOST-FLOW-NOT: cinm.
// HOST-FLOW:     linalg.matmul {cimxdsl.placement = "host", cimxdsl.layer = "s", cimxdsl.layer_product = array<i64: 0, 2>}
// HOST-FLOW:     linalg.matmul {cimxdsl.placement = "host", cimxdsl.layer = "s", cimxdsl.layer_product = array<i64: 1, 2>}
// HOST-FLOW-NOT: memristor_write_to_crossbar
// HOST-FLOW-NOT: cinm.

// On crossbars each head's Kᵀ is written before its product.
// XBAR-FLOW-NOT: cinm.compute
// XBAR-FLOW:     func.call @memristor_write_to_crossbar_f32
// XBAR-FLOW:     func.call @memristor_gemm_f32
// XBAR-FLOW:     func.call @memristor_write_to_crossbar_f32
// XBAR-FLOW:     func.call @memristor_gemm_f32

// BAD: linalg-to-cinm: option 'placement' must be one of host, crossbar, auto, got 'gpu'
