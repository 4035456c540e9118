// RUN: cim-opt %s -p pim-codegen | filecheck %s
// The artifact directory written from the result is checked in tests/unit/backend/test_emit.py.

// Core 0 applies a 2x2 kernel with padding above and left: kernel position (0, 0) meets a pixel
// only for output pixel (1, 1), so the other three pixels get a single mvmul straight into the
// output (weight skipping); pixel (1, 1) also gets an mvmul into the accumulator and a vvadd.
// Core 1 receives the result, shifts it (lldi of the splat, vvsra) and max-pools it (lmv, vvmax).
func.func @main(%x: tensor<2x2x2xi32>) -> tensor<2x2x2xi32> {
  %w = arith.constant {origin = "example"} dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %g = bufferization.to_buffer %x : tensor<2x2x2xi32> to memref<2x2x2xi32>
  %out = memref.alloc() : memref<2x2x2xi32>
  %ch = spat.channel_new
  pim.core(%w) coreId 0 : (tensor<2x2xi32>) {
    %in = memref.alloc() : memref<2x2x2xi32>
    %l = pim.load %g[0], %in size 8 : memref<2x2x2xi32>, memref<2x2x2xi32>
    %y = memref.alloc() : memref<2x2x2xi32>
    %acc = memref.alloc() : memref<2xi32>
    pim.apply_filters ins(%l : memref<2x2x2xi32>) outs(%y : memref<2x2x2xi32>) accum(%acc : memref<2xi32>) weights [0, -1, -1, 0] kernel [2, 2] pads [1, 1, 0, 0]
    spat.channel_send %y to %ch : memref<2x2x2xi32>
    pim.halt
  }
  pim.core() coreId 1 : () {
    %r = spat.channel_receive %ch : memref<2x2x2xi32>
    %two = arith.constant dense<1> : tensor<2x2x2xi32>
    %rt = bufferization.to_tensor %r restrict : memref<2x2x2xi32> to tensor<2x2x2xi32>
    %s = arith.shrsi %rt, %two : tensor<2x2x2xi32>
    %sb = bufferization.to_buffer %s : tensor<2x2x2xi32> to memref<2x2x2xi32>
    %p = spat.maxpool %sb kernel [2, 2] pads [0, 0, 1, 1] : memref<2x2x2xi32> -> memref<2x2x2xi32>
    pim.store %p, %out[0] size 8 : memref<2x2x2xi32>, memref<2x2x2xi32>
    pim.halt
  }
  %t = bufferization.to_tensor %out restrict writable : memref<2x2x2xi32> to tensor<2x2x2xi32>
  func.return %t : tensor<2x2x2xi32>
}

// CHECK:      %g = bufferization.to_buffer %x : {pim.address = 0 : i64} tensor<2x2x2xi32> to memref<2x2x2xi32>
// CHECK-NEXT: %out = memref.alloc() {pim.address = 32 : i64} : memref<2x2x2xi32>
// CHECK:      pim.core(%w) coreId 0 {pim.local_bytes = 72 : i64} : (tensor<2x2xi32>) {
// CHECK-NEXT:   pim.setbw ibiw = 32, obiw = 32
// CHECK-NEXT:   pim.sldi rd = 28, imm = 0
// CHECK-NEXT:   pim.sldi rd = 29, imm = 0
// CHECK-NEXT:   pim.sldi rd = 0, imm = 0
// CHECK-NEXT:   pim.ld rd = 0, rs1 = 28, size = 32, offset_select = 0, offset_value = 0
// Pixel (0, 0) <- input pixel (0, 0) at position (1, 1); the output is at local byte 32.
// CHECK-NEXT:   pim.sldi rd = 1, imm = 32
// CHECK-NEXT:   pim.mvmul rd = 1, rs1 = 0, mbiw = 8, relu = 0, group = 0
// CHECK-NEXT:   pim.sldi rd = 2, imm = 40
// CHECK-NEXT:   pim.sldi rd = 3, imm = 8
// CHECK-NEXT:   pim.mvmul rd = 2, rs1 = 3, mbiw = 8, relu = 0, group = 0
// CHECK-NEXT:   pim.sldi rd = 4, imm = 48
// CHECK-NEXT:   pim.sldi rd = 5, imm = 16
// CHECK-NEXT:   pim.mvmul rd = 4, rs1 = 5, mbiw = 8, relu = 0, group = 0
// Pixel (1, 1): position (0, 0) reads input pixel (0, 0), position (1, 1) input pixel (1, 1) into
// the accumulator (local byte 64), then the sum.
// CHECK-NEXT:   pim.sldi rd = 6, imm = 56
// CHECK-NEXT:   pim.mvmul rd = 6, rs1 = 0, mbiw = 8, relu = 0, group = 0
// CHECK-NEXT:   pim.sldi rd = 7, imm = 64
// CHECK-NEXT:   pim.sldi rd = 8, imm = 24
// CHECK-NEXT:   pim.mvmul rd = 7, rs1 = 8, mbiw = 8, relu = 0, group = 0
// CHECK-NEXT:   pim.vvadd rd = 6, rs1 = 6, rs2 = 7, len = 2, offset_select = 0, offset_value = 0
// CHECK-NEXT:   pim.send rd = 1, rs1 = 1, core = 1, size = 32, offset_select = 0, offset_value = 0
// CHECK-NEXT:   pim.halt
// CHECK-NEXT: }
// CHECK-NEXT: pim.core() coreId 1 {pim.local_bytes = {{[0-9]+}} : i64} : () {
// CHECK-NEXT:   pim.setbw ibiw = 32, obiw = 32
// CHECK-NEXT:   pim.sldi rd = 0, imm = 0
// CHECK-NEXT:   pim.recv rd = 0, core = 0, size = 32, offset_select = 0, offset_value = 0
// CHECK-NEXT:   pim.sldi rd = 1, imm = 32
// CHECK-NEXT:   pim.lldi rd = 1, imm = 1, len = 8, offset_select = 0, offset_value = 0
// CHECK-NEXT:   pim.sldi rd = 2, imm = 64
// CHECK-NEXT:   pim.vvsra rd = 2, rs1 = 0, rs2 = 1, len = 8, offset_select = 0, offset_value = 0
// Output pixel (0, 0) of the pool: a copy of its first window pixel, then the maximum with the others.
// CHECK-NEXT:   pim.sldi rd = 3, imm = 96
// CHECK-NEXT:   pim.lmv rd = 3, rs1 = 2, len = 2, size = 8, offset_select = 0, offset_value = 0
// CHECK-NEXT:   pim.sldi rd = 4, imm = 72
// CHECK-NEXT:   pim.vvmax rd = 3, rs1 = 3, rs2 = 4, len = 2, offset_select = 0, offset_value = 0
// CHECK-COUNT-5: pim.
// CHECK:        pim.sldi rd = 28, imm = 0
// CHECK-NEXT:   pim.sldi rd = 29, imm = 32
// CHECK-NEXT:   pim.st rd = 28, rs1 = 3, size = 32, offset_select = 0, offset_value = 0
// CHECK-NEXT:   pim.halt
// CHECK-NEXT: }
