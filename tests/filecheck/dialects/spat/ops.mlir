// RUN: CIM_ROUNDTRIP
// RUN: CIM_GENERIC_ROUNDTRIP
// RUN: cim-opt %s --split-input-file --print-op-generic | filecheck %s --check-prefix=GENERIC

// Every spat op, in custom syntax; the generic form must print back to the same text.

// A conv split over two kernel-position groups: the second compute adds the first one's
// partial sum (weight skipping marks the positions held by the other compute with -1).
%w0 = "test.op"() : () -> tensor<3x2xi8>
%w1 = "test.op"() : () -> tensor<3x2xi8>
%w2 = "test.op"() : () -> tensor<3x2xi8>
%x = "test.op"() : () -> tensor<4x4x3xi8>
%part = spat.compute [%w0, %w1] (%x) : [tensor<3x2xi8>, tensor<3x2xi8>] (tensor<4x4x3xi8>) -> tensor<4x4x2xi32> {
^bb0(%a0: tensor<3x2xi8>, %a1: tensor<3x2xi8>, %in: tensor<4x4x3xi8>):
  %y = spat.apply_filters %in weights [0, 1, -1, -1, -1, -1, -1, -1, -1] kernel [3, 3] pads [1, 1, 1, 1] : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
  spat.yield %y : tensor<4x4x2xi32>
}
%full:2 = spat.compute [%w2] (%x, %part) : [tensor<3x2xi8>] (tensor<4x4x3xi8>, tensor<4x4x2xi32>) -> tensor<4x4x2xi32>, tensor<2x2x2xi32> {
^bb0(%a2: tensor<3x2xi8>, %inp: tensor<4x4x3xi8>, %acc: tensor<4x4x2xi32>):
  %y2 = spat.apply_filters %inp weights [-1, -1, 0, 0, 0, 0, 0, 0, 0] kernel [3, 3] pads [1, 1, 1, 1] : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
  %sum = spat.vadd %acc, %y2 : tensor<4x4x2xi32>, tensor<4x4x2xi32>
  %s = spat.apply_filters %inp weights [0, -1, -1, 0] kernel [2, 2] strides [2, 2] pads [1, 1, 0, 0] dilations [2, 2] : tensor<4x4x3xi8> -> tensor<2x2x2xi32>
  spat.yield %sum, %s : tensor<4x4x2xi32>, tensor<2x2x2xi32>
}

// CHECK:      builtin.module {
// CHECK-NEXT:   %w0 = "test.op"() : () -> tensor<3x2xi8>
// CHECK-NEXT:   %w1 = "test.op"() : () -> tensor<3x2xi8>
// CHECK-NEXT:   %w2 = "test.op"() : () -> tensor<3x2xi8>
// CHECK-NEXT:   %x = "test.op"() : () -> tensor<4x4x3xi8>
// CHECK-NEXT:   %part = spat.compute[%w0, %w1] (%x) : [tensor<3x2xi8>, tensor<3x2xi8>] (tensor<4x4x3xi8>) -> tensor<4x4x2xi32> {
// CHECK-NEXT:   ^bb0(%a0: tensor<3x2xi8>, %a1: tensor<3x2xi8>, %in: tensor<4x4x3xi8>):
// CHECK-NEXT:     %y = spat.apply_filters %in weights [0, 1, -1, -1, -1, -1, -1, -1, -1] kernel [3, 3] pads [1, 1, 1, 1] : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
// CHECK-NEXT:     spat.yield %y : tensor<4x4x2xi32>
// CHECK-NEXT:   }
// CHECK-NEXT:   %full, %full_1 = spat.compute[%w2] (%x, %part) : [tensor<3x2xi8>] (tensor<4x4x3xi8>, tensor<4x4x2xi32>) -> tensor<4x4x2xi32>, tensor<2x2x2xi32> {
// CHECK-NEXT:   ^bb0(%a2: tensor<3x2xi8>, %inp: tensor<4x4x3xi8>, %acc: tensor<4x4x2xi32>):
// CHECK-NEXT:     %y2 = spat.apply_filters %inp weights [-1, -1, 0, 0, 0, 0, 0, 0, 0] kernel [3, 3] pads [1, 1, 1, 1] : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
// CHECK-NEXT:     %sum = spat.vadd %acc, %y2 : tensor<4x4x2xi32>, tensor<4x4x2xi32>
// CHECK-NEXT:     %s = spat.apply_filters %inp weights [0, -1, -1, 0] kernel [2, 2] strides [2, 2] pads [1, 1, 0, 0] dilations [2, 2] : tensor<4x4x3xi8> -> tensor<2x2x2xi32>
// CHECK-NEXT:     spat.yield %sum, %s : tensor<4x4x2xi32>, tensor<2x2x2xi32>
// CHECK-NEXT:   }
// CHECK-NEXT: }

// GENERIC:      %part = "spat.compute"(%w0, %w1, %x) <{operandSegmentSizes = array<i32: 2, 1>}> ({
// GENERIC-NEXT: ^bb0(%a0: tensor<3x2xi8>, %a1: tensor<3x2xi8>, %in: tensor<4x4x3xi8>):
// GENERIC-NEXT:   %y = "spat.apply_filters"(%in) <{weightIndices = array<i64: 0, 1, -1, -1, -1, -1, -1, -1, -1>, kernelShape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}> : (tensor<4x4x3xi8>) -> tensor<4x4x2xi32>
// GENERIC-NEXT:   "spat.yield"(%y) : (tensor<4x4x2xi32>) -> ()
// GENERIC-NEXT: }) : (tensor<3x2xi8>, tensor<3x2xi8>, tensor<4x4x3xi8>) -> tensor<4x4x2xi32>

// -----

// A gemm is the rank-2, 1x1-kernel form: [rows, K] x [K, N] -> [rows, N].
%w = "test.op"() : () -> tensor<4x3xi8>
%m = "test.op"() : () -> tensor<2x4xi8>
%g = spat.compute [%w] (%m) : [tensor<4x3xi8>] (tensor<2x4xi8>) -> tensor<2x3xi32> {
^bb0(%a: tensor<4x3xi8>, %in: tensor<2x4xi8>):
  %y = spat.apply_filters %in weights [0] : tensor<2x4xi8> -> tensor<2x3xi32>
  spat.yield %y : tensor<2x3xi32>
}
// A compute without weights, inputs or results.
spat.compute [] () : [] () -> {
  spat.yield
}

// CHECK:      builtin.module {
// CHECK-NEXT:   %w = "test.op"() : () -> tensor<4x3xi8>
// CHECK-NEXT:   %m = "test.op"() : () -> tensor<2x4xi8>
// CHECK-NEXT:   %g = spat.compute[%w] (%m) : [tensor<4x3xi8>] (tensor<2x4xi8>) -> tensor<2x3xi32> {
// CHECK-NEXT:   ^bb0(%a: tensor<4x3xi8>, %in: tensor<2x4xi8>):
// CHECK-NEXT:     %y = spat.apply_filters %in weights [0] : tensor<2x4xi8> -> tensor<2x3xi32>
// CHECK-NEXT:     spat.yield %y : tensor<2x3xi32>
// CHECK-NEXT:   }
// CHECK-NEXT:   spat.compute[] () : [] () -> {
// CHECK-NEXT:     spat.yield
// CHECK-NEXT:   }
// CHECK-NEXT: }

// -----

%a = "test.op"() : () -> tensor<4x4x8xi32>
%b = "test.op"() : () -> tensor<4x4x8xi32>
%bias = "test.op"() : () -> tensor<8xi32>
%add = spat.vadd %a, %b : tensor<4x4x8xi32>, tensor<4x4x8xi32>
%biased = spat.vadd %add, %bias : tensor<4x4x8xi32>, tensor<8xi32>
%sub = spat.vsub %a, %b : tensor<4x4x8xi32>, tensor<4x4x8xi32>
%mul = spat.vmul %a, %bias : tensor<4x4x8xi32>, tensor<8xi32>
%max = spat.vmax %a, %b : tensor<4x4x8xi32>, tensor<4x4x8xi32>
%relu = spat.vrelu %a : tensor<4x4x8xi32>
%f = "test.op"() : () -> tensor<16xf32>
%tanh = spat.vtanh %f : tensor<16xf32>
%sigm = spat.vsigm %f {note = "fused"} : tensor<16xf32>

// CHECK:      builtin.module {
// CHECK-NEXT:   %a = "test.op"() : () -> tensor<4x4x8xi32>
// CHECK-NEXT:   %b = "test.op"() : () -> tensor<4x4x8xi32>
// CHECK-NEXT:   %bias = "test.op"() : () -> tensor<8xi32>
// CHECK-NEXT:   %add = spat.vadd %a, %b : tensor<4x4x8xi32>, tensor<4x4x8xi32>
// CHECK-NEXT:   %biased = spat.vadd %add, %bias : tensor<4x4x8xi32>, tensor<8xi32>
// CHECK-NEXT:   %sub = spat.vsub %a, %b : tensor<4x4x8xi32>, tensor<4x4x8xi32>
// CHECK-NEXT:   %mul = spat.vmul %a, %bias : tensor<4x4x8xi32>, tensor<8xi32>
// CHECK-NEXT:   %max = spat.vmax %a, %b : tensor<4x4x8xi32>, tensor<4x4x8xi32>
// CHECK-NEXT:   %relu = spat.vrelu %a : tensor<4x4x8xi32>
// CHECK-NEXT:   %f = "test.op"() : () -> tensor<16xf32>
// CHECK-NEXT:   %tanh = spat.vtanh %f : tensor<16xf32>
// CHECK-NEXT:   %sigm = spat.vsigm %f {note = "fused"} : tensor<16xf32>
// CHECK-NEXT: }

// -----

%x = "test.op"() : () -> tensor<8x8x4xi8>
%mp = spat.maxpool %x kernel [3, 3] strides [2, 2] pads [1, 1, 1, 1] : tensor<8x8x4xi8> -> tensor<4x4x4xi8>
%ap = spat.avgpool %x kernel [2, 2] strides [2, 2] : tensor<8x8x4xi8> -> tensor<4x4x4xi8>
%apc = spat.avgpool %x kernel [3, 3] pads [1, 1, 1, 1] count_include_pad : tensor<8x8x4xi8> -> tensor<8x8x4xi8>
%gap = spat.global_avgpool %x : tensor<8x8x4xi8> -> tensor<1x1x4xi8>
%cat = spat.concat axis 2 %mp, %ap : tensor<4x4x4xi8>, tensor<4x4x4xi8> -> tensor<4x4x8xi8>
%rows = spat.concat axis 0 %mp : tensor<4x4x4xi8> -> tensor<4x4x4xi8>

// CHECK:      builtin.module {
// CHECK-NEXT:   %x = "test.op"() : () -> tensor<8x8x4xi8>
// CHECK-NEXT:   %mp = spat.maxpool %x kernel [3, 3] strides [2, 2] pads [1, 1, 1, 1] : tensor<8x8x4xi8> -> tensor<4x4x4xi8>
// CHECK-NEXT:   %ap = spat.avgpool %x kernel [2, 2] strides [2, 2] : tensor<8x8x4xi8> -> tensor<4x4x4xi8>
// CHECK-NEXT:   %apc = spat.avgpool %x kernel [3, 3] pads [1, 1, 1, 1] count_include_pad : tensor<8x8x4xi8> -> tensor<8x8x4xi8>
// CHECK-NEXT:   %gap = spat.global_avgpool %x : tensor<8x8x4xi8> -> tensor<1x1x4xi8>
// CHECK-NEXT:   %cat = spat.concat axis 2 %mp, %ap : tensor<4x4x4xi8>, tensor<4x4x4xi8> -> tensor<4x4x8xi8>
// CHECK-NEXT:   %rows = spat.concat axis 0 %mp : tensor<4x4x4xi8> -> tensor<4x4x4xi8>
// CHECK-NEXT: }

// GENERIC:      %apc = "spat.avgpool"(%x) <{kernelShape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, countIncludePad, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}> : (tensor<8x8x4xi8>) -> tensor<8x8x4xi8>
// GENERIC:      %cat = "spat.concat"(%mp, %ap) <{axis = 2 : i64}> : (tensor<4x4x4xi8>, tensor<4x4x4xi8>) -> tensor<4x4x8xi8>

// -----

%ch = spat.channel_new
%v = "test.op"() : () -> tensor<4x4x2xi32>
spat.channel_send %v to %ch : tensor<4x4x2xi32>
%r = spat.channel_receive %ch : tensor<4x4x2xi32>

// CHECK:      builtin.module {
// CHECK-NEXT:   %ch = spat.channel_new
// CHECK-NEXT:   %v = "test.op"() : () -> tensor<4x4x2xi32>
// CHECK-NEXT:   spat.channel_send %v to %ch : tensor<4x4x2xi32>
// CHECK-NEXT:   %r = spat.channel_receive %ch : tensor<4x4x2xi32>
// CHECK-NEXT: }

// GENERIC:      %ch = "spat.channel_new"() : () -> !spat.ch
// GENERIC:      "spat.channel_send"(%ch, %v) : (!spat.ch, tensor<4x4x2xi32>) -> ()
// GENERIC:      %r = "spat.channel_receive"(%ch) : (!spat.ch) -> tensor<4x4x2xi32>

// -----

// After pim-bufferize the same ops work on memrefs; a result is a fresh local buffer.
%w = "test.op"() : () -> tensor<3x2xi8>
%c = spat.compute [%w] () : [tensor<3x2xi8>] () -> memref<4x4x2xi32> {
^bb0(%a: tensor<3x2xi8>):
  %in = "test.op"() : () -> memref<4x4x3xi8>
  %y = spat.apply_filters %in weights [0] : memref<4x4x3xi8> -> memref<4x4x2xi32>
  %z = spat.vadd %y, %y : memref<4x4x2xi32>, memref<4x4x2xi32>
  %p = spat.maxpool %z kernel [2, 2] strides [2, 2] : memref<4x4x2xi32> -> memref<2x2x2xi32>
  %ch = spat.channel_new
  spat.channel_send %p to %ch : memref<2x2x2xi32>
  %q = spat.channel_receive %ch : memref<2x2x2xi32>
  spat.yield %z : memref<4x4x2xi32>
}

// CHECK:      builtin.module {
// CHECK-NEXT:   %w = "test.op"() : () -> tensor<3x2xi8>
// CHECK-NEXT:   %c = spat.compute[%w] () : [tensor<3x2xi8>] () -> memref<4x4x2xi32> {
// CHECK-NEXT:   ^bb0(%a: tensor<3x2xi8>):
// CHECK-NEXT:     %in = "test.op"() : () -> memref<4x4x3xi8>
// CHECK-NEXT:     %y = spat.apply_filters %in weights [0] : memref<4x4x3xi8> -> memref<4x4x2xi32>
// CHECK-NEXT:     %z = spat.vadd %y, %y : memref<4x4x2xi32>, memref<4x4x2xi32>
// CHECK-NEXT:     %p = spat.maxpool %z kernel [2, 2] strides [2, 2] : memref<4x4x2xi32> -> memref<2x2x2xi32>
// CHECK-NEXT:     %ch = spat.channel_new
// CHECK-NEXT:     spat.channel_send %p to %ch : memref<2x2x2xi32>
// CHECK-NEXT:     %q = spat.channel_receive %ch : memref<2x2x2xi32>
// CHECK-NEXT:     spat.yield %z : memref<4x4x2xi32>
// CHECK-NEXT:   }
// CHECK-NEXT: }

// -----

// The im2col form: a 3-channel 3x3 kernel's 27 rows unrolled (position-major) over two
// crossbars of 16 and 11 rows; a second op reads rows 4:10 of positions 4 and 5 only.
%w0 = "test.op"() : () -> tensor<16x2xi8>
%w1 = "test.op"() : () -> tensor<11x2xi8>
%w2 = "test.op"() : () -> tensor<6x2xi8>
%c = spat.compute [%w0, %w1, %w2] () : [tensor<16x2xi8>, tensor<11x2xi8>, tensor<6x2xi8>] () -> tensor<4x4x2xi32> {
^bb0(%a0: tensor<16x2xi8>, %a1: tensor<11x2xi8>, %a2: tensor<6x2xi8>):
  %in = "test.op"() : () -> tensor<4x4x3xi8>
  %y = spat.apply_filters %in weights [0, 1] kernel [3, 3] pads [1, 1, 1, 1] im2col [0, 1, 2, 3, 4, 5, 6, 7, 8] : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
  %z = spat.apply_filters %in weights [2] kernel [3, 3] pads [1, 1, 1, 1] im2col [4, 5, 7] offset 1 : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
  %s = spat.vadd %y, %z : tensor<4x4x2xi32>, tensor<4x4x2xi32>
  spat.yield %s : tensor<4x4x2xi32>
}

// CHECK:      %y = spat.apply_filters %in weights [0, 1] kernel [3, 3] pads [1, 1, 1, 1] im2col [0, 1, 2, 3, 4, 5, 6, 7, 8] : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
// CHECK-NEXT: %z = spat.apply_filters %in weights [2] kernel [3, 3] pads [1, 1, 1, 1] im2col [4, 5, 7] offset 1 : tensor<4x4x3xi8> -> tensor<4x4x2xi32>

// GENERIC:      "spat.apply_filters"(%in) <{weightIndices = array<i64: 2>, kernelShape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, im2col = array<i64: 4, 5, 7>, im2colOffset = 1 : i64, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}>

// -----

// Two output pixels per read: the 3x4 window of two adjacent pixels (stride 2 across), its 36
// rows over crossbars of 32 and 4 rows whose 4 columns are the two pixels' 2 channels each.
%w0 = "test.op"() : () -> tensor<32x4xi8>
%w1 = "test.op"() : () -> tensor<4x4xi8>
%c = spat.compute [%w0, %w1] () : [tensor<32x4xi8>, tensor<4x4xi8>] () -> tensor<4x4x2xi32> {
^bb0(%a0: tensor<32x4xi8>, %a1: tensor<4x4xi8>):
  %in = "test.op"() : () -> tensor<4x4x3xi8>
  %y = spat.apply_filters %in weights [0, 1] kernel [3, 4] strides [1, 2] pads [1, 1, 1, 1] im2col [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] pixels 2 : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
  spat.yield %y : tensor<4x4x2xi32>
}

// CHECK:      %y = spat.apply_filters %in weights [0, 1] kernel [3, 4] strides [1, 2] pads [1, 1, 1, 1] im2col [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] pixels 2 : tensor<4x4x3xi8> -> tensor<4x4x2xi32>

// GENERIC:      "spat.apply_filters"(%in) <{weightIndices = array<i64: 0, 1>, kernelShape = array<i64: 3, 4>, strides = array<i64: 1, 2>, pads = array<i64: 1, 1, 1, 1>, im2col = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11>, im2colPixels = 2 : i64, dilations = array<i64: 1, 1>}>

// -----

// A band of rows (a view: no data moves).
%x = "test.op"() : () -> tensor<6x4x2xi32>
%band = spat.extract_rows %x offset 2 : tensor<6x4x2xi32> -> tensor<3x4x2xi32>

// CHECK: %band = spat.extract_rows %x offset 2 : tensor<6x4x2xi32> -> tensor<3x4x2xi32>

// -----

// Columns of a band (a view of a one-row band), and a window whose negative pads crop the input:
// columns 2..<4 of a 3x3 convolution padded by 1, computed from its whole input rows.
%x = "test.op"() : () -> tensor<1x4x2xi32>
%part = spat.extract_columns %x offset 1 : tensor<1x4x2xi32> -> tensor<1x2x2xi32>
%w = "test.op"() : () -> tensor<3x2xi8>
spat.compute [%w] () : [tensor<3x2xi8>] () -> {
^bb0(%a: tensor<3x2xi8>):
  %in = "test.op"() : () -> tensor<3x4x3xi8>
  %y = spat.apply_filters %in weights [0, 0, 0, 0, 0, 0, 0, 0, 0] kernel [3, 3] pads [0, -1, 0, 1] : tensor<3x4x3xi8> -> tensor<1x2x2xi32>
  spat.yield
}

// CHECK:      %part = spat.extract_columns %x offset 1 : tensor<1x4x2xi32> -> tensor<1x2x2xi32>
// CHECK:      %y = spat.apply_filters %in weights [0, 0, 0, 0, 0, 0, 0, 0, 0] kernel [3, 3] pads [0, -1, 0, 1] : tensor<3x4x3xi8> -> tensor<1x2x2xi32>
