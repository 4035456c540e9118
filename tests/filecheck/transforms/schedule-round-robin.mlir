// RUN: cim-opt %s --split-input-file -p schedule-round-robin | filecheck %s

// Round robin deals ops out over the crossbars in turn, even along a chain (ASAP would keep the
// whole chain on crossbar 0): c0 on %x, c1 on new1, c2 on new2, each in its own step.

func.func @chain(%a: tensor<4x4xi32>, %b: tensor<4x4xi32>) -> tensor<4x4xi32> {
  %dev = cim.acquire_device {availableCrossbarCount = 3 : i32} -> !cim.deviceId
  %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %c0 = cim.op.gemm %x, %a, %b : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %c1 = cim.op.gemm %x, %c0, %b : !cim.crossbarId, !cim.future<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %c2 = cim.op.gemm %x, %c1, %b : !cim.crossbarId, !cim.future<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t = cim.barrier %c2 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  cim.release_crossbar %x : !cim.crossbarId
  cim.release_device %dev : !cim.deviceId
  return %t : tensor<4x4xi32>
}

// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %dev = cim.acquire_device {availableCrossbarCount = 3 : i32, isFullyScheduled = true}
// CHECK-NEXT:    %[[NEW2:.*]] = cim.acquire_crossbar %dev
// CHECK-NEXT:    %[[NEW1:.*]] = cim.acquire_crossbar %dev
// CHECK-NEXT:    %x = cim.acquire_crossbar %dev
// CHECK-NEXT:    %c0 = cim.op.gemm %x, %a, %b
// CHECK-NEXT:    %[[T0:.*]] = cim.barrier %c0
// CHECK-NEXT:    %c1 = cim.op.gemm %[[NEW1]], %[[T0]], %b
// CHECK-NEXT:    %[[T1:.*]] = cim.barrier %c1
// CHECK-NEXT:    %c2 = cim.op.gemm %[[NEW2]], %[[T1]], %b
// CHECK-NEXT:    %[[T2:.*]] = cim.barrier %c2
// CHECK-NEXT:    cim.release_crossbar %x
// CHECK-NEXT:    cim.release_crossbar %[[NEW1]]
// CHECK-NEXT:    cim.release_crossbar %[[NEW2]]
// CHECK-NEXT:    cim.release_device %dev
// CHECK-NEXT:    func.return %[[T2]]

// -----

// Three independent gemms on two crossbars: the third waits for crossbar %x to be free again.

func.func @wrap(%a: tensor<4x4xi32>, %b0: tensor<4x4xi32>, %b1: tensor<4x4xi32>, %b2: tensor<4x4xi32>) -> (tensor<4x4xi32>, tensor<4x4xi32>, tensor<4x4xi32>) {
  %dev = cim.acquire_device {availableCrossbarCount = 2 : i32} -> !cim.deviceId
  %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %f0 = cim.op.gemm %x, %a, %b0 : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t0 = cim.barrier %f0 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  %f1 = cim.op.gemm %x, %a, %b1 : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t1 = cim.barrier %f1 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  %f2 = cim.op.gemm %x, %a, %b2 : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t2 = cim.barrier %f2 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  cim.release_crossbar %x : !cim.crossbarId
  cim.release_device %dev : !cim.deviceId
  return %t0, %t1, %t2 : tensor<4x4xi32>, tensor<4x4xi32>, tensor<4x4xi32>
}

// CHECK-LABEL: func.func @wrap
// CHECK:         %[[NEW1:.*]] = cim.acquire_crossbar %dev
// CHECK-NEXT:    %x = cim.acquire_crossbar %dev
// CHECK-NEXT:    %f0 = cim.op.gemm %x, %a, %b0
// CHECK-NEXT:    %f1 = cim.op.gemm %[[NEW1]], %a, %b1
// CHECK-NEXT:    %[[T0:.*]] = cim.barrier %f0
// CHECK-NEXT:    %[[T1:.*]] = cim.barrier %f1
// CHECK-NEXT:    %f2 = cim.op.gemm %x, %a, %b2
// CHECK-NEXT:    %[[T2:.*]] = cim.barrier %f2
// CHECK:         func.return %[[T0]], %[[T1]], %[[T2]]

// -----

// An unbalanced graph: by dependency level (leaf, c0, c1, c2, root) the ops alternate between the
// two crossbars; each starts in the first step after its dependencies and its crossbar's last op.

func.func @unbalanced(%a: tensor<4x4xi32>, %b: tensor<4x4xi32>, %c: tensor<4x4xi32>) -> tensor<4x4xi32> {
  %dev = cim.acquire_device {availableCrossbarCount = 2 : i32} -> !cim.deviceId
  %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %c0 = cim.op.gemm %x, %a, %b : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %c1 = cim.op.gemm %x, %c0, %b : !cim.crossbarId, !cim.future<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %c2 = cim.op.gemm %x, %c1, %b : !cim.crossbarId, !cim.future<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %leaf = cim.op.gemm %x, %a, %c : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %root = cim.op.gemm %x, %c2, %leaf : !cim.crossbarId, !cim.future<4x4xi32>, !cim.future<4x4xi32> -> !cim.future<4x4xi32>
  %t = cim.barrier %root : !cim.future<4x4xi32> -> tensor<4x4xi32>
  cim.release_crossbar %x : !cim.crossbarId
  cim.release_device %dev : !cim.deviceId
  return %t : tensor<4x4xi32>
}

// CHECK-LABEL: func.func @unbalanced
// CHECK:         %[[NEW1:.*]] = cim.acquire_crossbar %dev
// CHECK-NEXT:    %x = cim.acquire_crossbar %dev
// CHECK-NEXT:    %leaf = cim.op.gemm %x, %a, %c
// CHECK-NEXT:    %c0 = cim.op.gemm %[[NEW1]], %a, %b
// CHECK-NEXT:    %[[LEAF:.*]] = cim.barrier %leaf
// CHECK-NEXT:    %[[C0:.*]] = cim.barrier %c0
// CHECK-NEXT:    %c1 = cim.op.gemm %x, %[[C0]], %b
// CHECK-NEXT:    %[[C1:.*]] = cim.barrier %c1
// CHECK-NEXT:    %c2 = cim.op.gemm %[[NEW1]], %[[C1]], %b
// CHECK-NEXT:    %[[C2:.*]] = cim.barrier %c2
// CHECK-NEXT:    %root = cim.op.gemm %x, %[[C2]], %[[LEAF]]
// CHECK-NEXT:    cim.barrier %root
