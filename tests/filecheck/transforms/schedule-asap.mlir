// RUN: cim-opt %s --split-input-file --verify-diagnostics -p schedule-asap | filecheck %s
// RUN: cim-opt %s --split-input-file --verify-diagnostics -p cim-schedule-asap | filecheck %s

// Five dependent gemms on one crossbar run strictly one after the other: each gets its barrier in
// its own step and the next gemm consumes that barrier's tensor.

func.func @chain(%a: tensor<4x4xi32>, %b: tensor<4x4xi32>) -> tensor<4x4xi32> {
  %dev = cim.acquire_device {availableCrossbarCount = 1 : i32} -> !cim.deviceId
  %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %f0 = cim.op.gemm %x, %a, %b : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %f1 = cim.op.gemm %x, %f0, %b : !cim.crossbarId, !cim.future<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %f2 = cim.op.gemm %x, %f1, %b : !cim.crossbarId, !cim.future<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %f3 = cim.op.gemm %x, %f2, %b : !cim.crossbarId, !cim.future<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %f4 = cim.op.gemm %x, %f3, %b : !cim.crossbarId, !cim.future<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t = cim.barrier %f4 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  cim.release_crossbar %x : !cim.crossbarId
  cim.release_device %dev : !cim.deviceId
  return %t : tensor<4x4xi32>
}

// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %dev = cim.acquire_device {isFullyScheduled = true} -> !cim.deviceId
// CHECK-NEXT:    %x = cim.acquire_crossbar %dev
// CHECK-NEXT:    %f0 = cim.op.gemm %x, %a, %b
// CHECK-NEXT:    %[[T0:.*]] = cim.barrier %f0
// CHECK-NEXT:    %f1 = cim.op.gemm %x, %[[T0]], %b : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32>
// CHECK-NEXT:    %[[T1:.*]] = cim.barrier %f1
// CHECK-NEXT:    %f2 = cim.op.gemm %x, %[[T1]], %b
// CHECK-NEXT:    %[[T2:.*]] = cim.barrier %f2
// CHECK-NEXT:    %f3 = cim.op.gemm %x, %[[T2]], %b
// CHECK-NEXT:    %[[T3:.*]] = cim.barrier %f3
// CHECK-NEXT:    %f4 = cim.op.gemm %x, %[[T3]], %b
// CHECK-NEXT:    %[[T4:.*]] = cim.barrier %f4
// CHECK-NEXT:    cim.release_crossbar %x
// CHECK-NEXT:    cim.release_device %dev
// CHECK-NEXT:    func.return %[[T4]]

// -----

// Five independent gemms on four crossbars: three crossbars are acquired (each new one before the
// previous), the first four gemms run in step 0 on [%x, new1, new2, new3], then their four barriers,
// then the fifth gemm on %x again (first fit restarts at crossbar 0).

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
// CHECK-NEXT:    %dev = cim.acquire_device {availableCrossbarCount = 4 : i32, isFullyScheduled = true}
// CHECK-NEXT:    %[[NEW3:.*]] = cim.acquire_crossbar %dev
// CHECK-NEXT:    %[[NEW2:.*]] = cim.acquire_crossbar %dev
// CHECK-NEXT:    %[[NEW1:.*]] = cim.acquire_crossbar %dev
// CHECK-NEXT:    %x = cim.acquire_crossbar %dev
// CHECK-NEXT:    %f0 = cim.op.gemm %x, %a, %b0
// CHECK-NEXT:    %f1 = cim.op.gemm %[[NEW1]], %a, %b1
// CHECK-NEXT:    %f2 = cim.op.gemm %[[NEW2]], %a, %b2
// CHECK-NEXT:    %f3 = cim.op.gemm %[[NEW3]], %a, %b3
// CHECK-NEXT:    %[[T0:.*]] = cim.barrier %f0
// CHECK-NEXT:    %[[T1:.*]] = cim.barrier %f1
// CHECK-NEXT:    %[[T2:.*]] = cim.barrier %f2
// CHECK-NEXT:    %[[T3:.*]] = cim.barrier %f3
// CHECK-NEXT:    %f4 = cim.op.gemm %x, %a, %b4
// CHECK-NEXT:    %[[T4:.*]] = cim.barrier %f4
// CHECK-NEXT:    cim.release_crossbar %x
// CHECK-NEXT:    cim.release_crossbar %[[NEW1]]
// CHECK-NEXT:    cim.release_crossbar %[[NEW2]]
// CHECK-NEXT:    cim.release_crossbar %[[NEW3]]
// CHECK-NEXT:    cim.release_device %dev
// CHECK-NEXT:    func.return %[[T0]], %[[T1]], %[[T2]], %[[T3]], %[[T4]]

// -----

// A tree: two leaves in parallel in step 0, the root in step 1 on the first crossbar, consuming
// both leaves' barrier tensors.

func.func @tree(%a: tensor<4x4xi32>, %b: tensor<4x4xi32>, %c: tensor<4x4xi32>) -> tensor<4x4xi32> {
  %dev = cim.acquire_device {availableCrossbarCount = 2 : i32} -> !cim.deviceId
  %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %l = cim.op.gemm %x, %a, %b : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %r = cim.op.gemm %x, %a, %c : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %root = cim.op.gemm %x, %l, %r : !cim.crossbarId, !cim.future<4x4xi32>, !cim.future<4x4xi32> -> !cim.future<4x4xi32>
  %t = cim.barrier %root : !cim.future<4x4xi32> -> tensor<4x4xi32>
  cim.release_crossbar %x : !cim.crossbarId
  cim.release_device %dev : !cim.deviceId
  return %t : tensor<4x4xi32>
}

// CHECK-LABEL: func.func @tree
// CHECK-NEXT:    %dev = cim.acquire_device
// CHECK-NEXT:    %[[NEW1:.*]] = cim.acquire_crossbar %dev
// CHECK-NEXT:    %x = cim.acquire_crossbar %dev
// CHECK-NEXT:    %l = cim.op.gemm %x, %a, %b
// CHECK-NEXT:    %r = cim.op.gemm %[[NEW1]], %a, %c
// CHECK-NEXT:    %[[L:.*]] = cim.barrier %l
// CHECK-NEXT:    %[[R:.*]] = cim.barrier %r
// CHECK-NEXT:    %root = cim.op.gemm %x, %[[L]], %[[R]] : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32>
// CHECK-NEXT:    %[[T:.*]] = cim.barrier %root
// CHECK-NEXT:    cim.release_crossbar %x
// CHECK-NEXT:    cim.release_crossbar %[[NEW1]]
// CHECK-NEXT:    cim.release_device %dev
// CHECK-NEXT:    func.return %[[T]]

// -----

// A result used by two gemms is one node: it is scheduled once, with one barrier, and both users run
// in parallel in the next step on that barrier's tensor.

func.func @shared(%a: tensor<4x4xi32>, %b: tensor<4x4xi32>, %c: tensor<4x4xi32>) -> (tensor<4x4xi32>, tensor<4x4xi32>) {
  %dev = cim.acquire_device {availableCrossbarCount = 2 : i32} -> !cim.deviceId
  %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %s = cim.op.gemm %x, %a, %b : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %u = cim.op.gemm %x, %s, %b : !cim.crossbarId, !cim.future<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %v = cim.op.gemm %x, %s, %c : !cim.crossbarId, !cim.future<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %tu = cim.barrier %u : !cim.future<4x4xi32> -> tensor<4x4xi32>
  %tv = cim.barrier %v : !cim.future<4x4xi32> -> tensor<4x4xi32>
  cim.release_crossbar %x : !cim.crossbarId
  cim.release_device %dev : !cim.deviceId
  return %tu, %tv : tensor<4x4xi32>, tensor<4x4xi32>
}

// CHECK-LABEL: func.func @shared
// CHECK:         %s = cim.op.gemm %x, %a, %b
// CHECK-NEXT:    %[[S:.*]] = cim.barrier %s
// CHECK-NEXT:    %u = cim.op.gemm %x, %[[S]], %b
// CHECK-NEXT:    %v = cim.op.gemm %{{.*}}, %[[S]], %c
// CHECK-NEXT:    %[[U:.*]] = cim.barrier %u
// CHECK-NEXT:    %[[V:.*]] = cim.barrier %v
// CHECK-NOT:     cim.op.gemm
// CHECK-NOT:     cim.barrier
// CHECK:         func.return %[[U]], %[[V]]

// -----

// Host ops between cim ops: the slices making operands of a moved gemm are hoisted before it, the
// sum of two barrier tensors sinks below the barriers, and the gemm reading that sum waits for both
// partial products (a dependency through a host op, which Cinnamon's graph misses).

func.func @host_ops(%a: tensor<2x8xi32>, %w: tensor<8x4xi32>, %v: tensor<4x4xi32>) -> tensor<2x4xi32> {
  %dev = cim.acquire_device {availableCrossbarCount = 2 : i32} -> !cim.deviceId
  %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %a0 = tensor.extract_slice %a[0, 0] [2, 4] [1, 1] : tensor<2x8xi32> to tensor<2x4xi32>
  %w0 = tensor.extract_slice %w[0, 0] [4, 4] [1, 1] : tensor<8x4xi32> to tensor<4x4xi32>
  %f0 = cim.op.gemm %x, %a0, %w0 : !cim.crossbarId, tensor<2x4xi32>, tensor<4x4xi32> -> !cim.future<2x4xi32>
  %t0 = cim.barrier %f0 : !cim.future<2x4xi32> -> tensor<2x4xi32>
  %a1 = tensor.extract_slice %a[0, 4] [2, 4] [1, 1] : tensor<2x8xi32> to tensor<2x4xi32>
  %w1 = tensor.extract_slice %w[4, 0] [4, 4] [1, 1] : tensor<8x4xi32> to tensor<4x4xi32>
  %f1 = cim.op.gemm %x, %a1, %w1 : !cim.crossbarId, tensor<2x4xi32>, tensor<4x4xi32> -> !cim.future<2x4xi32>
  %t1 = cim.barrier %f1 : !cim.future<2x4xi32> -> tensor<2x4xi32>
  %sum = arith.addi %t0, %t1 : tensor<2x4xi32>
  %f2 = cim.op.gemm %x, %sum, %v : !cim.crossbarId, tensor<2x4xi32>, tensor<4x4xi32> -> !cim.future<2x4xi32>
  %t2 = cim.barrier %f2 : !cim.future<2x4xi32> -> tensor<2x4xi32>
  %r = arith.addi %t2, %sum : tensor<2x4xi32>
  cim.release_crossbar %x : !cim.crossbarId
  cim.release_device %dev : !cim.deviceId
  return %r : tensor<2x4xi32>
}

// CHECK-LABEL: func.func @host_ops
// CHECK-NEXT:    %dev = cim.acquire_device
// CHECK-NEXT:    %[[NEW1:.*]] = cim.acquire_crossbar %dev
// CHECK-NEXT:    %x = cim.acquire_crossbar %dev
// CHECK-NEXT:    %a0 = tensor.extract_slice %a[0, 0]
// CHECK-NEXT:    %w0 = tensor.extract_slice %w[0, 0]
// CHECK-NEXT:    %f0 = cim.op.gemm %x, %a0, %w0
// CHECK-NEXT:    %a1 = tensor.extract_slice %a[0, 4]
// CHECK-NEXT:    %w1 = tensor.extract_slice %w[4, 0]
// CHECK-NEXT:    %f1 = cim.op.gemm %[[NEW1]], %a1, %w1
// CHECK-NEXT:    %[[T0:.*]] = cim.barrier %f0
// CHECK-NEXT:    %[[T1:.*]] = cim.barrier %f1
// CHECK-NEXT:    %sum = arith.addi %[[T0]], %[[T1]]
// CHECK-NEXT:    %f2 = cim.op.gemm %x, %sum, %v
// CHECK-NEXT:    %[[T2:.*]] = cim.barrier %f2
// CHECK-NEXT:    %r = arith.addi %[[T2]], %sum
// CHECK-NEXT:    cim.release_crossbar %x
// CHECK-NEXT:    cim.release_crossbar %[[NEW1]]
// CHECK-NEXT:    cim.release_device %dev
// CHECK-NEXT:    func.return %r

// -----

// The first dispatched op stays where it is; a later independent gemm moves up next to it, above the
// host op that uses the first one's result, which sinks below the barriers.

func.func @host_user_sinks(%a: tensor<4x4xi32>, %b: tensor<4x4xi32>, %c: tensor<4x4xi32>) -> tensor<4x4xi32> {
  %dev = cim.acquire_device {availableCrossbarCount = 2 : i32} -> !cim.deviceId
  %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %f0 = cim.op.gemm %x, %a, %b : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t0 = cim.barrier %f0 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  %d = arith.addi %t0, %t0 : tensor<4x4xi32>
  %f1 = cim.op.gemm %x, %a, %c : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t1 = cim.barrier %f1 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  %r = arith.addi %d, %t1 : tensor<4x4xi32>
  cim.release_crossbar %x : !cim.crossbarId
  cim.release_device %dev : !cim.deviceId
  return %r : tensor<4x4xi32>
}

// CHECK-LABEL: func.func @host_user_sinks
// CHECK:         %f0 = cim.op.gemm %x, %a, %b
// CHECK-NEXT:    %f1 = cim.op.gemm %{{.*}}, %a, %c
// CHECK-NEXT:    %[[T0:.*]] = cim.barrier %f0
// CHECK-NEXT:    %[[T1:.*]] = cim.barrier %f1
// CHECK-NEXT:    %d = arith.addi %[[T0]], %[[T0]]
// CHECK-NEXT:    %r = arith.addi %d, %[[T1]]

// -----

// A barrier result used inside a loop body: the whole loop sinks below the barrier.

func.func @nested_use(%a: tensor<4x4xi32>, %b: tensor<4x4xi32>) -> tensor<4x4xi32> {
  %dev = cim.acquire_device {availableCrossbarCount = 2 : i32} -> !cim.deviceId
  %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %f0 = cim.op.gemm %x, %a, %b : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t0 = cim.barrier %f0 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %acc = scf.for %i = %c0 to %c3 step %c1 iter_args(%s = %a) -> (tensor<4x4xi32>) {
    %n = arith.addi %s, %t0 : tensor<4x4xi32>
    scf.yield %n : tensor<4x4xi32>
  }
  %f1 = cim.op.gemm %x, %b, %b : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t1 = cim.barrier %f1 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  %r = arith.addi %acc, %t1 : tensor<4x4xi32>
  cim.release_crossbar %x : !cim.crossbarId
  cim.release_device %dev : !cim.deviceId
  return %r : tensor<4x4xi32>
}

// CHECK-LABEL: func.func @nested_use
// CHECK:         %f0 = cim.op.gemm %x, %a, %b
// CHECK-NEXT:    %f1 = cim.op.gemm %{{.*}}, %b, %b
// CHECK-NEXT:    %[[T0:.*]] = cim.barrier %f0
// CHECK-NEXT:    %[[T1:.*]] = cim.barrier %f1
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    %c3 = arith.constant 3 : index
// CHECK-NEXT:    %acc = scf.for
// CHECK-NEXT:      %n = arith.addi %s, %[[T0]]
// CHECK-NEXT:      scf.yield %n
// CHECK-NEXT:    }
// CHECK-NEXT:    %r = arith.addi %acc, %[[T1]]

// -----

// Several acquired crossbars: the first one is kept, the others' uses are redirected to it and they
// and their releases are erased before new crossbars are acquired.

func.func @several_crossbars(%a: tensor<4x4xi32>, %b: tensor<4x4xi32>) -> (tensor<4x4xi32>, tensor<4x4xi32>) {
  %dev = cim.acquire_device {availableCrossbarCount = 2 : i32} -> !cim.deviceId
  %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %y = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %f0 = cim.op.gemm %y, %a, %b : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t0 = cim.barrier %f0 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  %f1 = cim.op.gemm %x, %a, %a : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t1 = cim.barrier %f1 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  cim.release_crossbar %y : !cim.crossbarId
  cim.release_crossbar %x : !cim.crossbarId
  cim.release_device %dev : !cim.deviceId
  return %t0, %t1 : tensor<4x4xi32>, tensor<4x4xi32>
}

// CHECK-LABEL: func.func @several_crossbars
// CHECK-NEXT:    %dev = cim.acquire_device
// CHECK-NEXT:    %[[NEW1:.*]] = cim.acquire_crossbar %dev
// CHECK-NEXT:    %x = cim.acquire_crossbar %dev
// CHECK-NEXT:    %f0 = cim.op.gemm %x, %a, %b
// CHECK-NEXT:    %f1 = cim.op.gemm %[[NEW1]], %a, %a
// CHECK-NEXT:    cim.barrier %f0
// CHECK-NEXT:    cim.barrier %f1
// CHECK-NEXT:    cim.release_crossbar %x
// CHECK-NEXT:    cim.release_crossbar %[[NEW1]]
// CHECK-NEXT:    cim.release_device %dev
// CHECK-NOT:     %y

// -----

// A device already fully scheduled is left alone.

func.func @done(%a: tensor<4x4xi32>, %b: tensor<4x4xi32>) -> tensor<4x4xi32> {
  %dev = cim.acquire_device {availableCrossbarCount = 4 : i32, isFullyScheduled = true} -> !cim.deviceId
  %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %f0 = cim.op.gemm %x, %a, %b : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %f1 = cim.op.gemm %x, %a, %b : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t = cim.barrier %f1 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  cim.release_crossbar %x : !cim.crossbarId
  cim.release_device %dev : !cim.deviceId
  return %t : tensor<4x4xi32>
}

// CHECK-LABEL: func.func @done
// CHECK-NEXT:    %dev = cim.acquire_device {availableCrossbarCount = 4 : i32, isFullyScheduled = true}
// CHECK-NEXT:    %x = cim.acquire_crossbar %dev
// CHECK-NEXT:    %f0 = cim.op.gemm %x, %a, %b
// CHECK-NEXT:    %f1 = cim.op.gemm %x, %a, %b
// CHECK-NEXT:    %t = cim.barrier %f1
// CHECK-NEXT:    cim.release_crossbar %x
// CHECK-NEXT:    cim.release_device %dev

// -----

// Two devices (two layers): the second layer's gemm reads the first layer's result through a host op;
// both are scheduled, in program order. The first device offers two crossbars but has one gemm: no
// second crossbar is acquired.

func.func @two_layers(%a: tensor<4x4xi32>, %b: tensor<4x4xi32>, %c: tensor<4x4xi32>) -> tensor<4x4xi32> {
  %d1 = cim.acquire_device {availableCrossbarCount = 2 : i32} -> !cim.deviceId
  %x1 = cim.acquire_crossbar %d1 : !cim.deviceId -> !cim.crossbarId
  %f0 = cim.op.gemm %x1, %a, %b : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t0 = cim.barrier %f0 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  cim.release_crossbar %x1 : !cim.crossbarId
  cim.release_device %d1 : !cim.deviceId
  %h = arith.addi %t0, %a : tensor<4x4xi32>
  %d2 = cim.acquire_device {availableCrossbarCount = 1 : i32} -> !cim.deviceId
  %x2 = cim.acquire_crossbar %d2 : !cim.deviceId -> !cim.crossbarId
  %f1 = cim.op.gemm %x2, %h, %c : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t1 = cim.barrier %f1 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  cim.release_crossbar %x2 : !cim.crossbarId
  cim.release_device %d2 : !cim.deviceId
  return %t1 : tensor<4x4xi32>
}

// CHECK-LABEL: func.func @two_layers
// CHECK-NEXT:    %d1 = cim.acquire_device {availableCrossbarCount = 2 : i32, isFullyScheduled = true}
// CHECK-NEXT:    %x1 = cim.acquire_crossbar %d1
// CHECK-NEXT:    %f0 = cim.op.gemm %x1, %a, %b
// CHECK-NEXT:    %[[T0:.*]] = cim.barrier %f0
// CHECK-NEXT:    cim.release_crossbar %x1
// CHECK-NEXT:    cim.release_device %d1
// CHECK-NEXT:    %h = arith.addi %[[T0]], %a
// CHECK-NEXT:    %d2 = cim.acquire_device {isFullyScheduled = true}
// CHECK-NEXT:    %x2 = cim.acquire_crossbar %d2
// CHECK-NEXT:    %f1 = cim.op.gemm %x2, %h, %c
// CHECK-NEXT:    %[[T1:.*]] = cim.barrier %f1
// CHECK-NEXT:    cim.release_crossbar %x2
// CHECK-NEXT:    cim.release_device %d2
// CHECK-NEXT:    func.return %[[T1]]

// -----

// A gemv: its barrier is a vector.

func.func @gemv(%m: tensor<6x3xi32>, %v: tensor<3xi32>) -> tensor<6xi32> {
  %dev = cim.acquire_device {availableCrossbarCount = 2 : i32} -> !cim.deviceId
  %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %f = cim.op.gemv %x, %m, %v : !cim.crossbarId, tensor<6x3xi32>, tensor<3xi32> -> !cim.future<6xi32>
  %t = cim.barrier %f : !cim.future<6xi32> -> tensor<6xi32>
  cim.release_crossbar %x : !cim.crossbarId
  cim.release_device %dev : !cim.deviceId
  return %t : tensor<6xi32>
}

// CHECK-LABEL: func.func @gemv
// CHECK:         %f = cim.op.gemv %x, %m, %v
// CHECK-NEXT:    %[[T:.*]] = cim.barrier %f : !cim.future<6xi32> -> tensor<6xi32>
// CHECK:         func.return %[[T]]

// -----

func.func @crossbar_argument(%x: !cim.crossbarId, %a: tensor<4x4xi32>) {
  %f = cim.op.gemm %x, %a, %a : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  return
}

// CHECK: schedule-asap: cannot schedule 'cim.op.gemm' (%f): its crossbar does not come from a 'cim.acquire_crossbar' of a 'cim.acquire_device'

// -----

func.func @future_escapes(%a: tensor<4x4xi32>) -> !cim.future<4x4xi32> {
  %dev = cim.acquire_device {availableCrossbarCount = 2 : i32} -> !cim.deviceId
  %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %f = cim.op.gemm %x, %a, %a : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  cim.release_crossbar %x : !cim.crossbarId
  cim.release_device %dev : !cim.deviceId
  return %f : !cim.future<4x4xi32>
}

// CHECK: schedule-asap: 'func.return' uses the future of 'cim.op.gemm' (%f); only cim ops and 'cim.barrier' may use a future

// -----

func.func @no_release(%a: tensor<4x4xi32>) {
  %dev = cim.acquire_device {availableCrossbarCount = 2 : i32} -> !cim.deviceId
  %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %f = cim.op.gemm %x, %a, %a : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  return
}

// CHECK: schedule-asap: 'cim.acquire_device' (%dev) needs exactly one 'cim.release_device' in its block

// -----

func.func @early_release(%a: tensor<4x4xi32>) {
  %dev = cim.acquire_device {availableCrossbarCount = 2 : i32} -> !cim.deviceId
  %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  cim.release_crossbar %x : !cim.crossbarId
  %f = cim.op.gemm %x, %a, %a : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  cim.release_device %dev : !cim.deviceId
  return
}

// CHECK: schedule-asap: 'cim.release_crossbar' of 'cim.acquire_device' (%dev) comes before some of its cim ops
