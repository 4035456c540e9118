// RUN: CIM_ROUNDTRIP
// RUN: CIM_GENERIC_ROUNDTRIP

func.func @ops(%a: tensor<6x4xi32>, %b: tensor<4x22xi32>, %c: tensor<6x22xi32>, %v: tensor<4xi32>, %s: i32, %k: i64, %bits: tensor<8xi1>, %perm: tensor<2xi32>) -> tensor<6x22xi32> {
  %r = cinm.compute attributes {workgroupShape = array<i64: 1, 2, 3>} -> tensor<6x22xi32> {
    %d3 = cinm.op.gemm %a, %b plus %c {cinm.notile}: (tensor<6x4xi32>, tensor<4x22xi32>) -> tensor<6x22xi32>
    %d4 = cinm.op.gemm %a, %b : (tensor<6x4xi32>, tensor<4x22xi32>) -> tensor<6x22xi32>
    %g = cinm.op.gemv %a, %v : (tensor<6x4xi32>, tensor<4xi32>) -> tensor<6xi32>
    %e0 = cinm.op.add %c, %c : tensor<6x22xi32>
    %e1 = cinm.op.sub %c, %c : tensor<6x22xi32>
    %e2 = cinm.op.mul %c, %c : tensor<6x22xi32>
    %e3 = cinm.op.div %c, %c : tensor<6x22xi32>
    %s0 = cinm.op.adds %c, %s : tensor<6x22xi32>
    %s1 = cinm.op.subs %c, %s : tensor<6x22xi32>
    %s2 = cinm.op.muls %c, %s : tensor<6x22xi32>
    %s3 = cinm.op.divs %c, %s : tensor<6x22xi32>
    %u = cinm.op.element_wise exp (%c) : tensor<6x22xi32>
    %red0 = cinm.op.reduce add (%v) : tensor<4xi32> -> i32
    %red1 = cinm.op.reduce max (%c) {dimensions = array<i64: 0>} : tensor<6x22xi32> -> tensor<22xi32>
    %sc = cinm.op.scan mul (%v) : tensor<4xi32>
    %tv, %ti = cinm.op.topK %k (%v) : tensor<4xi32> -> tensor<?xi32>, tensor<?xindex>
    %sv, %si = cinm.op.simSearch cos 4 (%v, %v) : tensor<4xi32>
    %t = "cinm.op.transpose"(%a, %perm) : (tensor<6x4xi32>, tensor<2xi32>) -> tensor<4x6xi32>
    %p = "cinm.op.popCount"(%bits) : (tensor<8xi1>) -> i64
    cinm.yield %d3 : tensor<6x22xi32>
  }
  %q = cinm.compute -> tensor<6x22xi32> {
    cinm.yield %c : tensor<6x22xi32>
  }
  cinm.compute {
    cinm.yield
  }
  return %r : tensor<6x22xi32>
}

// CHECK:      %r = cinm.compute attributes {workgroupShape = array<i64: 1, 2, 3>} -> tensor<6x22xi32> {
// CHECK-NEXT:   %d3 = cinm.op.gemm %a, %b plus %c {cinm.notile} : (tensor<6x4xi32>, tensor<4x22xi32>) -> tensor<6x22xi32>
// CHECK-NEXT:   %d4 = cinm.op.gemm %a, %b : (tensor<6x4xi32>, tensor<4x22xi32>) -> tensor<6x22xi32>
// CHECK-NEXT:   %g = cinm.op.gemv %a, %v : (tensor<6x4xi32>, tensor<4xi32>) -> tensor<6xi32>
// CHECK-NEXT:   %e0 = cinm.op.add %c, %c : tensor<6x22xi32>
// CHECK-NEXT:   %e1 = cinm.op.sub %c, %c : tensor<6x22xi32>
// CHECK-NEXT:   %e2 = cinm.op.mul %c, %c : tensor<6x22xi32>
// CHECK-NEXT:   %e3 = cinm.op.div %c, %c : tensor<6x22xi32>
// CHECK-NEXT:   %s0 = cinm.op.adds %c, %s : tensor<6x22xi32>
// CHECK-NEXT:   %s1 = cinm.op.subs %c, %s : tensor<6x22xi32>
// CHECK-NEXT:   %s2 = cinm.op.muls %c, %s : tensor<6x22xi32>
// CHECK-NEXT:   %s3 = cinm.op.divs %c, %s : tensor<6x22xi32>
// CHECK-NEXT:   %u = cinm.op.element_wise exp(%c) : tensor<6x22xi32>
// CHECK-NEXT:   %red0 = cinm.op.reduce add(%v) : tensor<4xi32> -> i32
// CHECK-NEXT:   %red1 = cinm.op.reduce max(%c) {dimensions = array<i64: 0>} : tensor<6x22xi32> -> tensor<22xi32>
// CHECK-NEXT:   %sc = cinm.op.scan mul(%v) : tensor<4xi32>
// CHECK-NEXT:   %tv, %ti = cinm.op.topK %k(%v) : tensor<4xi32> -> tensor<?xi32>, tensor<?xindex>
// CHECK-NEXT:   %sv, %si = cinm.op.simSearch cos 4(%v, %v) : tensor<4xi32>
// CHECK-NEXT:   %t = "cinm.op.transpose"(%a, %perm) : (tensor<6x4xi32>, tensor<2xi32>) -> tensor<4x6xi32>
// CHECK-NEXT:   %p = "cinm.op.popCount"(%bits) : (tensor<8xi1>) -> i64
// CHECK-NEXT:   cinm.yield %d3 : tensor<6x22xi32>
// CHECK-NEXT: }
// CHECK-NEXT: %q = cinm.compute -> tensor<6x22xi32> {
// CHECK-NEXT:   cinm.yield %c : tensor<6x22xi32>
// CHECK-NEXT: }
// CHECK-NEXT: cinm.compute {
// CHECK-NEXT:   cinm.yield
// CHECK-NEXT: }

// -----

// Quantized crossbar products accumulate in a wider integer.
func.func @widening(%a: tensor<2x3xi8>, %b: tensor<3x4xi8>, %v: tensor<3xi8>) {
  %r = cinm.compute -> tensor<2x4xi32> {
    %g = cinm.op.gemm %a, %b : (tensor<2x3xi8>, tensor<3x4xi8>) -> tensor<2x4xi32>
    %m = cinm.op.gemv %a, %v : (tensor<2x3xi8>, tensor<3xi8>) -> tensor<2xi32>
    cinm.yield %g : tensor<2x4xi32>
  }
  return
}

// CHECK: %g = cinm.op.gemm %a, %b : (tensor<2x3xi8>, tensor<3x4xi8>) -> tensor<2x4xi32>
// CHECK: %m = cinm.op.gemv %a, %v : (tensor<2x3xi8>, tensor<3xi8>) -> tensor<2xi32>

// -----

func.func @im2col(%x: tensor<1x4x8x8xi32>) {
  %a = cinm.op.im2col %x {kernel = array<i64: 3, 3>} : tensor<1x4x8x8xi32> -> tensor<36x36xi32>
  %b = cinm.op.im2col %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 2>} : tensor<1x4x8x8xi32> -> tensor<6x36xi32>
  return
}

// CHECK:      %a = cinm.op.im2col %x {kernel = array<i64: 3, 3>} : tensor<1x4x8x8xi32> -> tensor<36x36xi32>
// CHECK-NEXT: %b = cinm.op.im2col %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 2>} : tensor<1x4x8x8xi32> -> tensor<6x36xi32>
