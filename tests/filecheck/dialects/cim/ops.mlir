// RUN: CIM_ROUNDTRIP
// RUN: CIM_GENERIC_ROUNDTRIP

func.func @ops(%a: tensor<6x3xi32>, %b: tensor<3x6xi32>, %v: tensor<3xi32>, %sq: tensor<6x6xi32>, %a8: tensor<6x3xi8>, %b8: tensor<3x6xi8>) -> tensor<6x6xi32> {
  %cim_dev = cim.acquire_device -> !cim.deviceId
  %dev4 = cim.acquire_device {availableCrossbarCount = 4 : i32, isFullyScheduled = true} -> !cim.deviceId
  %xbar = cim.acquire_crossbar %cim_dev : !cim.deviceId -> !cim.crossbarId
  %f = cim.op.gemm %xbar, %a, %b : !cim.crossbarId, tensor<6x3xi32>, tensor<3x6xi32> -> !cim.future<6x6xi32>
  %g = cim.op.gemm %xbar, %f, %sq : !cim.crossbarId, !cim.future<6x6xi32>, tensor<6x6xi32> -> !cim.future<6x6xi32>
  %h = cim.op.gemv %xbar, %a, %v : !cim.crossbarId, tensor<6x3xi32>, tensor<3xi32> -> !cim.future<6xi32>
  %q = cim.op.gemm %xbar, %a8, %b8 : !cim.crossbarId, tensor<6x3xi8>, tensor<3x6xi8> -> !cim.future<6x6xi32>
  %r = cim.barrier %g : !cim.future<6x6xi32> -> tensor<6x6xi32>
  %s = "test.op"() : () -> !cim.future<i32>
  cim.release_crossbar %xbar : !cim.crossbarId
  cim.release_device %cim_dev : !cim.deviceId
  return %r : tensor<6x6xi32>
}

// CHECK:      %cim_dev = cim.acquire_device -> !cim.deviceId
// CHECK-NEXT: %dev4 = cim.acquire_device {availableCrossbarCount = 4 : i32, isFullyScheduled = true} -> !cim.deviceId
// CHECK-NEXT: %xbar = cim.acquire_crossbar %cim_dev : !cim.deviceId -> !cim.crossbarId
// CHECK-NEXT: %f = cim.op.gemm %xbar, %a, %b : !cim.crossbarId, tensor<6x3xi32>, tensor<3x6xi32> -> !cim.future<6x6xi32>
// CHECK-NEXT: %g = cim.op.gemm %xbar, %f, %sq : !cim.crossbarId, !cim.future<6x6xi32>, tensor<6x6xi32> -> !cim.future<6x6xi32>
// CHECK-NEXT: %h = cim.op.gemv %xbar, %a, %v : !cim.crossbarId, tensor<6x3xi32>, tensor<3xi32> -> !cim.future<6xi32>
// CHECK-NEXT: %q = cim.op.gemm %xbar, %a8, %b8 : !cim.crossbarId, tensor<6x3xi8>, tensor<3x6xi8> -> !cim.future<6x6xi32>
// CHECK-NEXT: %r = cim.barrier %g : !cim.future<6x6xi32> -> tensor<6x6xi32>
// CHECK-NEXT: %s = "test.op"() : () -> !cim.future<i32>
// CHECK-NEXT: cim.release_crossbar %xbar : !cim.crossbarId
// CHECK-NEXT: cim.release_device %cim_dev : !cim.deviceId
