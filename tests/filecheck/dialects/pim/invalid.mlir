// RUN: cim-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One chunk per verifier rule of the pim dialect.

// pim.core
pim.core() coreId -1 : () {
  pim.halt
}
// CHECK: 'pim.core' coreId must be >= 0, got -1

// -----

%w = "test.op"() : () -> tensor<2x3x4xi8>
pim.core(%w) coreId 0 : (tensor<2x3x4xi8>) {
  pim.halt
}
// CHECK: 'pim.core' weight 0 must be a matrix (rank 2), got tensor<2x3x4xi8>

// -----

"pim.core"() <{coreId = 0 : i32}> ({
^bb0(%a: i32):
  "pim.halt"() : () -> ()
}) : () -> ()
// CHECK: 'pim.core' body must have no arguments

// -----

pim.core() coreId 0 : () {
  "test.termop"() : () -> ()
}
// CHECK: 'pim.core' body must end with 'pim.halt'

// -----

pim.core() coreId 3 : () {
  pim.halt
}
pim.core() coreId 3 : () {
  pim.halt
}
// CHECK: 'pim.core' coreId 3 is used by another 'pim.core'

// -----

pim.halt
// CHECK: 'pim.halt' expects parent op 'pim.core'

// -----

// pim.load / pim.store
%g = "test.op"() : () -> memref<64xi8>
pim.core() coreId 0 : () {
  %e = "test.op"() : () -> tensor<16xi8>
  %x = pim.load %g[-4], %e size 16 : memref<64xi8>, tensor<16xi8>
  pim.halt
}
// CHECK: 'pim.load' globalSrcOffset must be >= 0, got -4

// -----

%g = "test.op"() : () -> memref<64xi8>
pim.core() coreId 0 : () {
  %e = "test.op"() : () -> tensor<4x4xi8>
  %x = pim.load %g[0], %e size 12 : memref<64xi8>, tensor<4x4xi8>
  pim.halt
}
// CHECK: 'pim.load' size 12 must equal the 16 elements of the local buffer

// -----

%g = "test.op"() : () -> memref<64xi8>
pim.core() coreId 0 : () {
  %e = "test.op"() : () -> tensor<16xi8>
  %x = pim.load %g[56], %e size 16 : memref<64xi8>, tensor<16xi8>
  pim.halt
}
// CHECK: 'pim.load' elements [56, 72) are outside the global buffer of 64 elements

// -----

%g = "test.op"() : () -> memref<64xi32>
pim.core() coreId 0 : () {
  %v = "test.op"() : () -> tensor<16xi8>
  pim.store %v, %g[0] size 16 : tensor<16xi8>, memref<64xi32>
  pim.halt
}
// CHECK: 'pim.store' local and global element types differ (i8 vs i32)

// -----

%g = "test.op"() : () -> tensor<64xi8>
pim.core() coreId 0 : () {
  %v = "test.op"() : () -> tensor<16xi8>
  pim.store %v, %g[0] size 16 : tensor<16xi8>, tensor<64xi8>
  pim.halt
}
// CHECK: tensor<64xi8> should be of base attribute memref

// -----

%g = "test.op"() : () -> memref<64xi8>
pim.core() coreId 0 : () {
  %v = "test.op"() : () -> tensor<?xi8>
  pim.store %v, %g[0] size 16 : tensor<?xi8>, memref<64xi8>
  pim.halt
}
// CHECK: 'pim.store' local buffer must have a static shape, got tensor<?xi8>

// -----

// pim.apply_filters
%w = "test.op"() : () -> tensor<3x2xi8>
pim.core(%w) coreId 0 : (tensor<3x2xi8>) {
  %in = "test.op"() : () -> memref<4x4x3xi8>
  %out = "test.op"() : () -> memref<4x4x2xi32>
  %acc = "test.op"() : () -> memref<4xi32>
  pim.apply_filters ins(%in : memref<4x4x3xi8>) outs(%out : memref<4x4x2xi32>) accum(%acc : memref<4xi32>) weights [0]
  pim.halt
}
// CHECK: 'pim.apply_filters' accumulator must hold one crossbar read (2 elements), got 4

// -----

%w = "test.op"() : () -> tensor<3x2xi8>
pim.core(%w) coreId 0 : (tensor<3x2xi8>) {
  %in = "test.op"() : () -> memref<4x4x3xi8>
  %out = "test.op"() : () -> memref<4x4x2xi32>
  %acc = "test.op"() : () -> memref<1x2xi8>
  pim.apply_filters ins(%in : memref<4x4x3xi8>) outs(%out : memref<4x4x2xi32>) accum(%acc : memref<1x2xi8>) weights [0]
  pim.halt
}
// CHECK: 'pim.apply_filters' accumulator must have the output's element type

// -----

%w = "test.op"() : () -> tensor<3x2xi8>
pim.core(%w) coreId 0 : (tensor<3x2xi8>) {
  %in = "test.op"() : () -> memref<4x4x3xi8>
  %out = "test.op"() : () -> memref<4x4x2xi32>
  %acc = "test.op"() : () -> memref<2xi32>
  pim.apply_filters ins(%in : memref<4x4x3xi8>) outs(%out : memref<4x4x2xi32>) accum(%acc : memref<2xi32>) weights [-1, 1, -1, -1] kernel [2, 2] pads [0, 0, 1, 1]
  pim.halt
}
// CHECK: 'pim.apply_filters' weight index 1 is out of range: 'pim.core' holds 1 weights

// -----

// spat.apply_filters inside a core selects the core's weights.
%w = "test.op"() : () -> tensor<3x2xi8>
pim.core(%w) coreId 0 : (tensor<3x2xi8>) {
  %x = "test.op"() : () -> tensor<4x4x3xi8>
  %y = spat.apply_filters %x weights [0] : tensor<4x4x3xi8> -> tensor<4x4x4xi32>
  pim.halt
}
// CHECK: 'spat.apply_filters' weight 0 must be 3x4 (input channels x output channels), got 3x2

// -----

// Instructions
pim.core() coreId 0 : () {
  pim.vvadd rd = 32, rs1 = 0, rs2 = 1, len = 4, offset_select = 0, offset_value = 0
  pim.halt
}
// CHECK: 'pim.vvadd' rd must be a register index 0..31, got 32

// -----

pim.core() coreId 0 : () {
  pim.mvmul rd = 2, rs1 = 0, mbiw = 0, relu = 0, group = 0
  pim.halt
}
// CHECK: 'pim.mvmul' mbiw must be a weight bit width > 0 (pimsim-nn divides by it), got 0

// -----

pim.core() coreId 0 : () {
  pim.setbw ibiw = 8, obiw = -8
  pim.halt
}
// CHECK: 'pim.setbw' obiw must be an element width of 8, 16, 32 or 64 bits, got -8

// -----

pim.core() coreId 0 : () {
  pim.setbw ibiw = 12, obiw = 8
  pim.halt
}
// CHECK: 'pim.setbw' ibiw must be an element width of 8, 16, 32 or 64 bits, got 12

// -----

pim.core() coreId 0 : () {
  pim.st rd = 3, rs1 = 0, size = 4, offset_select = 0, offset_value = 0
  pim.halt
}
// CHECK: 'pim.st' rd must name an even register pair (the global address), got 3

// -----

pim.core() coreId 0 : () {
  pim.ld rd = 0, rs1 = 2, size = -1, offset_select = 0, offset_value = 0
  pim.halt
}
// CHECK: 'pim.ld' size must be >= 0, got -1

// -----

pim.core() coreId 0 : () {
  pim.mvmul rd = 2, rs1 = 0, mbiw = 8, relu = 0, group = -1
  pim.halt
}
// CHECK: 'pim.mvmul' group must be >= 0, got -1

// -----

pim.core() coreId 0 : () {
  pim.mvmul rd = 2, rs1 = 0, mbiw = 8, relu = 2, group = 0
  pim.halt
}
// CHECK: 'pim.mvmul' relu must be 0 or 1, got 2

// -----

pim.core() coreId 0 : () {
  pim.vrelu rd = 1, rs1 = 2, len = 16, offset_select = 8, offset_value = 0
  pim.halt
}
// CHECK: 'pim.vrelu' offset_select must be 0..7 (bit 0 rd, bit 1 rs1, bit 2 rs2), got 8
