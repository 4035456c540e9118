func.func @mixed(%a: tensor<8x16xi32>, %b: memref<16x4xi32>, %c: memref<8x4xi32>) {
  "cinm.op.gemm"(%a, %b, %c) <{operandSegmentSizes = array<i32: 1, 1, 0, 1>}> : (tensor<8x16xi32>, memref<16x4xi32>, memref<8x4xi32>) -> ()
  return
}

// -----

func.func @result_and_buffer(%a: memref<8x16xi32>, %b: memref<16x4xi32>, %c: memref<8x4xi32>) {
  %r = "cinm.op.gemm"(%a, %b, %c) <{operandSegmentSizes = array<i32: 1, 1, 0, 1>}> : (memref<8x16xi32>, memref<16x4xi32>, memref<8x4xi32>) -> tensor<8x4xi32>
  return
}

// -----

func.func @shape(%a: memref<8x16xi32>, %b: memref<16x4xi32>, %c: memref<8x5xi32>) {
  cinm.op.gemm %a, %b into %c : memref<8x16xi32>, memref<16x4xi32> into memref<8x5xi32>
  return
}

// -----

func.func @segments(%a: memref<8x16xi32>, %b: memref<16x4xi32>, %c: memref<8x4xi32>) {
  "cinm.op.gemm"(%a, %b, %c) <{operandSegmentSizes = array<i32: 1, 1, 1, 1>}> : (memref<8x16xi32>, memref<16x4xi32>, memref<8x4xi32>) -> ()
  return
}

// -----

func.func @arity(%x: memref<6xf32>, %y: memref<6xf32>) {
  "cinm.op.elementwise"(%x, %y) <{kind = "mul"}> : (memref<6xf32>, memref<6xf32>) -> ()
  return
}

// -----

func.func @eltwise_shape(%x: memref<6xf32>, %y: memref<7xf32>) {
  "cinm.op.elementwise"(%x, %y) <{kind = "exp"}> : (memref<6xf32>, memref<7xf32>) -> ()
  return
}
