// RUN: cim-opt %s --split-input-file --verify-diagnostics -p cim-to-memristor | filecheck %s

// Two crossbars; the gemm's weights are written once per tile, then reused; the gemv writes the
// transposed matrix so that gevm (v·B) computes m·v.
func.func @lower(%a: tensor<6x3xi32>, %b: tensor<3x6xi32>, %m: tensor<5x3xi32>, %v: tensor<3xi32>) -> (tensor<6x6xi32>, tensor<6x6xi32>, tensor<5xi32>) {
  %dev = cim.acquire_device {availableCrossbarCount = 2 : i32, isFullyScheduled = true} -> !cim.deviceId
  %x0 = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %x1 = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %f0 = cim.op.gemm %x0, %a, %b : !cim.crossbarId, tensor<6x3xi32>, tensor<3x6xi32> -> !cim.future<6x6xi32>
  %t0 = cim.barrier %f0 : !cim.future<6x6xi32> -> tensor<6x6xi32>
  %f1 = cim.op.gemm %x0, %a, %b : !cim.crossbarId, tensor<6x3xi32>, tensor<3x6xi32> -> !cim.future<6x6xi32>
  %t1 = cim.barrier %f1 : !cim.future<6x6xi32> -> tensor<6x6xi32>
  %f2 = cim.op.gemv %x1, %m, %v : !cim.crossbarId, tensor<5x3xi32>, tensor<3xi32> -> !cim.future<5xi32>
  %t2 = cim.barrier %f2 : !cim.future<5xi32> -> tensor<5xi32>
  cim.release_crossbar %x1 : !cim.crossbarId
  cim.release_crossbar %x0 : !cim.crossbarId
  cim.release_device %dev : !cim.deviceId
  return %t0, %t1, %t2 : tensor<6x6xi32>, tensor<6x6xi32>, tensor<5xi32>
}

// CHECK-LABEL: func.func @lower
// CHECK-NEXT:    %[[T0:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    %[[T1:.*]] = arith.constant 1 : i32
// CHECK-NEXT:    %[[R0:.*]] = bufferization.alloc_tensor() : tensor<6x6xi32>
// CHECK-NEXT:    %[[A:.*]] = bufferization.to_buffer %a : tensor<6x3xi32> to memref<6x3xi32>
// CHECK-NEXT:    %[[B:.*]] = bufferization.to_buffer %b : tensor<3x6xi32> to memref<3x6xi32>
// CHECK-NEXT:    %[[C0:.*]] = bufferization.to_buffer %[[R0]] : tensor<6x6xi32> to memref<6x6xi32>
// CHECK-NEXT:    memristor.write_to_crossbar %[[T0]], %[[B]] : i32, memref<3x6xi32>
// CHECK-NEXT:    memristor.gemm %[[T0]], %[[A]], %[[C0]] : i32, memref<6x3xi32>, memref<6x6xi32>
// CHECK-NEXT:    memristor.barrier %[[T0]] : i32
// CHECK-NEXT:    %[[R1:.*]] = bufferization.alloc_tensor() : tensor<6x6xi32>
// CHECK-NOT:     memristor.write_to_crossbar
// CHECK:         memristor.gemm %[[T0]], %{{.*}}, %{{.*}} : i32, memref<6x3xi32>, memref<6x6xi32>
// CHECK-NEXT:    memristor.barrier %[[T0]] : i32
// CHECK-NEXT:    %[[R2:.*]] = bufferization.alloc_tensor() : tensor<5xi32>
// CHECK-NEXT:    %[[E:.*]] = tensor.empty() : tensor<3x5xi32>
// CHECK-NEXT:    %[[MT:.*]] = linalg.transpose ins(%m:tensor<5x3xi32>) outs(%[[E]]:tensor<3x5xi32>) permutation = [1, 0]
// CHECK-NEXT:    %[[MB:.*]] = bufferization.to_buffer %[[MT]] : tensor<3x5xi32> to memref<3x5xi32>
// CHECK-NEXT:    %[[V:.*]] = bufferization.to_buffer %v : tensor<3xi32> to memref<3xi32>
// CHECK-NEXT:    %[[C2:.*]] = bufferization.to_buffer %[[R2]] : tensor<5xi32> to memref<5xi32>
// CHECK-NEXT:    memristor.write_to_crossbar %[[T1]], %[[MB]] : i32, memref<3x5xi32>
// CHECK-NEXT:    memristor.gevm %[[T1]], %[[V]], %[[C2]] : i32, memref<3xi32>, memref<5xi32>
// CHECK-NEXT:    memristor.barrier %[[T1]] : i32
// CHECK-NEXT:    func.return %[[R0]], %[[R1]], %[[R2]]
// CHECK-NOT:     cim.op

// -----

// One square matrix, a gemm (stores W) then a gemv (stores Wᵀ) then a gemm again on one crossbar:
// three different contents in turn, so three writes.
func.func @gemm_and_gemv_on_one_matrix(%x: tensor<4x4xi32>, %w: tensor<4x4xi32>, %v: tensor<4xi32>) -> (tensor<4x4xi32>, tensor<4xi32>, tensor<4x4xi32>) {
  %dev = cim.acquire_device {availableCrossbarCount = 1 : i32, isFullyScheduled = true} -> !cim.deviceId
  %c = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %f0 = cim.op.gemm %c, %x, %w : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t0 = cim.barrier %f0 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  %f1 = cim.op.gemv %c, %w, %v : !cim.crossbarId, tensor<4x4xi32>, tensor<4xi32> -> !cim.future<4xi32>
  %t1 = cim.barrier %f1 : !cim.future<4xi32> -> tensor<4xi32>
  %f2 = cim.op.gemm %c, %x, %w : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t2 = cim.barrier %f2 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  cim.release_crossbar %c : !cim.crossbarId
  cim.release_device %dev : !cim.deviceId
  return %t0, %t1, %t2 : tensor<4x4xi32>, tensor<4xi32>, tensor<4x4xi32>
}

// CHECK-LABEL: func.func @gemm_and_gemv_on_one_matrix
// CHECK:         %[[W0:.*]] = bufferization.to_buffer %w : tensor<4x4xi32> to memref<4x4xi32>
// CHECK:         memristor.write_to_crossbar %{{.*}}, %[[W0]]
// CHECK:         memristor.gemm
// CHECK:         %[[WT:.*]] = linalg.transpose ins(%w:tensor<4x4xi32>)
// CHECK-NEXT:    %[[W1:.*]] = bufferization.to_buffer %[[WT]] : tensor<4x4xi32> to memref<4x4xi32>
// CHECK:         memristor.write_to_crossbar %{{.*}}, %[[W1]]
// CHECK:         memristor.gevm
// CHECK:         %[[W2:.*]] = bufferization.to_buffer %w : tensor<4x4xi32> to memref<4x4xi32>
// CHECK:         memristor.write_to_crossbar %{{.*}}, %[[W2]]
// CHECK:         memristor.gemm

// -----

func.func @future_argument(%f: !cim.future<6x6xi32>) -> tensor<6x6xi32> {
  %t = cim.barrier %f : !cim.future<6x6xi32> -> tensor<6x6xi32>
  return %t : tensor<6x6xi32>
}
// CHECK: cim-to-memristor: 'cim.barrier' waits for a future that no crossbar op of its block computes
