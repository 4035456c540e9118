// RUN: cim-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @copy_shapes(%a: memref<4xf32>, %b: memref<5xf32>) {
  memref.copy %a, %b : memref<4xf32> to memref<5xf32>
  func.return
}
// CHECK: 'memref.copy' source memref<4xf32> and target memref<5xf32> must have one shape and type

// -----

func.func @to_memref_shape(%t: tensor<4xf32>) {
  %b = bufferization.to_memref %t : tensor<4xf32> to memref<5xf32>
  func.return
}
// CHECK: 'bufferization.to_memref' result memref<5xf32> must match the tensor tensor<4xf32>

// -----

func.func @map_shapes(%a: tensor<4xf32>, %init: tensor<5xf32>) {
  %r = linalg.map { arith.negf } ins(%a : tensor<4xf32>) outs(%init : tensor<5xf32>)
  func.return
}
// CHECK: 'linalg.map' input tensor<4xf32> must have the init's shape [5]

// -----

func.func @map_body(%a: tensor<4xf32>, %init: tensor<4xf32>) {
  %r = linalg.map ins(%a : tensor<4xf32>) outs(%init : tensor<4xf32>) (%x: i32) {
    linalg.yield %x : i32
  }
  func.return
}
// CHECK: 'linalg.map' body must take the input element types (f32), optionally followed by the init's, got (i32)

// -----

func.func @generate_extents(%n: index) {
  %t = tensor.generate {
  ^bb0(%i: index):
    tensor.yield %i : index
  } : tensor<?xindex>
  func.return
}
// CHECK: 'tensor.generate' needs 1 dynamic extents for tensor<?xindex>, got 0

// -----

func.func @generate_yield(%n: index) {
  %t = tensor.generate {
  ^bb0(%i: index):
    %c = arith.constant 1 : i32
    tensor.yield %c : i32
  } : tensor<3xindex>
  func.return
}
// CHECK: 'tensor.generate' body must yield one index

// -----

func.func @batch_matmul_shapes(%a: tensor<2x3x4xf32>, %b: tensor<2x5x6xf32>, %c: tensor<2x3x6xf32>) {
  %p = linalg.batch_matmul ins(%a, %b : tensor<2x3x4xf32>, tensor<2x5x6xf32>) outs(%c : tensor<2x3x6xf32>) -> tensor<2x3x6xf32>
  func.return
}
// CHECK: 'linalg.batch_matmul' shapes do not fit: 2x3x4 times 2x5x6 into 2x3x6

// -----

func.func @gather_result(%t: tensor<10x8xf32>, %i: tensor<3x1xi64>) {
  %g = tensor.gather %t[%i] gather_dims([0]) : (tensor<10x8xf32>, tensor<3x1xi64>) -> tensor<3x9xf32>
  func.return
}
// CHECK: 'tensor.gather' result shape [3, 9] does not fit the source and indices

// -----

func.func @gather_coordinates(%t: tensor<10x8xf32>, %i: tensor<3x2xi64>) {
  %g = tensor.gather %t[%i] gather_dims([0]) : (tensor<10x8xf32>, tensor<3x2xi64>) -> tensor<3x8xf32>
  func.return
}
// CHECK: 'tensor.gather' indices must end in a dimension of 1 (one per gather dim)
