// RUN: cim-opt %s --split-input-file -p cinm-to-linalg | filecheck %s
// RUN: cim-opt %s --split-input-file -p cinm-to-linalg | filecheck %s --check-prefix=NOCINM

// The host's element-wise ops become a `linalg.map` of the scalar op into a fresh tensor; a scalar
// operand is used from above.
func.func @elementwise(%a: tensor<4x6xf32>, %b: tensor<4x6xf32>, %s: f32, %i: tensor<3xi32>, %j: tensor<3xi32>) -> (tensor<4x6xf32>, tensor<3xi32>) {
  %sum = cinm.op.add %a, %b : tensor<4x6xf32>
  %scaled = cinm.op.divs %sum, %s : tensor<4x6xf32>
  %e = cinm.op.element_wise exp (%scaled) : tensor<4x6xf32>
  %q = cinm.op.elementwise div %i, %j : tensor<3xi32>
  return %e, %q : tensor<4x6xf32>, tensor<3xi32>
}

// CHECK-LABEL: func.func @elementwise
// CHECK:         %[[E0:.*]] = tensor.empty() : tensor<4x6xf32>
// CHECK-NEXT:    %sum = linalg.map ins(%a, %b : tensor<4x6xf32>, tensor<4x6xf32>) outs(%[[E0]] : tensor<4x6xf32>) (%[[X:.*]]: f32, %[[Y:.*]]: f32) {
// CHECK-NEXT:      %[[R:.*]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK-NEXT:      linalg.yield %[[R]] : f32
// CHECK-NEXT:    }
// CHECK:         %scaled = linalg.map ins(%sum : tensor<4x6xf32>)
// CHECK-NEXT:      arith.divf %{{.*}}, %s : f32
// CHECK:         %e = linalg.map ins(%scaled : tensor<4x6xf32>)
// CHECK-NEXT:      math.exp %{{.*}} : f32
// CHECK:         %q = linalg.map ins(%i, %j : tensor<3xi32>, tensor<3xi32>)
// CHECK-NEXT:      arith.divsi
// CHECK:         func.return %e, %q

// -----

// A reduction becomes `linalg.reduce` into the method's identity; a scalar result is extracted.
func.func @reduce(%x: tensor<4x6xi32>, %f: tensor<8xf32>) -> (tensor<4xi32>, f32, tensor<6xi32>) {
  %rows = cinm.op.reduce maxsi (%x) : tensor<4x6xi32> -> tensor<4xi32>
  %total = cinm.op.reduce add (%f) : tensor<8xf32> -> f32
  %cols = cinm.op.reduce minui (%x) {dimensions = array<i64: 0>} : tensor<4x6xi32> -> tensor<6xi32>
  return %rows, %total, %cols : tensor<4xi32>, f32, tensor<6xi32>
}

// CHECK-LABEL: func.func @reduce
// CHECK:         %[[LOW:.*]] = arith.constant -2147483648 : i32
// CHECK-NEXT:    %[[E1:.*]] = tensor.empty() : tensor<4xi32>
// CHECK-NEXT:    %[[F1:.*]] = linalg.fill ins(%[[LOW]] : i32) outs(%[[E1]] : tensor<4xi32>) -> tensor<4xi32>
// CHECK-NEXT:    %rows = linalg.reduce ins(%x:tensor<4x6xi32>) outs(%[[F1]]:tensor<4xi32>) dimensions = [1]
// CHECK-NEXT:    (%[[IN:.*]]: i32, %[[OUT:.*]]: i32) {
// CHECK-NEXT:      %[[M:.*]] = arith.maxsi %[[IN]], %[[OUT]] : i32
// CHECK-NEXT:      linalg.yield %[[M]] : i32
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         %[[SUM:.*]] = linalg.reduce ins(%f:tensor<8xf32>) outs(%{{.*}}:tensor<f32>) dimensions = [0]
// CHECK:           arith.addf
// CHECK:         %total = tensor.extract %[[SUM]][] : tensor<f32>
// CHECK:         arith.constant -1 : i32
// CHECK:         %cols = linalg.reduce ins(%x:tensor<4x6xi32>) outs(%{{.*}}:tensor<6xi32>) dimensions = [0]
// CHECK:           arith.minui

// -----

// A compute placed on the host is inlined: each gemm is a `linalg.matmul` into zeros (or into its
// bias) that keeps the placement, the compute's layer name and its index among the layer's products;
// the compute's element-wise ops become `linalg.map`s as elsewhere.
func.func @host(%q: tensor<4x8xf32>, %k: tensor<8x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %qk = cinm.compute attributes {cimxdsl.placement = "host"} -> tensor<4x4xf32> {
    %p = cinm.op.gemm %q, %k : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
    %r = cinm.op.gemm %q, %k plus %b : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
    %s = cinm.op.add %p, %r : tensor<4x4xf32>
    cinm.yield %s : tensor<4x4xf32>
  }
  func.return %qk : tensor<4x4xf32>
}

// CHECK-LABEL: func.func @host
// CHECK-NEXT:    %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK-NEXT:    %[[F:.*]] = linalg.fill ins(%[[Z]] : f32) outs(%[[E]] : tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:    %p = linalg.matmul {cimxdsl.placement = "host", cimxdsl.layer = "qk", cimxdsl.layer_product = array<i64: 0, 2>} ins(%q, %k : tensor<4x8xf32>, tensor<8x4xf32>) outs(%[[F]] : tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:    %r = linalg.matmul {cimxdsl.placement = "host", cimxdsl.layer = "qk", cimxdsl.layer_product = array<i64: 1, 2>} ins(%q, %k : tensor<4x8xf32>, tensor<8x4xf32>) outs(%b : tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:    %[[E2:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK-NEXT:    %s = linalg.map ins(%p, %r : tensor<4x4xf32>, tensor<4x4xf32>) outs(%[[E2]] : tensor<4x4xf32>)
// CHECK:         func.return %s : tensor<4x4xf32>

// -----

// Cinnamon's buffer form writes its `into` memref.
func.func @buffers(%a: memref<5xf32>, %out: memref<5xf32>) {
  cinm.op.elementwise sqrt %a into %out : memref<5xf32> into memref<5xf32>
  func.return
}

// CHECK-LABEL: func.func @buffers
// CHECK:         linalg.map ins(%a : memref<5xf32>) outs(%out : memref<5xf32>) (%[[V:.*]]: f32) {
// CHECK-NEXT:      math.sqrt %[[V]] : f32

// -----

// im2col copies each window element (n, oy, ox, c, ky, kx) from (n, c, oy·sh + ky·dh, ox·sw + kx·dw)
// into an N×OH×OW×C×KH×KW tensor, collapsed to the patch matrix.
func.func @im2col(%x: tensor<2x3x9x8xf32>) -> tensor<24x12xf32> {
  %c = cinm.op.im2col %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 3>, dilations = array<i64: 2, 1>} : tensor<2x3x9x8xf32> -> tensor<24x12xf32>
  return %c : tensor<24x12xf32>
}

// CHECK-LABEL: func.func @im2col
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<2x4x3x3x2x2xf32>
// CHECK-NEXT:    %[[W:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d3, ((d1 * 2) + (d4 * 2)), ((d2 * 3) + d5))>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : tensor<2x3x9x8xf32>) outs(%[[E]] : tensor<2x4x3x3x2x2xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      linalg.yield %[[IN]] : f32
// CHECK-NEXT:    } -> tensor<2x4x3x3x2x2xf32>
// CHECK-NEXT:    %c = tensor.collapse_shape %[[W]] {{\[}}[0 : i64, 1 : i64, 2 : i64], [3 : i64, 4 : i64, 5 : i64]] : tensor<2x4x3x3x2x2xf32> into tensor<24x12xf32>

// NOCINM-NOT: cinm.
