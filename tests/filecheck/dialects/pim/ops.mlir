// RUN: CIM_ROUNDTRIP
// RUN: CIM_GENERIC_ROUNDTRIP
// RUN: cim-opt %s --split-input-file --print-op-generic | filecheck %s --check-prefix=GENERIC

// Every pim op, in custom syntax; the generic form must print back to the same text.
// Core level before bufferization: tensors, spat ops inside cores, channels between cores.
%w0 = "test.op"() : () -> tensor<3x2xi8>
%w1 = "test.op"() : () -> tensor<3x2xi8>
%gin = "test.op"() : () -> memref<4x4x3xi8>
%gout = "test.op"() : () -> memref<2x4x4x2xi32>
%ch = spat.channel_new
pim.core(%w0, %w1) coreId 0 : (tensor<3x2xi8>, tensor<3x2xi8>) {
  %e = "test.op"() : () -> tensor<4x4x3xi8>
  %x = pim.load %gin[0], %e size 48 : memref<4x4x3xi8>, tensor<4x4x3xi8>
  %y = spat.apply_filters %x weights [0, 1] kernel [1, 2] pads [0, 0, 0, 1] : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
  spat.channel_send %y to %ch : tensor<4x4x2xi32>
  pim.halt
}
pim.core() coreId 1 : () {
  %r = spat.channel_receive %ch : tensor<4x4x2xi32>
  pim.store %r, %gout[32] size 32 : tensor<4x4x2xi32>, memref<2x4x4x2xi32>
  pim.halt
}

// CHECK:      builtin.module {
// CHECK-NEXT:   %w0 = "test.op"() : () -> tensor<3x2xi8>
// CHECK-NEXT:   %w1 = "test.op"() : () -> tensor<3x2xi8>
// CHECK-NEXT:   %gin = "test.op"() : () -> memref<4x4x3xi8>
// CHECK-NEXT:   %gout = "test.op"() : () -> memref<2x4x4x2xi32>
// CHECK-NEXT:   %ch = spat.channel_new
// CHECK-NEXT:   pim.core(%w0, %w1) coreId 0 : (tensor<3x2xi8>, tensor<3x2xi8>) {
// CHECK-NEXT:     %e = "test.op"() : () -> tensor<4x4x3xi8>
// CHECK-NEXT:     %x = pim.load %gin[0], %e size 48 : memref<4x4x3xi8>, tensor<4x4x3xi8>
// CHECK-NEXT:     %y = spat.apply_filters %x weights [0, 1] kernel [1, 2] pads [0, 0, 0, 1] : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
// CHECK-NEXT:     spat.channel_send %y to %ch : tensor<4x4x2xi32>
// CHECK-NEXT:     pim.halt
// CHECK-NEXT:   }
// CHECK-NEXT:   pim.core() coreId 1 : () {
// CHECK-NEXT:     %r = spat.channel_receive %ch : tensor<4x4x2xi32>
// CHECK-NEXT:     pim.store %r, %gout[32] size 32 : tensor<4x4x2xi32>, memref<2x4x4x2xi32>
// CHECK-NEXT:     pim.halt
// CHECK-NEXT:   }
// CHECK-NEXT: }

// GENERIC:      "pim.core"(%w0, %w1) <{coreId = 0 : i32}> ({
// GENERIC:        %x = "pim.load"(%gin, %e) <{globalSrcOffset = 0 : i64, size = 48 : i64}> : (memref<4x4x3xi8>, tensor<4x4x3xi8>) -> tensor<4x4x3xi8>
// GENERIC:        "pim.halt"() : () -> ()
// GENERIC:        "pim.store"(%r, %gout) <{globalDstOffset = 32 : i64, size = 32 : i64}> : (tensor<4x4x2xi32>, memref<2x4x4x2xi32>) -> ()

// -----

// After pim-bufferize: memrefs, and apply_filters with its output and accumulation buffers.
%w = "test.op"() : () -> tensor<3x2xi8>
%gin = "test.op"() : () -> memref<4x4x3xi8>
%gout = "test.op"() : () -> memref<4x4x2xi32>
pim.core(%w) coreId 7 : (tensor<3x2xi8>) {
  %in = "test.op"() : () -> memref<4x4x3xi8>
  %x = pim.load %gin[0], %in size 48 {note = "input"} : memref<4x4x3xi8>, memref<4x4x3xi8>
  %out = "test.op"() : () -> memref<4x4x2xi32>
  %acc = "test.op"() : () -> memref<2xi32>
  pim.apply_filters ins(%x : memref<4x4x3xi8>) outs(%out : memref<4x4x2xi32>) accum(%acc : memref<2xi32>) weights [0, -1, -1, 0] kernel [2, 2] pads [0, 0, 1, 1]
  pim.apply_filters ins(%x : memref<4x4x3xi8>) outs(%out : memref<4x4x2xi32>) accum(%acc : memref<2xi32>) weights [0]
  pim.apply_filters ins(%x : memref<4x4x3xi8>) outs(%out : memref<4x4x2xi32>) accum(%acc : memref<2xi32>) weights [0] kernel [2, 2] pads [0, 0, 1, 1] im2col [0, 3] offset 3
  pim.store %out, %gout[0] size 32 : memref<4x4x2xi32>, memref<4x4x2xi32>
  pim.halt
}

// CHECK:      builtin.module {
// CHECK-NEXT:   %w = "test.op"() : () -> tensor<3x2xi8>
// CHECK-NEXT:   %gin = "test.op"() : () -> memref<4x4x3xi8>
// CHECK-NEXT:   %gout = "test.op"() : () -> memref<4x4x2xi32>
// CHECK-NEXT:   pim.core(%w) coreId 7 : (tensor<3x2xi8>) {
// CHECK-NEXT:     %in = "test.op"() : () -> memref<4x4x3xi8>
// CHECK-NEXT:     %x = pim.load %gin[0], %in size 48 {note = "input"} : memref<4x4x3xi8>, memref<4x4x3xi8>
// CHECK-NEXT:     %out = "test.op"() : () -> memref<4x4x2xi32>
// CHECK-NEXT:     %acc = "test.op"() : () -> memref<2xi32>
// CHECK-NEXT:     pim.apply_filters ins(%x : memref<4x4x3xi8>) outs(%out : memref<4x4x2xi32>) accum(%acc : memref<2xi32>) weights [0, -1, -1, 0] kernel [2, 2] pads [0, 0, 1, 1]
// CHECK-NEXT:     pim.apply_filters ins(%x : memref<4x4x3xi8>) outs(%out : memref<4x4x2xi32>) accum(%acc : memref<2xi32>) weights [0]
// CHECK-NEXT:     pim.apply_filters ins(%x : memref<4x4x3xi8>) outs(%out : memref<4x4x2xi32>) accum(%acc : memref<2xi32>) weights [0] kernel [2, 2] pads [0, 0, 1, 1] im2col [0, 3] offset 3
// CHECK-NEXT:     pim.store %out, %gout[0] size 32 : memref<4x4x2xi32>, memref<4x4x2xi32>
// CHECK-NEXT:     pim.halt
// CHECK-NEXT:   }
// CHECK-NEXT: }

// GENERIC:      "pim.apply_filters"(%x, %out, %acc) <{weightIndices = array<i64: 0, -1, -1, 0>, kernelShape = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}> : (memref<4x4x3xi8>, memref<4x4x2xi32>, memref<2xi32>) -> ()

// -----

// Instruction level: one op per pimsim-nn instruction, every field printed in FIELDS order.
pim.core() coreId 0 : () {
  pim.nop
  pim.sldi rd = 0, imm = 4096
  pim.sld rd = 3, rs1 = 0, offset_value = 8
  pim.sadd rd = 1, rs1 = 2, rs2 = 3
  pim.ssub rd = 1, rs1 = 2, rs2 = 3
  pim.smul rd = 1, rs1 = 2, rs2 = 3
  pim.saddi rd = 1, rs1 = 2, imm = -16
  pim.smuli rd = 1, rs1 = 2, imm = 4
  pim.setbw ibiw = 8, obiw = 32
  pim.mvmul rd = 2, rs1 = 0, mbiw = 8, relu = 1, group = 3
  pim.vvadd rd = 1, rs1 = 2, rs2 = 3, len = 16, offset_select = 0, offset_value = 0
  pim.vvsub rd = 1, rs1 = 2, rs2 = 3, len = 16, offset_select = 0, offset_value = 0
  pim.vvmul rd = 1, rs1 = 2, rs2 = 3, len = 16, offset_select = 0, offset_value = 0
  pim.vvdmul rd = 1, rs1 = 2, rs2 = 3, len = 16, offset_select = 0, offset_value = 0
  pim.vvmax rd = 1, rs1 = 2, rs2 = 3, len = 16, offset_select = 0, offset_value = 0
  pim.vvsll rd = 1, rs1 = 2, rs2 = 3, len = 16, offset_select = 0, offset_value = 0
  pim.vvsra rd = 1, rs1 = 2, rs2 = 3, len = 16, offset_select = 0, offset_value = 0
  pim.vavg rd = 1, rs1 = 2, rs2 = 3, len = 16, offset_select = 0, offset_value = 0
  pim.vrelu rd = 1, rs1 = 2, len = 16, offset_select = 7, offset_value = 4
  pim.vtanh rd = 1, rs1 = 2, len = 16, offset_select = 0, offset_value = 0
  pim.vsigm rd = 1, rs1 = 2, len = 16, offset_select = 0, offset_value = 0
  pim.vmv rd = 1, rs1 = 2, rs2 = 3, len = 16
  pim.vrsu rd = 1, rs1 = 2, rs2 = 3, len = 16, offset_select = 0, offset_value = 0
  pim.vrsl rd = 1, rs1 = 2, rs2 = 3, len = 16, offset_select = 0, offset_value = 0
  pim.ld rd = 0, rs1 = 2, size = 128, offset_select = 0, offset_value = 0
  pim.st rd = 2, rs1 = 0, size = 128, offset_select = 0, offset_value = 0
  pim.lldi rd = 0, imm = 0, len = 64, offset_select = 0, offset_value = 0
  pim.lmv rd = 1, rs1 = 0, len = 64, size = 256, offset_select = 0, offset_value = 0
  pim.send rd = 2, rs1 = 2, core = 1, size = 128, offset_select = 0, offset_value = 0
  pim.recv rd = 2, core = 1, size = 128, offset_select = 0, offset_value = 0
  pim.wait event_register = 0, wait_value = 2
  pim.sync event_register = 0, core = 1
  pim.halt
}

// CHECK:      builtin.module {
// CHECK-NEXT:   pim.core() coreId 0 : () {
// CHECK-NEXT:     pim.nop
// CHECK-NEXT:     pim.sldi rd = 0, imm = 4096
// CHECK-NEXT:     pim.sld rd = 3, rs1 = 0, offset_value = 8
// CHECK-NEXT:     pim.sadd rd = 1, rs1 = 2, rs2 = 3
// CHECK-NEXT:     pim.ssub rd = 1, rs1 = 2, rs2 = 3
// CHECK-NEXT:     pim.smul rd = 1, rs1 = 2, rs2 = 3
// CHECK-NEXT:     pim.saddi rd = 1, rs1 = 2, imm = -16
// CHECK-NEXT:     pim.smuli rd = 1, rs1 = 2, imm = 4
// CHECK-NEXT:     pim.setbw ibiw = 8, obiw = 32
// CHECK-NEXT:     pim.mvmul rd = 2, rs1 = 0, mbiw = 8, relu = 1, group = 3
// CHECK-NEXT:     pim.vvadd rd = 1, rs1 = 2, rs2 = 3, len = 16, offset_select = 0, offset_value = 0
// CHECK-NEXT:     pim.vvsub rd = 1, rs1 = 2, rs2 = 3, len = 16, offset_select = 0, offset_value = 0
// CHECK-NEXT:     pim.vvmul rd = 1, rs1 = 2, rs2 = 3, len = 16, offset_select = 0, offset_value = 0
// CHECK-NEXT:     pim.vvdmul rd = 1, rs1 = 2, rs2 = 3, len = 16, offset_select = 0, offset_value = 0
// CHECK-NEXT:     pim.vvmax rd = 1, rs1 = 2, rs2 = 3, len = 16, offset_select = 0, offset_value = 0
// CHECK-NEXT:     pim.vvsll rd = 1, rs1 = 2, rs2 = 3, len = 16, offset_select = 0, offset_value = 0
// CHECK-NEXT:     pim.vvsra rd = 1, rs1 = 2, rs2 = 3, len = 16, offset_select = 0, offset_value = 0
// CHECK-NEXT:     pim.vavg rd = 1, rs1 = 2, rs2 = 3, len = 16, offset_select = 0, offset_value = 0
// CHECK-NEXT:     pim.vrelu rd = 1, rs1 = 2, len = 16, offset_select = 7, offset_value = 4
// CHECK-NEXT:     pim.vtanh rd = 1, rs1 = 2, len = 16, offset_select = 0, offset_value = 0
// CHECK-NEXT:     pim.vsigm rd = 1, rs1 = 2, len = 16, offset_select = 0, offset_value = 0
// CHECK-NEXT:     pim.vmv rd = 1, rs1 = 2, rs2 = 3, len = 16
// CHECK-NEXT:     pim.vrsu rd = 1, rs1 = 2, rs2 = 3, len = 16, offset_select = 0, offset_value = 0
// CHECK-NEXT:     pim.vrsl rd = 1, rs1 = 2, rs2 = 3, len = 16, offset_select = 0, offset_value = 0
// CHECK-NEXT:     pim.ld rd = 0, rs1 = 2, size = 128, offset_select = 0, offset_value = 0
// CHECK-NEXT:     pim.st rd = 2, rs1 = 0, size = 128, offset_select = 0, offset_value = 0
// CHECK-NEXT:     pim.lldi rd = 0, imm = 0, len = 64, offset_select = 0, offset_value = 0
// CHECK-NEXT:     pim.lmv rd = 1, rs1 = 0, len = 64, size = 256, offset_select = 0, offset_value = 0
// CHECK-NEXT:     pim.send rd = 2, rs1 = 2, core = 1, size = 128, offset_select = 0, offset_value = 0
// CHECK-NEXT:     pim.recv rd = 2, core = 1, size = 128, offset_select = 0, offset_value = 0
// CHECK-NEXT:     pim.wait event_register = 0, wait_value = 2
// CHECK-NEXT:     pim.sync event_register = 0, core = 1
// CHECK-NEXT:     pim.halt
// CHECK-NEXT:   }
// CHECK-NEXT: }

// GENERIC:      "pim.sld"() <{rd = 3 : i32, rs1 = 0 : i32, offset_value = 8 : i32}> : () -> ()
// GENERIC:      "pim.mvmul"() <{rd = 2 : i32, rs1 = 0 : i32, mbiw = 8 : i32, relu = 1 : i32, group = 3 : i32}> : () -> ()
// GENERIC:      "pim.ld"() <{rd = 0 : i32, rs1 = 2 : i32, size = 128 : i32, offset_select = 0 : i32, offset_value = 0 : i32}> : () -> ()

// -----

// Fields may come in any order and default to 0 when left out (as in pimsim-nn); attributes
// after the fields are kept.
pim.core() coreId 0 : () {
  pim.mvmul group = 1, mbiw = 8, rs1 = 4, rd = 5
  pim.sldi rd = 7 {comment = "address of the input"}
  pim.vvadd
  "pim.ld"() <{rd = 0 : i32, size = 16 : i32}> : () -> ()
  pim.halt {note = "end"}
}

// CHECK:      builtin.module {
// CHECK-NEXT:   pim.core() coreId 0 : () {
// CHECK-NEXT:     pim.mvmul rd = 5, rs1 = 4, mbiw = 8, relu = 0, group = 1
// CHECK-NEXT:     pim.sldi rd = 7, imm = 0 {comment = "address of the input"}
// CHECK-NEXT:     pim.vvadd rd = 0, rs1 = 0, rs2 = 0, len = 0, offset_select = 0, offset_value = 0
// CHECK-NEXT:     pim.ld rd = 0, rs1 = 0, size = 16, offset_select = 0, offset_value = 0
// CHECK-NEXT:     pim.halt {note = "end"}
// CHECK-NEXT:   }
// CHECK-NEXT: }

// GENERIC:      "pim.mvmul"() <{rd = 5 : i32, rs1 = 4 : i32, mbiw = 8 : i32, relu = 0 : i32, group = 1 : i32}> : () -> ()
// GENERIC:      "pim.ld"() <{rd = 0 : i32, size = 16 : i32, rs1 = 0 : i32, offset_select = 0 : i32, offset_value = 0 : i32}> : () -> ()
