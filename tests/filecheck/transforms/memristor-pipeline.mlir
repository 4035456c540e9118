// The whole memristor flow on a 300x200 by 200x300 product for 128x128 crossbars (one cell per
// weight): K in 2 pieces (128, 72), N in 3 (128, 128, 44): 6 tiles, each written once, on 4 crossbars.
// RUN: cim-opt %s -p 'linalg-to-cinm,tile{rows=128 cols=128},cinm-to-cim{crossbars=4},schedule-asap,cim-to-memristor,memristor-to-func' | filecheck %s
// RUN: cim-opt %s -p 'memristor{device=cinnamon crossbars=4}' | filecheck %s --check-prefix=NAMED
// RUN: cim-opt %S/../../../examples/mlp.mlir -p 'linalg-to-cinm,tile{rows=128 cols=128},cinm-to-cim,schedule-asap,cim-to-memristor,memristor-to-func' | filecheck %s --check-prefix=MLP

func.func @main(%a: tensor<300x200xi32>, %b: tensor<200x300xi32>) -> tensor<300x300xi32> {
  %e = tensor.empty() : tensor<300x300xi32>
  %y = linalg.matmul ins(%a, %b : tensor<300x200xi32>, tensor<200x300xi32>) outs(%e : tensor<300x300xi32>) -> tensor<300x300xi32>
  return %y : tensor<300x300xi32>
}

// CHECK-DAG:     func.func nested @memristor_write_to_crossbar_i32(i32, memref<?x?xi32>) -> ()
// CHECK-DAG:     func.func nested @memristor_gemm_i32(i32, memref<?x?xi32>, memref<?x?xi32>) -> ()
// CHECK-DAG:     func.func nested @memristor_barrier(i32) -> ()
// CHECK-LABEL: func.func @main
// CHECK-COUNT-6: func.call @memristor_write_to_crossbar_i32
// CHECK-NOT:     func.call @memristor_write_to_crossbar_i32
// CHECK-NOT:     cinm.
// CHECK-NOT:     cim.op

// NAMED-NOT: linalg.matmul
// NAMED:     func.call @memristor_write_to_crossbar_i32
// NAMED:     func.call @memristor_gemm_i32
// NAMED-NOT: cinm.op.gemm

// Two layers, each its own device; the host ReLU and requantization stay between them.
// MLP-COUNT-1: func.call @memristor_gemm_i32
// MLP:         arith.maxsi
// MLP:         arith.shrsi
// MLP:         func.call @memristor_gemm_i32
// MLP-NOT:     cinm.
