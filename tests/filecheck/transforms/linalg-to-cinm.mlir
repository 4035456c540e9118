// RUN: cim-opt %s -p linalg-to-cinm | filecheck %s

func.func @layers(%x: tensor<4x300xi32>, %w: tensor<300x200xi32>, %b: tensor<4x200xi32>) -> tensor<4x200xi32> {
  %e = tensor.empty() : tensor<4x200xi32>
  %y = linalg.matmul ins(%x, %w : tensor<4x300xi32>, tensor<300x200xi32>) outs(%e : tensor<4x200xi32>) -> tensor<4x200xi32>
  %z = linalg.matmul ins(%x, %w : tensor<4x300xi32>, tensor<300x200xi32>) outs(%b : tensor<4x200xi32>) -> tensor<4x200xi32>
  %s = arith.addi %y, %z : tensor<4x200xi32>
  return %s : tensor<4x200xi32>
}

// One compute per layer; a fresh `outs` means no bias, any other `outs` is the bias.
// CHECK:      %y = cinm.compute -> tensor<4x200xi32> {
// CHECK-NEXT:   %{{.*}} = cinm.op.gemm %x, %w : (tensor<4x300xi32>, tensor<300x200xi32>) -> tensor<4x200xi32>
// CHECK-NEXT:   cinm.yield %{{.*}} : tensor<4x200xi32>
// CHECK-NEXT: }
// CHECK-NEXT: %z = cinm.compute -> tensor<4x200xi32> {
// CHECK-NEXT:   %{{.*}} = cinm.op.gemm %x, %w plus %b : (tensor<4x300xi32>, tensor<300x200xi32>) -> tensor<4x200xi32>
// CHECK-NEXT:   cinm.yield %{{.*}} : tensor<4x200xi32>
// CHECK-NEXT: }
// CHECK-NEXT: %s = arith.addi %y, %z : tensor<4x200xi32>
// CHECK-NOT:  linalg.matmul

// -----

func.func @zero_filled(%x: tensor<2x3xf32>, %w: tensor<3x5xf32>) -> tensor<2x5xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x5xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x5xf32>) -> tensor<2x5xf32>
  %y = linalg.matmul ins(%x, %w : tensor<2x3xf32>, tensor<3x5xf32>) outs(%f : tensor<2x5xf32>) -> tensor<2x5xf32>
  return %y : tensor<2x5xf32>
}

// CHECK-LABEL: func.func @zero_filled
// CHECK:       cinm.op.gemm %x, %w : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
