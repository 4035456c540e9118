// RUN: CIM_ROUNDTRIP
// RUN: CIM_GENERIC_ROUNDTRIP

// The custom forms MLIR writes for ops xDSL 0.74 lacks or prints generically.

func.func @buffers(%m: memref<4xf32>, %n: memref<4xf32>, %t: tensor<4xf32>) {
  %d = memref.cast %m : memref<4xf32> to memref<?xf32>
  memref.copy %m, %n : memref<4xf32> to memref<4xf32>
  %b = bufferization.to_memref %t : tensor<4xf32> to memref<4xf32>
  func.return
}

// CHECK-LABEL: func.func @buffers
// CHECK-NEXT:    %d = memref.cast %m : memref<4xf32> to memref<?xf32>
// CHECK-NEXT:    memref.copy %m, %n : memref<4xf32> to memref<4xf32>
// CHECK-NEXT:    %b = bufferization.to_memref %t : tensor<4xf32> to memref<4xf32>

// -----

// The form of older MLIR (`to_memref` with only the memref type) is read, and printed as today.
func.func @old_to_memref(%t: tensor<2x3xi32>) {
  %b = bufferization.to_memref %t : memref<2x3xi32>
  func.return
}

// CHECK-LABEL: func.func @old_to_memref
// CHECK-NEXT:    %b = bufferization.to_memref %t : tensor<2x3xi32> to memref<2x3xi32>

// -----

func.func @map(%a: tensor<8xf32>, %b: tensor<8xf32>, %init: tensor<8xf32>, %m: memref<8xf32>) -> tensor<8xf32> {
  %long = linalg.map ins(%a, %b : tensor<8xf32>, tensor<8xf32>) outs(%init : tensor<8xf32>)
    (%x: f32, %y: f32) {
      %s = arith.addf %x, %y : f32
      linalg.yield %s : f32
    }
  %short = linalg.map { arith.mulf } ins(%long, %b : tensor<8xf32>, tensor<8xf32>) outs(%init : tensor<8xf32>)
  linalg.map ins(%m : memref<8xf32>) outs(%m : memref<8xf32>)
    (%x: f32) {
      linalg.yield %x : f32
    }
  func.return %short : tensor<8xf32>
}

// CHECK-LABEL: func.func @map
// CHECK-NEXT:    %long = linalg.map ins(%a, %b : tensor<8xf32>, tensor<8xf32>) outs(%init : tensor<8xf32>) (%x: f32, %y: f32) {
// CHECK-NEXT:      %s = arith.addf %x, %y : f32
// CHECK-NEXT:      linalg.yield %s : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %short = linalg.map ins(%long, %b : tensor<8xf32>, tensor<8xf32>) outs(%init : tensor<8xf32>) (%{{.*}}: f32, %{{.*}}: f32) {
// CHECK-NEXT:      %{{.*}} = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:      linalg.yield %{{.*}} : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    linalg.map ins(%m : memref<8xf32>) outs(%m : memref<8xf32>) (%{{.*}}: f32) {

// -----

func.func @generate(%n: index) -> tensor<?x3xindex> {
  %t = tensor.generate %n {
  ^bb0(%i: index, %j: index):
    %s = arith.addi %i, %j : index
    tensor.yield %s : index
  } : tensor<?x3xindex>
  func.return %t : tensor<?x3xindex>
}

// CHECK-LABEL: func.func @generate
// CHECK-NEXT:    %t = tensor.generate %n {
// CHECK-NEXT:    ^{{.*}}(%i: index, %j: index):
// CHECK-NEXT:      %s = arith.addi %i, %j : index
// CHECK-NEXT:      tensor.yield %s : index
// CHECK-NEXT:    } : tensor<?x3xindex>

// -----

// Products of two run-time tensors and embedding lookups, as the ONNX importer emits them.
func.func @products(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>, %c: tensor<2x3x5xf32>, %t: tensor<10x8xf32>, %i: tensor<2x3x1xi64>) {
  %p = linalg.batch_matmul ins(%a, %b : tensor<2x3x4xf32>, tensor<2x4x5xf32>) outs(%c : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %g = tensor.gather %t[%i] gather_dims([0]) : (tensor<10x8xf32>, tensor<2x3x1xi64>) -> tensor<2x3x1x8xf32>
  %h = tensor.gather %t[%i] gather_dims([0]) unique : (tensor<10x8xf32>, tensor<2x3x1xi64>) -> tensor<2x3x8xf32>
  func.return
}

// CHECK-LABEL: func.func @products
// CHECK-NEXT:    %p = linalg.batch_matmul ins(%a, %b : tensor<2x3x4xf32>, tensor<2x4x5xf32>) outs(%c : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
// CHECK-NEXT:    %g = tensor.gather %t[%i] gather_dims([0]) : (tensor<10x8xf32>, tensor<2x3x1xi64>) -> tensor<2x3x1x8xf32>
// CHECK-NEXT:    %h = tensor.gather %t[%i] gather_dims([0]) unique : (tensor<10x8xf32>, tensor<2x3x1xi64>) -> tensor<2x3x8xf32>
