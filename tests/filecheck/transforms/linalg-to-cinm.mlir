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

// -----

// A convolution becomes im2col + gemm with the FCHW weights as a (C·KH·KW)xF matrix, then NCHW again.
func.func @conv(%x: tensor<1x3x7x6xi32>, %w: tensor<4x3x3x2xi32>) -> tensor<1x4x3x5xi32> {
  %e = tensor.empty() : tensor<1x4x3x5xi32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<[1, 1]> : tensor<2xi64>, strides = dense<[2, 1]> : tensor<2xi64>} ins(%x, %w : tensor<1x3x7x6xi32>, tensor<4x3x3x2xi32>) outs(%e : tensor<1x4x3x5xi32>) -> tensor<1x4x3x5xi32>
  return %y : tensor<1x4x3x5xi32>
}

// CHECK-LABEL: func.func @conv
// CHECK:         %y = cinm.compute -> tensor<1x4x3x5xi32> {
// CHECK-NEXT:      %[[COLS:.*]] = cinm.op.im2col %x {kernel = array<i64: 3, 2>, strides = array<i64: 2, 1>} : tensor<1x3x7x6xi32> -> tensor<15x18xi32>
// CHECK-NEXT:      %[[FLAT:.*]] = tensor.collapse_shape %w {{.*}} : tensor<4x3x3x2xi32> into tensor<4x18xi32>
// CHECK-NEXT:      %[[E:.*]] = tensor.empty() : tensor<18x4xi32>
// CHECK-NEXT:      %[[WM:.*]] = linalg.transpose ins(%[[FLAT]]{{.*}}) outs(%[[E]]{{.*}}) permutation = [1, 0]
// CHECK-NEXT:      %[[G:.*]] = cinm.op.gemm %[[COLS]], %[[WM]] : (tensor<15x18xi32>, tensor<18x4xi32>) -> tensor<15x4xi32>
// CHECK-NEXT:      %[[NHWC:.*]] = tensor.expand_shape %[[G]] {{.*}} output_shape [1, 3, 5, 4] : tensor<15x4xi32> into tensor<1x3x5x4xi32>
// CHECK-NEXT:      %[[E2:.*]] = tensor.empty() : tensor<1x4x3x5xi32>
// CHECK-NEXT:      %[[NCHW:.*]] = linalg.transpose ins(%[[NHWC]]{{.*}}) outs(%[[E2]]{{.*}}) permutation = [0, 3, 1, 2]
// CHECK-NEXT:      cinm.yield %[[NCHW]] : tensor<1x4x3x5xi32>

// -----

// Constant weights are folded into a constant weight matrix outside the compute.
func.func @conv_constant(%x: tensor<1x1x3x3xi32>) -> tensor<1x2x2x2xi32> {
  %w = arith.constant dense<[[[[1, 2], [3, 4]]], [[[5, 6], [7, 8]]]]> : tensor<2x1x2x2xi32>
  %e = tensor.empty() : tensor<1x2x2x2xi32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<[1, 1]> : tensor<2xi64>, strides = dense<[1, 1]> : tensor<2xi64>} ins(%x, %w : tensor<1x1x3x3xi32>, tensor<2x1x2x2xi32>) outs(%e : tensor<1x2x2x2xi32>) -> tensor<1x2x2x2xi32>
  return %y : tensor<1x2x2x2xi32>
}

// CHECK-LABEL: func.func @conv_constant
// CHECK:         %[[WM:.*]] = arith.constant dense<{{\[}}[1, 5], [2, 6], [3, 7], [4, 8]]> : tensor<4x2xi32>
// CHECK-NEXT:    %y = cinm.compute
// CHECK-NEXT:      cinm.op.im2col
// CHECK-NEXT:      cinm.op.gemm %{{.*}}, %[[WM]] : (tensor<4x4xi32>, tensor<4x2xi32>) -> tensor<4x2xi32>

// -----

// `linalg.matvec` becomes a gemv, a fresh `outs` meaning no bias.
func.func @matvec(%a: tensor<5x7xi32>, %x: tensor<7xi32>, %b: tensor<5xi32>) -> (tensor<5xi32>, tensor<5xi32>) {
  %e = tensor.empty() : tensor<5xi32>
  %y = linalg.matvec ins(%a, %x : tensor<5x7xi32>, tensor<7xi32>) outs(%e : tensor<5xi32>) -> tensor<5xi32>
  %z = linalg.matvec ins(%a, %x : tensor<5x7xi32>, tensor<7xi32>) outs(%b : tensor<5xi32>) -> tensor<5xi32>
  return %y, %z : tensor<5xi32>, tensor<5xi32>
}

// CHECK-LABEL: func.func @matvec
// CHECK:         %y = cinm.compute -> tensor<5xi32> {
// CHECK-NEXT:      cinm.op.gemv %a, %x : (tensor<5x7xi32>, tensor<7xi32>) -> tensor<5xi32>
// CHECK:         %z = cinm.compute -> tensor<5xi32> {
// CHECK-NEXT:      cinm.op.gemv %a, %x plus %b : (tensor<5x7xi32>, tensor<7xi32>) -> tensor<5xi32>
// CHECK-NOT:     linalg.matvec

// -----

// A `linalg.generic` that is a matrix product (as `linalg-generalize-named-ops` writes one, or with
// its inputs swapped, or named `i, j, k` in another order) is lowered as `linalg.matmul`; one that
// is a matrix-vector product as `linalg.matvec`. A generic with another body stays.
#mk = affine_map<(m, n, k) -> (m, k)>
#kn = affine_map<(m, n, k) -> (k, n)>
#mn = affine_map<(m, n, k) -> (m, n)>
#k_mn = affine_map<(k, m, n) -> (m, k)>
#k_kn = affine_map<(k, m, n) -> (k, n)>
#k_out = affine_map<(k, m, n) -> (m, n)>
#v_mk = affine_map<(m, k) -> (m, k)>
#v_k = affine_map<(m, k) -> (k)>
#v_m = affine_map<(m, k) -> (m)>

func.func @generic(%a: tensor<4x6xf32>, %b: tensor<6x5xf32>, %c: tensor<4x5xf32>, %v: tensor<6xf32>, %ai: tensor<4x6xi32>, %bi: tensor<6x5xi32>) -> (tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>, tensor<4xf32>, tensor<4x5xi32>, tensor<4x5xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x5xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x5xf32>) -> tensor<4x5xf32>
  %mm = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<4x6xf32>, tensor<6x5xf32>) outs(%f : tensor<4x5xf32>) {
  ^bb0(%x: f32, %w: f32, %acc: f32):
    %p = arith.mulf %x, %w : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x5xf32>
  %swapped = linalg.generic {indexing_maps = [#kn, #mk, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%b, %a : tensor<6x5xf32>, tensor<4x6xf32>) outs(%c : tensor<4x5xf32>) {
  ^bb0(%w: f32, %x: f32, %acc: f32):
    %p = arith.mulf %w, %x : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x5xf32>
  %reordered = linalg.generic {indexing_maps = [#k_mn, #k_kn, #k_out], iterator_types = ["reduction", "parallel", "parallel"]} ins(%a, %b : tensor<4x6xf32>, tensor<6x5xf32>) outs(%c : tensor<4x5xf32>) {
  ^bb0(%x: f32, %w: f32, %acc: f32):
    %p = arith.mulf %x, %w : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x5xf32>
  %ev = tensor.empty() : tensor<4xf32>
  %mv = linalg.generic {indexing_maps = [#v_mk, #v_k, #v_m], iterator_types = ["parallel", "reduction"]} ins(%a, %v : tensor<4x6xf32>, tensor<6xf32>) outs(%ev : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %ei = tensor.empty() : tensor<4x5xi32>
  %mi = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ai, %bi : tensor<4x6xi32>, tensor<6x5xi32>) outs(%ei : tensor<4x5xi32>) {
  ^bb0(%x: i32, %w: i32, %acc: i32):
    %p = arith.muli %x, %w : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  } -> tensor<4x5xi32>
  %other = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<4x6xf32>, tensor<6x5xf32>) outs(%c : tensor<4x5xf32>) {
  ^bb0(%x: f32, %w: f32, %acc: f32):
    %p = arith.addf %x, %w : f32
    %s = arith.maximumf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x5xf32>
  return %mm, %swapped, %reordered, %mv, %mi, %other : tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>, tensor<4xf32>, tensor<4x5xi32>, tensor<4x5xf32>
}

// CHECK-LABEL: func.func @generic
// CHECK:         %mm = cinm.compute -> tensor<4x5xf32> {
// CHECK-NEXT:      cinm.op.gemm %a, %b : (tensor<4x6xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
// CHECK:         %swapped = cinm.compute -> tensor<4x5xf32> {
// CHECK-NEXT:      cinm.op.gemm %a, %b plus %c : (tensor<4x6xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
// CHECK:         %reordered = cinm.compute -> tensor<4x5xf32> {
// CHECK-NEXT:      cinm.op.gemm %a, %b plus %c : (tensor<4x6xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
// CHECK:         %mv = cinm.compute -> tensor<4xf32> {
// CHECK-NEXT:      cinm.op.gemv %a, %v : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4xf32>
// CHECK:         %mi = cinm.compute -> tensor<4x5xi32> {
// CHECK-NEXT:      cinm.op.gemm %ai, %bi : (tensor<4x6xi32>, tensor<6x5xi32>) -> tensor<4x5xi32>
// CHECK:         %other = linalg.generic
// CHECK:           arith.maximumf
