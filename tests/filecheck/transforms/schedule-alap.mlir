// RUN: cim-opt %s --split-input-file -p schedule-alap | filecheck %s
// RUN: cim-opt %s --split-input-file -p cim-schedule-alap | filecheck %s
// RUN: cim-opt %s --split-input-file -p schedule-asap | filecheck %s --check-prefix=ASAP

// An unbalanced graph: a chain c0 -> c1 -> c2 and a lone leaf both feed the root. ASAP runs the leaf
// in the first step (next to c0); ALAP runs it as late as possible, in the step just before the root
// (next to c2).

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
// CHECK-NEXT:    %dev = cim.acquire_device {availableCrossbarCount = 2 : i32, isFullyScheduled = true}
// CHECK-NEXT:    %[[NEW1:.*]] = cim.acquire_crossbar %dev
// CHECK-NEXT:    %x = cim.acquire_crossbar %dev
// CHECK-NEXT:    %c0 = cim.op.gemm %x, %a, %b
// CHECK-NEXT:    %[[C0:.*]] = cim.barrier %c0
// CHECK-NEXT:    %c1 = cim.op.gemm %x, %[[C0]], %b
// CHECK-NEXT:    %[[C1:.*]] = cim.barrier %c1
// CHECK-NEXT:    %c2 = cim.op.gemm %x, %[[C1]], %b
// CHECK-NEXT:    %leaf = cim.op.gemm %[[NEW1]], %a, %c
// CHECK-NEXT:    %[[C2:.*]] = cim.barrier %c2
// CHECK-NEXT:    %[[LEAF:.*]] = cim.barrier %leaf
// CHECK-NEXT:    %root = cim.op.gemm %x, %[[C2]], %[[LEAF]]
// CHECK-NEXT:    %[[T:.*]] = cim.barrier %root
// CHECK-NEXT:    cim.release_crossbar %x
// CHECK-NEXT:    cim.release_crossbar %[[NEW1]]
// CHECK-NEXT:    cim.release_device %dev
// CHECK-NEXT:    func.return %[[T]]

// ASAP-LABEL: func.func @unbalanced
// ASAP:         %x = cim.acquire_crossbar %dev
// ASAP-NEXT:    %leaf = cim.op.gemm %x, %a, %c
// ASAP-NEXT:    %c0 = cim.op.gemm %{{.*}}, %a, %b
// ASAP-NEXT:    %[[LEAF:.*]] = cim.barrier %leaf
// ASAP-NEXT:    %[[C0:.*]] = cim.barrier %c0
// ASAP-NEXT:    %c1 = cim.op.gemm %x, %[[C0]], %b
// ASAP-NEXT:    %[[C1:.*]] = cim.barrier %c1
// ASAP-NEXT:    %c2 = cim.op.gemm %x, %[[C1]], %b
// ASAP-NEXT:    %[[C2:.*]] = cim.barrier %c2
// ASAP-NEXT:    %root = cim.op.gemm %x, %[[C2]], %[[LEAF]]

// -----

// Five independent gemms on four crossbars: ALAP fills the last step first (the first four gemms in
// graph order, first fit from %x), so the fifth runs alone in the step before, on %x.

func.func @independent(%a: tensor<4x4xi32>, %b0: tensor<4x4xi32>, %b1: tensor<4x4xi32>, %b2: tensor<4x4xi32>, %b3: tensor<4x4xi32>, %b4: tensor<4x4xi32>) -> (tensor<4x4xi32>, tensor<4x4xi32>, tensor<4x4xi32>, tensor<4x4xi32>, tensor<4x4xi32>) {
  %dev = cim.acquire_device {availableCrossbarCount = 4 : i32} -> !cim.deviceId
  %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %f0 = cim.op.gemm %x, %a, %b0 : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t0 = cim.barrier %f0 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  %f1 = cim.op.gemm %x, %a, %b1 : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t1 = cim.barrier %f1 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  %f2 = cim.op.gemm %x, %a, %b2 : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t2 = cim.barrier %f2 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  %f3 = cim.op.gemm %x, %a, %b3 : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t3 = cim.barrier %f3 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  %f4 = cim.op.gemm %x, %a, %b4 : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t4 = cim.barrier %f4 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  cim.release_crossbar %x : !cim.crossbarId
  cim.release_device %dev : !cim.deviceId
  return %t0, %t1, %t2, %t3, %t4 : tensor<4x4xi32>, tensor<4x4xi32>, tensor<4x4xi32>, tensor<4x4xi32>, tensor<4x4xi32>
}

// CHECK-LABEL: func.func @independent
// CHECK-NEXT:    %dev = cim.acquire_device
// CHECK-NEXT:    %[[NEW3:.*]] = cim.acquire_crossbar %dev
// CHECK-NEXT:    %[[NEW2:.*]] = cim.acquire_crossbar %dev
// CHECK-NEXT:    %[[NEW1:.*]] = cim.acquire_crossbar %dev
// CHECK-NEXT:    %x = cim.acquire_crossbar %dev
// CHECK-NEXT:    %f4 = cim.op.gemm %x, %a, %b4
// CHECK-NEXT:    %[[T4:.*]] = cim.barrier %f4
// CHECK-NEXT:    %f0 = cim.op.gemm %x, %a, %b0
// CHECK-NEXT:    %f1 = cim.op.gemm %[[NEW1]], %a, %b1
// CHECK-NEXT:    %f2 = cim.op.gemm %[[NEW2]], %a, %b2
// CHECK-NEXT:    %f3 = cim.op.gemm %[[NEW3]], %a, %b3
// CHECK-NEXT:    %[[T0:.*]] = cim.barrier %f0
// CHECK-NEXT:    %[[T1:.*]] = cim.barrier %f1
// CHECK-NEXT:    %[[T2:.*]] = cim.barrier %f2
// CHECK-NEXT:    %[[T3:.*]] = cim.barrier %f3
// CHECK-NEXT:    cim.release_crossbar %x
// CHECK:         func.return %[[T0]], %[[T1]], %[[T2]], %[[T3]], %[[T4]]

// ASAP-LABEL: func.func @independent
// ASAP:         %f0 = cim.op.gemm %x, %a, %b0
// ASAP-NEXT:    %f1 = cim.op.gemm
// ASAP-NEXT:    %f2 = cim.op.gemm
// ASAP-NEXT:    %f3 = cim.op.gemm
// ASAP-COUNT-4: cim.barrier
// ASAP-NEXT:    %f4 = cim.op.gemm %x, %a, %b4

// -----

// A chain is serial in both directions.

func.func @chain(%a: tensor<4x4xi32>, %b: tensor<4x4xi32>) -> tensor<4x4xi32> {
  %dev = cim.acquire_device {availableCrossbarCount = 3 : i32} -> !cim.deviceId
  %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %f0 = cim.op.gemm %x, %a, %b : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %f1 = cim.op.gemm %x, %f0, %b : !cim.crossbarId, !cim.future<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %f2 = cim.op.gemm %x, %f1, %b : !cim.crossbarId, !cim.future<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t = cim.barrier %f2 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  cim.release_crossbar %x : !cim.crossbarId
  cim.release_device %dev : !cim.deviceId
  return %t : tensor<4x4xi32>
}

// CHECK-LABEL: func.func @chain
// CHECK:         %f0 = cim.op.gemm %x, %a, %b
// CHECK-NEXT:    %[[T0:.*]] = cim.barrier %f0
// CHECK-NEXT:    %f1 = cim.op.gemm %x, %[[T0]], %b
// CHECK-NEXT:    %[[T1:.*]] = cim.barrier %f1
// CHECK-NEXT:    %f2 = cim.op.gemm %x, %[[T1]], %b
// CHECK-NEXT:    %[[T2:.*]] = cim.barrier %f2
// CHECK-NEXT:    cim.release_crossbar %x
// CHECK-COUNT-2: cim.release_crossbar
// CHECK-NEXT:    cim.release_device %dev
// CHECK-NEXT:    func.return %[[T2]]

// ASAP-LABEL: func.func @chain
