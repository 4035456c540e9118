// RUN: cim-opt %s --split-input-file -p schedule-list | filecheck %s
// RUN: cim-opt %s --split-input-file -p 'schedule-list{device=cinnamon}' | filecheck %s
// RUN: cim-opt %s --split-input-file -p schedule-asap | filecheck %s --check-prefix=ASAP
// RUN: printf 'preset = "cinnamon"\ncrossbars = 4\n' > %t.toml
// RUN: cim-opt %s --split-input-file -p 'schedule-list{device="%t.toml"}' | filecheck %s
// RUN: not cim-opt %s --split-input-file -p 'schedule-list{device=cinamon}' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: not cim-opt %s --split-input-file -p 'schedule-list{device="%t.missing.toml"}' 2>&1 | filecheck %s --check-prefix=MISSING

// BAD: schedule-list: device config: 'preset' must be one of ideal, cinnamon, isaac, puma, prime, got 'cinamon' (did you mean 'cinnamon'?)
// MISSING: schedule-list: device config: cannot read '{{.*}}.missing.toml'

// The gemm %r needs the weights %w1 that %p wrote: list scheduling puts it on %p's crossbar, so
// nothing is written again; ASAP's first fit puts it on crossbar 0, which holds %w0.

func.func @residency(%a: tensor<4x4xi32>, %w0: tensor<4x4xi32>, %w1: tensor<4x4xi32>) -> (tensor<4x4xi32>, tensor<4x4xi32>) {
  %dev = cim.acquire_device {availableCrossbarCount = 2 : i32} -> !cim.deviceId
  %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %p = cim.op.gemm %x, %a, %w1 : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %q = cim.op.gemm %x, %a, %w0 : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %tq = cim.barrier %q : !cim.future<4x4xi32> -> tensor<4x4xi32>
  %r = cim.op.gemm %x, %p, %w1 : !cim.crossbarId, !cim.future<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %tr = cim.barrier %r : !cim.future<4x4xi32> -> tensor<4x4xi32>
  cim.release_crossbar %x : !cim.crossbarId
  cim.release_device %dev : !cim.deviceId
  return %tq, %tr : tensor<4x4xi32>, tensor<4x4xi32>
}

// CHECK-LABEL: func.func @residency
// CHECK-NEXT:    %dev = cim.acquire_device {availableCrossbarCount = 2 : i32, isFullyScheduled = true}
// CHECK-NEXT:    %[[NEW1:.*]] = cim.acquire_crossbar %dev
// CHECK-NEXT:    %x = cim.acquire_crossbar %dev
// CHECK-NEXT:    %p = cim.op.gemm %x, %a, %w1
// CHECK-NEXT:    %q = cim.op.gemm %[[NEW1]], %a, %w0
// CHECK-NEXT:    %[[P:.*]] = cim.barrier %p
// CHECK-NEXT:    %[[Q:.*]] = cim.barrier %q
// CHECK-NEXT:    %r = cim.op.gemm %x, %[[P]], %w1
// CHECK-NEXT:    %[[R:.*]] = cim.barrier %r
// CHECK-NEXT:    cim.release_crossbar %x
// CHECK-NEXT:    cim.release_crossbar %[[NEW1]]
// CHECK-NEXT:    cim.release_device %dev
// CHECK-NEXT:    func.return %[[Q]], %[[R]]

// ASAP-LABEL: func.func @residency
// ASAP:         %[[NEW1:.*]] = cim.acquire_crossbar %dev
// ASAP:         %q = cim.op.gemm %x, %a, %w0
// ASAP-NEXT:    %p = cim.op.gemm %[[NEW1]], %a, %w1
// ASAP:         %r = cim.op.gemm %x, %{{.*}}, %w1

// -----

// Two tiles twice each on two crossbars: list scheduling keeps each tile on one crossbar (two
// writes); ASAP runs the two copies of a tile side by side (four writes).

func.func @grouping(%a: tensor<4x4xi32>, %w0: tensor<4x4xi32>, %w1: tensor<4x4xi32>) -> (tensor<4x4xi32>, tensor<4x4xi32>, tensor<4x4xi32>, tensor<4x4xi32>) {
  %dev = cim.acquire_device {availableCrossbarCount = 2 : i32} -> !cim.deviceId
  %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %f0 = cim.op.gemm %x, %a, %w0 : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t0 = cim.barrier %f0 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  %f1 = cim.op.gemm %x, %a, %w0 : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t1 = cim.barrier %f1 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  %f2 = cim.op.gemm %x, %a, %w1 : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t2 = cim.barrier %f2 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  %f3 = cim.op.gemm %x, %a, %w1 : !cim.crossbarId, tensor<4x4xi32>, tensor<4x4xi32> -> !cim.future<4x4xi32>
  %t3 = cim.barrier %f3 : !cim.future<4x4xi32> -> tensor<4x4xi32>
  cim.release_crossbar %x : !cim.crossbarId
  cim.release_device %dev : !cim.deviceId
  return %t0, %t1, %t2, %t3 : tensor<4x4xi32>, tensor<4x4xi32>, tensor<4x4xi32>, tensor<4x4xi32>
}

// CHECK-LABEL: func.func @grouping
// CHECK:         %[[NEW1:.*]] = cim.acquire_crossbar %dev
// CHECK-NEXT:    %x = cim.acquire_crossbar %dev
// CHECK-NEXT:    %f0 = cim.op.gemm %x, %a, %w0
// CHECK-NEXT:    %f2 = cim.op.gemm %[[NEW1]], %a, %w1
// CHECK-NEXT:    cim.barrier %f0
// CHECK-NEXT:    cim.barrier %f2
// CHECK-NEXT:    %f1 = cim.op.gemm %x, %a, %w0
// CHECK-NEXT:    %f3 = cim.op.gemm %[[NEW1]], %a, %w1
// CHECK-NEXT:    cim.barrier %f1
// CHECK-NEXT:    cim.barrier %f3

// ASAP-LABEL: func.func @grouping
// ASAP:         %f0 = cim.op.gemm %x, %a, %w0
// ASAP-NEXT:    %f1 = cim.op.gemm %{{.*}}, %a, %w0
// ASAP-COUNT-2: cim.barrier
// ASAP-NEXT:    %f2 = cim.op.gemm %x, %a, %w1
// ASAP-NEXT:    %f3 = cim.op.gemm %{{.*}}, %a, %w1

// -----

// Real latencies: the 64-row gemm keeps crossbar %x busy while the two 1-row gemms run one after the
// other on the other crossbar (the second reuses the first one's weights); each barrier sits at its
// op's finish time, so the long gemm's barrier comes last. ASAP waits for the long gemm after step 0.

func.func @timing(%big: tensor<64x4xi32>, %a: tensor<1x4xi32>, %w0: tensor<4x4xi32>, %w1: tensor<4x4xi32>) -> (tensor<64x4xi32>, tensor<1x4xi32>, tensor<1x4xi32>) {
  %dev = cim.acquire_device {availableCrossbarCount = 2 : i32} -> !cim.deviceId
  %x = cim.acquire_crossbar %dev : !cim.deviceId -> !cim.crossbarId
  %s1 = cim.op.gemm %x, %a, %w1 : !cim.crossbarId, tensor<1x4xi32>, tensor<4x4xi32> -> !cim.future<1x4xi32>
  %t1 = cim.barrier %s1 : !cim.future<1x4xi32> -> tensor<1x4xi32>
  %s2 = cim.op.gemm %x, %a, %w1 : !cim.crossbarId, tensor<1x4xi32>, tensor<4x4xi32> -> !cim.future<1x4xi32>
  %t2 = cim.barrier %s2 : !cim.future<1x4xi32> -> tensor<1x4xi32>
  %l = cim.op.gemm %x, %big, %w0 : !cim.crossbarId, tensor<64x4xi32>, tensor<4x4xi32> -> !cim.future<64x4xi32>
  %tl = cim.barrier %l : !cim.future<64x4xi32> -> tensor<64x4xi32>
  cim.release_crossbar %x : !cim.crossbarId
  cim.release_device %dev : !cim.deviceId
  return %tl, %t1, %t2 : tensor<64x4xi32>, tensor<1x4xi32>, tensor<1x4xi32>
}

// CHECK-LABEL: func.func @timing
// CHECK:         %[[NEW1:.*]] = cim.acquire_crossbar %dev
// CHECK-NEXT:    %x = cim.acquire_crossbar %dev
// CHECK-NEXT:    %l = cim.op.gemm %x, %big, %w0
// CHECK-NEXT:    %s1 = cim.op.gemm %[[NEW1]], %a, %w1
// CHECK-NEXT:    %[[T1:.*]] = cim.barrier %s1
// CHECK-NEXT:    %s2 = cim.op.gemm %[[NEW1]], %a, %w1
// CHECK-NEXT:    %[[T2:.*]] = cim.barrier %s2
// CHECK-NEXT:    %[[TL:.*]] = cim.barrier %l
// CHECK-NEXT:    cim.release_crossbar %x
// CHECK-NEXT:    cim.release_crossbar %[[NEW1]]
// CHECK-NEXT:    cim.release_device %dev
// CHECK-NEXT:    func.return %[[TL]], %[[T1]], %[[T2]]

// ASAP-LABEL: func.func @timing
// ASAP:         %s1 = cim.op.gemm %x, %a, %w1
// ASAP-NEXT:    %s2 = cim.op.gemm %{{.*}}, %a, %w1
// ASAP-COUNT-2: cim.barrier
// ASAP-NEXT:    %l = cim.op.gemm %x, %big, %w0

// -----

// Host ops between the tiles of a layer: slices are hoisted before the gemms that read them and the
// partial sum sinks below both barriers; the output keeps every definition before its uses.

func.func @host_ops(%a: tensor<2x8xi32>, %w: tensor<8x4xi32>) -> tensor<2x4xi32> {
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
  cim.release_crossbar %x : !cim.crossbarId
  cim.release_device %dev : !cim.deviceId
  return %sum : tensor<2x4xi32>
}

// CHECK-LABEL: func.func @host_ops
// CHECK:         %x = cim.acquire_crossbar %dev
// CHECK-NEXT:    %a0 = tensor.extract_slice %a[0, 0]
// CHECK-NEXT:    %w0 = tensor.extract_slice %w[0, 0]
// CHECK-NEXT:    %f0 = cim.op.gemm %x, %a0, %w0
// CHECK-NEXT:    %a1 = tensor.extract_slice %a[0, 4]
// CHECK-NEXT:    %w1 = tensor.extract_slice %w[4, 0]
// CHECK-NEXT:    %f1 = cim.op.gemm %{{.*}}, %a1, %w1
// CHECK-NEXT:    %[[T0:.*]] = cim.barrier %f0
// CHECK-NEXT:    %[[T1:.*]] = cim.barrier %f1
// CHECK-NEXT:    %sum = arith.addi %[[T0]], %[[T1]]

// ASAP-LABEL: func.func @host_ops
