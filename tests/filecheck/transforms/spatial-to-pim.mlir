// RUN: cim-opt %s -p 'spatial-to-pim{cores=3 crossbars-per-core=2}' | filecheck %s
// RUN: cim-opt %s -p 'spatial-to-pim{cores=2 crossbars-per-core=2}' | filecheck %s --check-prefix=MERGED
// RUN: cim-opt %s -p 'spatial-to-pim{cores=1 crossbars-per-core=3}' | filecheck %s --check-prefix=ONE
// RUN: not cim-opt %s -p 'spatial-to-pim{cores=1 crossbars-per-core=2}' 2>&1 | filecheck %s --check-prefix=TOO-SMALL
// RUN: not cim-opt %s -p 'spatial-to-pim{cores=4 crossbars-per-core=1}' 2>&1 | filecheck %s --check-prefix=TOO-BIG

// Three computes: a gemm on two crossbars, a gemm + bias reading its first result, a ReLU. The host
// joins the first compute's second result and the ReLU's result.
func.func @main(%x: tensor<2x2xi32>) -> tensor<2x4xi32> {
  %w0 = arith.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %w1 = arith.constant dense<[[5, 6], [7, 8]]> : tensor<2x2xi32>
  %w2 = arith.constant dense<[[1, 0], [0, 1]]> : tensor<2x2xi32>
  %b = arith.constant dense<[[1, -1], [2, -2]]> : tensor<2x2xi32>
  %a:2 = spat.compute[%w0, %w1] (%x) : [tensor<2x2xi32>, tensor<2x2xi32>] (tensor<2x2xi32>) -> tensor<2x2xi32>, tensor<2x2xi32> {
  ^bb0(%a0: tensor<2x2xi32>, %a1: tensor<2x2xi32>, %in: tensor<2x2xi32>):
    %y0 = spat.apply_filters %in weights [0] : tensor<2x2xi32> -> tensor<2x2xi32>
    %y1 = spat.apply_filters %in weights [1] : tensor<2x2xi32> -> tensor<2x2xi32>
    spat.yield %y0, %y1 : tensor<2x2xi32>, tensor<2x2xi32>
  }
  %c = spat.compute[%w2] (%a#0, %b) : [tensor<2x2xi32>] (tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<2x2xi32> {
  ^bb0(%a2: tensor<2x2xi32>, %in: tensor<2x2xi32>, %bias: tensor<2x2xi32>):
    %y = spat.apply_filters %in weights [0] : tensor<2x2xi32> -> tensor<2x2xi32>
    %s = spat.vadd %y, %bias : tensor<2x2xi32>, tensor<2x2xi32>
    spat.yield %s : tensor<2x2xi32>
  }
  %d = spat.compute[] (%c) : [] (tensor<2x2xi32>) -> tensor<2x2xi32> {
  ^bb0(%in: tensor<2x2xi32>):
    %r = spat.vrelu %in : tensor<2x2xi32>
    spat.yield %r : tensor<2x2xi32>
  }
  %out = spat.concat axis 1 %a#1, %d : tensor<2x2xi32>, tensor<2x2xi32> -> tensor<2x4xi32>
  func.return %out : tensor<2x4xi32>
}

// One compute per core. Host values become global buffers, results the host reads are stored
// into global buffers, and values between cores go through channels (send on the producer, receive
// on the consumer, both where the consumer starts, after its loads).
// CHECK:      %[[X:.*]] = bufferization.to_buffer %x : tensor<2x2xi32> to memref<2x2xi32>
// CHECK-NEXT: %[[B:.*]] = bufferization.to_buffer %b : tensor<2x2xi32> to memref<2x2xi32>
// CHECK-NEXT: %[[OUT0:.*]] = memref.alloc() : memref<2x2xi32>
// CHECK-NEXT: %[[OUT1:.*]] = memref.alloc() : memref<2x2xi32>
// CHECK-NEXT: %[[CH0:.*]] = spat.channel_new
// CHECK-NEXT: %[[CH1:.*]] = spat.channel_new
// CHECK-NEXT: pim.core(%w0, %w1) coreId 0 : (tensor<2x2xi32>, tensor<2x2xi32>) {
// CHECK-NEXT:   %[[E:.*]] = tensor.empty() : tensor<2x2xi32>
// CHECK-NEXT:   %[[IN:.*]] = pim.load %[[X]][0], %[[E]] size 4 : memref<2x2xi32>, tensor<2x2xi32>
// CHECK-NEXT:   %[[Y0:.*]] = spat.apply_filters %[[IN]] weights [0]
// CHECK-NEXT:   %[[Y1:.*]] = spat.apply_filters %[[IN]] weights [1]
// CHECK-NEXT:   pim.store %[[Y1]], %[[OUT0]][0] size 4 : tensor<2x2xi32>, memref<2x2xi32>
// CHECK-NEXT:   spat.channel_send %[[Y0]] to %[[CH0]] : tensor<2x2xi32>
// CHECK-NEXT:   pim.halt
// CHECK-NEXT: }
// CHECK-NEXT: pim.core(%w2) coreId 1 : (tensor<2x2xi32>) {
// CHECK-NEXT:   %[[E1:.*]] = tensor.empty() : tensor<2x2xi32>
// CHECK-NEXT:   %[[BIAS:.*]] = pim.load %[[B]][0], %[[E1]] size 4
// CHECK-NEXT:   %[[R0:.*]] = spat.channel_receive %[[CH0]] : tensor<2x2xi32>
// CHECK-NEXT:   %[[Y:.*]] = spat.apply_filters %[[R0]] weights [0]
// CHECK-NEXT:   %[[S:.*]] = spat.vadd %[[Y]], %[[BIAS]]
// CHECK-NEXT:   spat.channel_send %[[S]] to %[[CH1]] : tensor<2x2xi32>
// CHECK-NEXT:   pim.halt
// CHECK-NEXT: }
// CHECK-NEXT: pim.core() coreId 2 : () {
// CHECK-NEXT:   %[[R1:.*]] = spat.channel_receive %[[CH1]] : tensor<2x2xi32>
// CHECK-NEXT:   %[[RELU:.*]] = spat.vrelu %[[R1]]
// CHECK-NEXT:   pim.store %[[RELU]], %[[OUT1]][0] size 4
// CHECK-NEXT:   pim.halt
// CHECK-NEXT: }
// CHECK-NEXT: %[[T0:.*]] = bufferization.to_tensor %[[OUT0]] restrict writable : memref<2x2xi32> to tensor<2x2xi32>
// CHECK-NEXT: %[[T1:.*]] = bufferization.to_tensor %[[OUT1]] restrict writable : memref<2x2xi32> to tensor<2x2xi32>
// CHECK-NEXT: %[[ALL:.*]] = spat.concat axis 1 %[[T0]], %[[T1]]
// CHECK-NEXT: func.return %[[ALL]]
// CHECK-NOT:  spat.compute

// More computes than cores: consecutive computes share a core (crossbars 2 | 1 + 0), so the ReLU
// reads the sum locally and only one channel is left.
// MERGED:      spat.channel_new
// MERGED-NOT:  spat.channel_new
// MERGED:      pim.core(%w0, %w1) coreId 0
// MERGED:      pim.core(%w2) coreId 1 : (tensor<2x2xi32>) {
// MERGED:        %[[R:.*]] = spat.channel_receive
// MERGED:        %[[S:.*]] = spat.vadd
// MERGED-NEXT:   %[[RELU:.*]] = spat.vrelu %[[S]]
// MERGED-NEXT:   pim.store %[[RELU]]
// MERGED-NEXT:   pim.halt
// MERGED-NOT:  pim.core

// All computes on one core: its weights are all three matrices and the second gemm's weight
// index is shifted past the first compute's two.
// ONE-NOT:     spat.channel_new
// ONE:         pim.core(%w0, %w1, %w2) coreId 0 : (tensor<2x2xi32>, tensor<2x2xi32>, tensor<2x2xi32>) {
// ONE:           %[[Y0:.*]] = spat.apply_filters %{{.*}} weights [0]
// ONE-NEXT:      spat.apply_filters %{{.*}} weights [1]
// ONE:           spat.apply_filters %[[Y0]] weights [2]
// ONE-NOT:     pim.core

// TOO-SMALL: spatial-to-pim: the program needs 3 crossbars, but 1 core x 2 crossbars per core hold only 2: use at least 2 cores
// TOO-BIG:   spatial-to-pim: a spat.compute holds 2 crossbars, more than the 1 of a core: lower it with cinm-to-spatial{crossbars-per-compute=1}
