// RUN: cim-opt %s -p pim-bufferize | filecheck %s
// RUN: cim-opt %s -p pim-bufferize,pim-bufferize | filecheck %s

// Tensors computed in cores become local buffers; apply_filters gets its output and one-pixel
// accumulation buffers; splat constants and the arith ops on them stay tensors, bridged with
// to_tensor/to_buffer. Running the pass again changes nothing.
func.func @main(%x: tensor<3x3x2xi32>) -> tensor<2x2x2xi32> {
  %w = arith.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %g = bufferization.to_buffer %x : tensor<3x3x2xi32> to memref<3x3x2xi32>
  %out = memref.alloc() : memref<2x2x2xi32>
  %ch = spat.channel_new
  pim.core(%w) coreId 0 : (tensor<2x2xi32>) {
    %e = tensor.empty() : tensor<3x3x2xi32>
    %in = pim.load %g[0], %e size 18 : memref<3x3x2xi32>, tensor<3x3x2xi32>
    %y = spat.apply_filters %in weights [0, -1, -1, 0] kernel [2, 2] : tensor<3x3x2xi32> -> tensor<2x2x2xi32>
    spat.channel_send %y to %ch : tensor<2x2x2xi32>
    pim.halt
  }
  pim.core() coreId 1 : () {
    %r = spat.channel_receive %ch : tensor<2x2x2xi32>
    %two = arith.constant dense<2> : tensor<2x2x2xi32>
    %s = arith.shrsi %r, %two : tensor<2x2x2xi32>
    %lo = arith.constant dense<-1> : tensor<2x2x2xi32>
    %m = spat.vmax %s, %lo : tensor<2x2x2xi32>, tensor<2x2x2xi32>
    %p = spat.maxpool %m kernel [2, 2] pads [0, 0, 1, 1] : tensor<2x2x2xi32> -> tensor<2x2x2xi32>
    pim.store %p, %out[0] size 8 : tensor<2x2x2xi32>, memref<2x2x2xi32>
    pim.halt
  }
  %t = bufferization.to_tensor %out restrict writable : memref<2x2x2xi32> to tensor<2x2x2xi32>
  func.return %t : tensor<2x2x2xi32>
}

// CHECK:      pim.core(%w) coreId 0 : (tensor<2x2xi32>) {
// CHECK-NEXT:   %[[IN:.*]] = memref.alloc() : memref<3x3x2xi32>
// CHECK-NEXT:   %[[X:.*]] = pim.load %g[0], %[[IN]] size 18 : memref<3x3x2xi32>, memref<3x3x2xi32>
// CHECK-NEXT:   %[[Y:.*]] = memref.alloc() : memref<2x2x2xi32>
// CHECK-NEXT:   %[[ACC:.*]] = memref.alloc() : memref<2xi32>
// CHECK-NEXT:   pim.apply_filters ins(%[[X]] : memref<3x3x2xi32>) outs(%[[Y]] : memref<2x2x2xi32>) accum(%[[ACC]] : memref<2xi32>) weights [0, -1, -1, 0] kernel [2, 2]
// CHECK-NEXT:   spat.channel_send %[[Y]] to %ch : memref<2x2x2xi32>
// CHECK-NEXT:   pim.halt
// CHECK-NEXT: }
// CHECK-NEXT: pim.core() coreId 1 : () {
// CHECK-NEXT:   %[[R:.*]] = spat.channel_receive %ch : memref<2x2x2xi32>
// CHECK-NEXT:   %[[TWO:.*]] = arith.constant dense<2> : tensor<2x2x2xi32>
// CHECK-NEXT:   %[[RT:.*]] = bufferization.to_tensor %[[R]] restrict : memref<2x2x2xi32> to tensor<2x2x2xi32>
// CHECK-NEXT:   %[[S:.*]] = arith.shrsi %[[RT]], %[[TWO]] : tensor<2x2x2xi32>
// CHECK-NEXT:   %[[LO:.*]] = arith.constant dense<-1> : tensor<2x2x2xi32>
// CHECK-NEXT:   %[[SB:.*]] = bufferization.to_buffer %[[S]] : tensor<2x2x2xi32> to memref<2x2x2xi32>
// CHECK-NEXT:   %[[LOB:.*]] = bufferization.to_buffer %[[LO]] : tensor<2x2x2xi32> to memref<2x2x2xi32>
// CHECK-NEXT:   %[[M:.*]] = spat.vmax %[[SB]], %[[LOB]] : memref<2x2x2xi32>, memref<2x2x2xi32>
// CHECK-NEXT:   %[[P:.*]] = spat.maxpool %[[M]] kernel [2, 2] pads [0, 0, 1, 1] : memref<2x2x2xi32> -> memref<2x2x2xi32>
// CHECK-NEXT:   pim.store %[[P]], %out[0] size 8 : memref<2x2x2xi32>, memref<2x2x2xi32>
// CHECK-NEXT:   pim.halt
// CHECK-NEXT: }
// CHECK-NOT:  spat.apply_filters
