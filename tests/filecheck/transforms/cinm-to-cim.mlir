// RUN: cim-opt %s --split-input-file --verify-diagnostics -p 'cinm-to-cim{crossbars=4}' | filecheck %s
// RUN: cim-opt %s --split-input-file --verify-diagnostics -p convert-cinm-to-cim | filecheck %s --check-prefix=ALIAS
// RUN: not cim-opt %s -p 'cinm-to-cim{crossbars=-1}' 2>&1 | filecheck %s --check-prefix=BAD

// Products chain through futures; the yield waits with a barrier; the bias is a host addition.
func.func @chain(%a: tensor<6x3xi32>, %b: tensor<3x6xi32>, %c: tensor<6x6xi32>, %bias: tensor<6x6xi32>) -> tensor<6x6xi32> {
  %r = cinm.compute -> tensor<6x6xi32> {
    %0 = cinm.op.gemm %a, %b : (tensor<6x3xi32>, tensor<3x6xi32>) -> tensor<6x6xi32>
    %1 = cinm.op.gemm %0, %c plus %bias : (tensor<6x6xi32>, tensor<6x6xi32>) -> tensor<6x6xi32>
    cinm.yield %1 : tensor<6x6xi32>
  }
  return %r : tensor<6x6xi32>
}

// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %[[DEV:.*]] = cim.acquire_device {availableCrossbarCount = 4 : i32} -> !cim.deviceId
// CHECK-NEXT:    %[[XB:.*]] = cim.acquire_crossbar %[[DEV]] : !cim.deviceId -> !cim.crossbarId
// CHECK-NEXT:    %[[F0:.*]] = cim.op.gemm %[[XB]], %a, %b : !cim.crossbarId, tensor<6x3xi32>, tensor<3x6xi32> -> !cim.future<6x6xi32>
// CHECK-NEXT:    %[[F1:.*]] = cim.op.gemm %[[XB]], %[[F0]], %c : !cim.crossbarId, !cim.future<6x6xi32>, tensor<6x6xi32> -> !cim.future<6x6xi32>
// CHECK-NEXT:    %[[T1:.*]] = cim.barrier %[[F1]] : !cim.future<6x6xi32> -> tensor<6x6xi32>
// CHECK-NEXT:    %[[R:.*]] = arith.addi %[[T1]], %bias : tensor<6x6xi32>
// CHECK-NEXT:    cim.release_crossbar %[[XB]] : !cim.crossbarId
// CHECK-NEXT:    cim.release_device %[[DEV]] : !cim.deviceId
// CHECK-NEXT:    func.return %[[R]] : tensor<6x6xi32>

// ALIAS: cim.acquire_device -> !cim.deviceId
// BAD: cinm-to-cim: option 'crossbars' must be at least 1, got -1

// -----

// Partial sums of a tiled product become host additions of barrier results.
func.func @partials(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>, %m: tensor<3x4xf32>, %v: tensor<4xf32>) -> (tensor<2x3xf32>, tensor<3xf32>) {
  %r, %s = cinm.compute -> tensor<2x3xf32>, tensor<3xf32> {
    %0 = cinm.op.gemm %a, %b : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    %1 = cinm.op.gemm %a, %b : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    %2 = cinm.op.add %0, %1 : tensor<2x3xf32>
    %3 = cinm.op.gemv %m, %v : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
    cinm.yield %2, %3 : tensor<2x3xf32>, tensor<3xf32>
  }
  return %r, %s : tensor<2x3xf32>, tensor<3xf32>
}

// CHECK-LABEL: func.func @partials
// CHECK:         %[[F0:.*]] = cim.op.gemm %{{.*}}, %a, %b
// CHECK-NEXT:    %[[T0:.*]] = cim.barrier %[[F0]]
// CHECK-NEXT:    %[[F1:.*]] = cim.op.gemm %{{.*}}, %a, %b
// CHECK-NEXT:    %[[T1:.*]] = cim.barrier %[[F1]]
// CHECK-NEXT:    %[[S:.*]] = arith.addf %[[T0]], %[[T1]] : tensor<2x3xf32>
// CHECK-NEXT:    %[[G:.*]] = cim.op.gemv %{{.*}}, %m, %v : !cim.crossbarId, tensor<3x4xf32>, tensor<4xf32> -> !cim.future<3xf32>
// CHECK-NEXT:    %[[TG:.*]] = cim.barrier %[[G]] : !cim.future<3xf32> -> tensor<3xf32>
// CHECK:         func.return %[[S]], %[[TG]]

// -----

// Unary element-wise ops and reductions stay on the host as they are (`cinm-to-linalg` lowers them).
func.func @host_ops(%a: tensor<4xi32>) -> i32 {
  %r = cinm.compute -> i32 {
    %e = cinm.op.element_wise abs (%a) : tensor<4xi32>
    %0 = cinm.op.reduce add (%e) : tensor<4xi32> -> i32
    cinm.yield %0 : i32
  }
  return %r : i32
}
// CHECK-LABEL: func.func @host_ops
// CHECK:         %e = cinm.op.element_wise abs(%a) : tensor<4xi32>
// CHECK-NEXT:    %r = cinm.op.reduce add(%e) : tensor<4xi32> -> i32

// -----

func.func @unsupported(%a: tensor<4xi32>) -> tensor<4xi32> {
  %r = cinm.compute -> tensor<4xi32> {
    %0 = cinm.op.scan add (%a) : tensor<4xi32>
    cinm.yield %0 : tensor<4xi32>
  }
  return %r : tensor<4xi32>
}
// CHECK: cinm-to-cim: cannot lower 'cinm.op.scan' to the cim dialect
