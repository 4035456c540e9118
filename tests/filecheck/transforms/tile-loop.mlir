// RUN: cim-opt %s --split-input-file -p 'tile{rows=128 cols=32 mode=loop}' | filecheck %s
// RUN: cim-opt %s --split-input-file -p 'tile{rows=128 cols=32 mode=loop},cinm-unroll-loops' | filecheck %s --check-prefix=UNROLL
// RUN: not cim-opt %s -p 'tile{mode=tiles}' 2>&1 | filecheck %s --check-prefix=BAD
// Cinnamon's pass name runs the loop form.
// RUN: cim-opt %s --split-input-file -p 'cinm-tiling{rows=128 cols=32}' | filecheck %s

// The loop form follows the structure of Cinnamon's cinm-tiling test for tensors: loops over the
// input rows and output columns carry the result, the loop over K accumulates with `plus` from
// zeros or the bias tile, and the finished tile is inserted.

// CHECK-LABEL: @gemm_tensor
// CHECK-SAME: (%[[A:.*]]: tensor<{{.*}}>, %[[B:.*]]: tensor<{{.*}}>) ->
// CHECK: affine.for %[[i:.*]] = 0 to 8 step 8 iter_args(%
// CHECK: affine.for %[[j:.*]] = 0 to 128 step 32 iter_args(%[[outer:.*]] =
// CHECK: %[[innerinit:.*]] = arith.constant dense<0> :
// CHECK: %[[x:.*]] = affine.for %[[k:.*]] = 0 to 1024 step 128 iter_args(%[[inner:.*]] = %[[innerinit]])
// CHECK: %[[sliceA:.*]] = tensor.extract_slice %[[A]][%[[i]], %[[k]]] [8, 128] [1, 1] :
// CHECK: %[[sliceB:.*]] = tensor.extract_slice %[[B]][%[[k]], %[[j]]] [128, 32] [1, 1] :
// CHECK: %[[r:.*]] = cinm.op.gemm %[[sliceA]], %[[sliceB]] plus %[[inner]] {cinm.notile} :
// CHECK: affine.yield %[[r]]
// CHECK: tensor.insert_slice %[[x]] into %[[outer]][%[[i]], %[[j]]] [8, 32] [1, 1] :

// UNROLL-LABEL: @gemm_tensor
// UNROLL-NOT:   affine.for
// UNROLL:       %[[A0:.*]] = tensor.extract_slice %A[0, 0] [8, 128] [1, 1]
// UNROLL:       %[[B0:.*]] = tensor.extract_slice %B[0, 0] [128, 32] [1, 1]
// UNROLL:       %[[P0:.*]] = cinm.op.gemm %[[A0]], %[[B0]] plus %{{.*}} {cinm.notile}
// UNROLL:       %[[A1:.*]] = tensor.extract_slice %A[0, 128] [8, 128] [1, 1]
// UNROLL:       %[[B1:.*]] = tensor.extract_slice %B[128, 0] [128, 32] [1, 1]
// UNROLL:       cinm.op.gemm %[[A1]], %[[B1]] plus %[[P0]] {cinm.notile}
// UNROLL:       tensor.insert_slice %{{.*}} into %{{.*}}[0, 96] [8, 32] [1, 1]
// UNROLL-NOT:   affine.for

// BAD: tile: option 'mode' must be one of unroll, loop, got 'tiles'
func.func @gemm_tensor(%A: tensor<8x1024xi32>, %B: tensor<1024x128xi32>) -> tensor<8x128xi32> {
  %r = cinm.compute -> tensor<8x128xi32> {
    %p = cinm.op.gemm %A, %B : tensor<8x1024xi32>, tensor<1024x128xi32> -> tensor<8x128xi32>
    cinm.yield %p : tensor<8x128xi32>
  }
  func.return %r : tensor<8x128xi32>
}

// -----

// CHECK-LABEL: @gemm_tensor_bias
// CHECK-SAME: (%[[A:.*]]: tensor<{{.*}}>, %[[B:.*]]: tensor<{{.*}}>, %[[bias:.*]]: tensor<{{.*}}>) ->
// CHECK: affine.for %[[i:.*]] = 0 to 8 step 8 iter_args(%
// CHECK: affine.for %[[j:.*]] = 0 to 128 step 32 iter_args(%[[outer:.*]] =
// CHECK: %[[innerinit:.*]] = tensor.extract_slice %[[bias]][%[[i]], %[[j]]] [8, 32] [1, 1] :
// CHECK: %[[x:.*]] = affine.for %[[k:.*]] = 0 to 1024 step 128 iter_args(%[[inner:.*]] = %[[innerinit]])
// CHECK: %[[sliceA:.*]] = tensor.extract_slice %[[A]][%[[i]], %[[k]]] [8, 128] [1, 1] :
// CHECK: %[[sliceB:.*]] = tensor.extract_slice %[[B]][%[[k]], %[[j]]] [128, 32] [1, 1] :
// CHECK: %[[r:.*]] = cinm.op.gemm %[[sliceA]], %[[sliceB]] plus %[[inner]] {cinm.notile} :
// CHECK: affine.yield %[[r]]
// CHECK: tensor.insert_slice %[[x]] into %[[outer]][%[[i]], %[[j]]] [8, 32] [1, 1] :
func.func @gemm_tensor_bias(%A: tensor<8x1024xi32>, %B: tensor<1024x128xi32>, %bias: tensor<8x128xi32>) -> tensor<8x128xi32> {
  %r = cinm.compute -> tensor<8x128xi32> {
    %p = cinm.op.gemm %A, %B plus %bias : tensor<8x1024xi32>, tensor<1024x128xi32> plus tensor<8x128xi32> -> tensor<8x128xi32>
    cinm.yield %p : tensor<8x128xi32>
  }
  func.return %r : tensor<8x128xi32>
}

// -----

// A gemv: loops over the matrix rows (a crossbar's outputs) and K; the partial products are added.
// Tile sizes divide the dimensions: 200 rows of K in 2 tiles of 100, 96 outputs in 3 of 32.

// CHECK-LABEL: @gemv
// CHECK: affine.for %[[i:.*]] = 0 to 96 step 32 iter_args(%[[outer:.*]] =
// CHECK: %[[x:.*]] = affine.for %[[k:.*]] = 0 to 200 step 100 iter_args(%[[inner:.*]] =
// CHECK: %[[m:.*]] = tensor.extract_slice %M[%[[i]], %[[k]]] [32, 100] [1, 1] :
// CHECK: %[[v:.*]] = tensor.extract_slice %v[%[[k]]] [100] [1] :
// CHECK: %[[p:.*]] = cinm.op.gemv %[[m]], %[[v]] {cinm.notile} :
// CHECK: %[[s:.*]] = cinm.op.add %[[inner]], %[[p]] :
// CHECK: affine.yield %[[s]]
// CHECK: tensor.insert_slice %[[x]] into %[[outer]][%[[i]]] [32] [1] :
func.func @gemv(%M: tensor<96x200xi32>, %v: tensor<200xi32>) -> tensor<96xi32> {
  %r = cinm.compute -> tensor<96xi32> {
    %p = cinm.op.gemv %M, %v : tensor<96x200xi32>, tensor<200xi32> -> tensor<96xi32>
    cinm.yield %p : tensor<96xi32>
  }
  func.return %r : tensor<96xi32>
}
