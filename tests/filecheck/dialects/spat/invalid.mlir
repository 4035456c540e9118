// RUN: cim-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One chunk per verifier rule of the spat dialect.

// spat.compute: weights are matrices.
%w = "test.op"() : () -> tensor<3xi8>
spat.compute [%w] () : [tensor<3xi8>] () -> {
^bb0(%a: tensor<3xi8>):
  spat.yield
}
// CHECK: 'spat.compute' weight 0 must be a matrix (rank 2), got tensor<3xi8>

// -----

%w = "test.op"() : () -> tensor<3x2xi8>
%x = "test.op"() : () -> tensor<4x4x3xi8>
spat.compute [%w] (%x) : [tensor<3x2xi8>] (tensor<4x4x3xi8>) -> {
^bb0(%a: tensor<3x2xi8>):
  spat.yield
}
// CHECK: 'spat.compute' body has 1 arguments but the op has 1 weights and 1 inputs

// -----

%x = "test.op"() : () -> tensor<4x4x3xi8>
spat.compute [] (%x) : [] (tensor<4x4x3xi8>) -> {
^bb0(%a: tensor<4x4x3xi32>):
  spat.yield
}
// CHECK: 'spat.compute' body argument 0 has type tensor<4x4x3xi32> but its operand has type tensor<4x4x3xi8>

// -----

spat.compute [] () : [] () -> {
  "test.termop"() : () -> ()
}
// CHECK: 'spat.compute' body must end with 'spat.yield'

// -----

%r = spat.compute [] () : [] () -> tensor<2xi32> {
  %v = "test.op"() : () -> tensor<3xi32>
  spat.yield %v : tensor<3xi32>
}
// CHECK: 'spat.compute' yields (tensor<3xi32>) but has results (tensor<2xi32>)

// -----

%v = "test.op"() : () -> tensor<2xi32>
spat.yield %v : tensor<2xi32>
// CHECK: 'spat.yield' expects parent op 'spat.compute'

// -----

// spat.apply_filters
%w = "test.op"() : () -> tensor<3x2xi8>
spat.compute [%w] () : [tensor<3x2xi8>] () -> {
^bb0(%a: tensor<3x2xi8>):
  %x = "test.op"() : () -> tensor<4x4x3xi8>
  %y = spat.apply_filters %x weights [0, 0] kernel [1, 2, 3] : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
  spat.yield
}
// CHECK: 'spat.apply_filters' kernelShape must be 2 positive integers, got [1, 2, 3]

// -----

%w = "test.op"() : () -> tensor<3x2xi8>
spat.compute [%w] () : [tensor<3x2xi8>] () -> {
^bb0(%a: tensor<3x2xi8>):
  %x = "test.op"() : () -> tensor<4x4x3xi8>
  %y = spat.apply_filters %x weights [0] strides [0, 1] : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
  spat.yield
}
// CHECK: 'spat.apply_filters' strides must be 2 positive integers, got [0, 1]

// -----

%w = "test.op"() : () -> tensor<3x2xi8>
spat.compute [%w] () : [tensor<3x2xi8>] () -> {
^bb0(%a: tensor<3x2xi8>):
  %x = "test.op"() : () -> tensor<4x4x3xi8>
  %y = spat.apply_filters %x weights [0] pads [0, -2, 0, -2] : tensor<4x4x3xi8> -> tensor<4x1x2xi32>
  spat.yield
}
// CHECK: 'spat.apply_filters' pads [0, -2, 0, -2] crop the whole 4x4 input

// -----

%w = "test.op"() : () -> tensor<3x2xi8>
spat.compute [%w] () : [tensor<3x2xi8>] () -> {
^bb0(%a: tensor<3x2xi8>):
  %x = "test.op"() : () -> tensor<4x4x3xi8>
  %y = spat.apply_filters %x weights [0] dilations [1] : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
  spat.yield
}
// CHECK: 'spat.apply_filters' dilations must be 2 positive integers, got [1]

// -----

%w = "test.op"() : () -> tensor<3x2xi8>
spat.compute [%w] () : [tensor<3x2xi8>] () -> {
^bb0(%a: tensor<3x2xi8>):
  %x = "test.op"() : () -> tensor<4x3xi8>
  %y = spat.apply_filters %x weights [0] : tensor<4x3xi8> -> tensor<4x2x1xi32>
  spat.yield
}
// CHECK: 'spat.apply_filters' input and output must have the same rank

// -----

%w = "test.op"() : () -> tensor<3x2xi8>
spat.compute [%w] () : [tensor<3x2xi8>] () -> {
^bb0(%a: tensor<3x2xi8>):
  %x = "test.op"() : () -> tensor<3xi8>
  %y = spat.apply_filters %x weights [0] : tensor<3xi8> -> tensor<2xi32>
  spat.yield
}
// CHECK: 'spat.apply_filters' input must be [H, W, C] (rank 3) or [rows, K] (rank 2), got rank 1

// -----

%w = "test.op"() : () -> tensor<3x2xi8>
spat.compute [%w] () : [tensor<3x2xi8>] () -> {
^bb0(%a: tensor<3x2xi8>):
  %x = "test.op"() : () -> tensor<4x4x3xi32>
  %y = spat.apply_filters %x weights [0] : tensor<4x4x3xi32> -> tensor<4x4x2xi8>
  spat.yield
}
// CHECK: 'spat.apply_filters' output element type i8 cannot hold products of i32 (it must be the same type or a wider integer)

// -----

%w = "test.op"() : () -> tensor<3x2xi8>
spat.compute [%w] () : [tensor<3x2xi8>] () -> {
^bb0(%a: tensor<3x2xi8>):
  %x = "test.op"() : () -> tensor<4x4x3xi8>
  %y = spat.apply_filters %x weights [0, 0] kernel [3, 3] pads [1, 1, 1, 1] : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
  spat.yield
}
// CHECK: 'spat.apply_filters' needs one weight index per kernel position (9), got 2

// -----

%w = "test.op"() : () -> tensor<3x2xi8>
spat.compute [%w] () : [tensor<3x2xi8>] () -> {
^bb0(%a: tensor<3x2xi8>):
  %x = "test.op"() : () -> tensor<4x4x3xi8>
  %y = spat.apply_filters %x weights [0, -2, 0, 0] kernel [2, 2] : tensor<4x4x3xi8> -> tensor<3x3x2xi32>
  spat.yield
}
// CHECK: 'spat.apply_filters' weight indices must be >= 0, or -1 for a skipped position

// -----

%w = "test.op"() : () -> tensor<3x2xi8>
spat.compute [%w] () : [tensor<3x2xi8>] () -> {
^bb0(%a: tensor<3x2xi8>):
  %x = "test.op"() : () -> tensor<4x4x3xi8>
  %y = spat.apply_filters %x weights [-1] : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
  spat.yield
}
// CHECK: 'spat.apply_filters' skips every kernel position; at least one weight index must be >= 0

// -----

%w = "test.op"() : () -> tensor<3x2xi8>
spat.compute [%w] () : [tensor<3x2xi8>] () -> {
^bb0(%a: tensor<3x2xi8>):
  %x = "test.op"() : () -> tensor<4x3xi8>
  %y = spat.apply_filters %x weights [0] strides [2, 2] : tensor<4x3xi8> -> tensor<2x2xi32>
  spat.yield
}
// CHECK: 'spat.apply_filters' the rank-2 (gemm) form needs a 1x1 kernel, unit strides, no padding and unit dilations

// -----

%w = "test.op"() : () -> tensor<3x2xi8>
spat.compute [%w] () : [tensor<3x2xi8>] () -> {
^bb0(%a: tensor<3x2xi8>):
  %x = "test.op"() : () -> tensor<4x3xi8>
  %y = spat.apply_filters %x weights [0] : tensor<4x3xi8> -> tensor<5x2xi32>
  spat.yield
}
// CHECK: 'spat.apply_filters' output must have 4 rows like the input, got 5

// -----

%w = "test.op"() : () -> tensor<3x2xi8>
spat.compute [%w] () : [tensor<3x2xi8>] () -> {
^bb0(%a: tensor<3x2xi8>):
  %x = "test.op"() : () -> tensor<2x2x3xi8>
  %y = spat.apply_filters %x weights [0, 0, 0, 0, 0, 0, 0, 0, 0] kernel [3, 3] : tensor<2x2x3xi8> -> tensor<1x1x2xi32>
  spat.yield
}
// CHECK: 'spat.apply_filters' kernel does not fit the 2x2 input

// -----

%w = "test.op"() : () -> tensor<3x2xi8>
spat.compute [%w] () : [tensor<3x2xi8>] () -> {
^bb0(%a: tensor<3x2xi8>):
  %x = "test.op"() : () -> tensor<4x4x3xi8>
  %y = spat.apply_filters %x weights [0, 0, 0, 0, 0, 0, 0, 0, 0] kernel [3, 3] : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
  spat.yield
}
// CHECK: 'spat.apply_filters' result must be 2x2 pixels for a 4x4 input, got 4x4

// -----

%x = "test.op"() : () -> tensor<4x4x3xi8>
%y = spat.apply_filters %x weights [0] : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
// CHECK: 'spat.apply_filters' must be inside a 'spat.compute' or 'pim.core' that holds its weights

// -----

%w = "test.op"() : () -> tensor<3x2xi8>
spat.compute [%w] () : [tensor<3x2xi8>] () -> {
^bb0(%a: tensor<3x2xi8>):
  %x = "test.op"() : () -> tensor<4x4x3xi8>
  %y = spat.apply_filters %x weights [1] : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
  spat.yield
}
// CHECK: 'spat.apply_filters' weight index 1 is out of range: 'spat.compute' holds 1 weights

// -----

%w = "test.op"() : () -> tensor<3x2xi8>
spat.compute [%w] () : [tensor<3x2xi8>] () -> {
^bb0(%a: tensor<3x2xi8>):
  %x = "test.op"() : () -> tensor<4x4x3xi8>
  %y = spat.apply_filters %x weights [0] : tensor<4x4x3xi8> -> tensor<4x4x5xi32>
  spat.yield
}
// CHECK: 'spat.apply_filters' weight 0 must be 3x5 (input channels x output channels), got 3x2

// -----

%w = "test.op"() : () -> tensor<3x2xi16>
spat.compute [%w] () : [tensor<3x2xi16>] () -> {
^bb0(%a: tensor<3x2xi16>):
  %x = "test.op"() : () -> tensor<4x4x3xi8>
  %y = spat.apply_filters %x weights [0] : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
  spat.yield
}
// CHECK: 'spat.apply_filters' weight 0 element type i16 differs from the input's i8

// -----

%w = "test.op"() : () -> tensor<3x2xi8>
spat.compute [%w] () : [tensor<3x2xi8>] () -> {
^bb0(%a: tensor<3x2xi8>):
  %x = "test.op"() : () -> tensor<4x4x3xi8>
  %y = spat.apply_filters %x weights [0] : tensor<4x4x3xi8> -> memref<4x4x2xi32>
  spat.yield
}
// CHECK: 'spat.apply_filters' operands and results must be all tensors or all memrefs

// -----

%x = "test.op"() : () -> tensor<?x4x3xi8>
%y = spat.vrelu %x : tensor<?x4x3xi8>
// CHECK: 'spat.vrelu' input must have a static shape, got tensor<?x4x3xi8>

// -----

// Vector ops
%a = "test.op"() : () -> tensor<4x8xi32>
%b = "test.op"() : () -> tensor<4x8xi8>
%c = spat.vadd %a, %b : tensor<4x8xi32>, tensor<4x8xi8>
// CHECK: 'spat.vadd' lhs and rhs must have the same element type, got i32 and i8

// -----

%a = "test.op"() : () -> tensor<4x8xi32>
%b = "test.op"() : () -> tensor<4xi32>
%c = spat.vmax %a, %b : tensor<4x8xi32>, tensor<4xi32>
// CHECK: 'spat.vmax' rhs shape [4] must equal the lhs shape [4, 8] or a suffix of it

// -----

%a = "test.op"() : () -> tensor<4x8xi32>
%b = "test.op"() : () -> memref<4x8xi32>
%c = spat.vmul %a, %b : tensor<4x8xi32>, memref<4x8xi32>
// CHECK: 'spat.vmul' operands and results must be all tensors or all memrefs

// -----

%a = "test.op"() : () -> tensor<4x8xi32>
%c = "spat.vsub"(%a, %a) : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi8>
// CHECK: attribute tensor<4x8xi32> expected from variable 'T', but got tensor<4x8xi8>

// -----

// Pooling
%x = "test.op"() : () -> tensor<8x4xi8>
%y = spat.maxpool %x kernel [2, 2] : tensor<8x4xi8> -> tensor<7x3xi8>
// CHECK: 'spat.maxpool' input and result must be [H, W, C] (rank 3)

// -----

%x = "test.op"() : () -> tensor<8x8x4xi8>
%y = spat.avgpool %x kernel [2, 2] strides [2, 2] : tensor<8x8x4xi8> -> tensor<4x4x4xi32>
// CHECK: 'spat.avgpool' input and result must have the same element type

// -----

%x = "test.op"() : () -> tensor<8x8x4xi8>
%y = spat.maxpool %x kernel [2, 2] strides [2, 2] : tensor<8x8x4xi8> -> tensor<4x4x2xi8>
// CHECK: 'spat.maxpool' result must keep the 4 channels of the input, got 2

// -----

%x = "test.op"() : () -> tensor<8x8x4xi8>
%y = spat.maxpool %x kernel [3, 3] strides [2, 2] : tensor<8x8x4xi8> -> tensor<4x4x4xi8>
// CHECK: 'spat.maxpool' result must be 3x3 pixels for a 8x8 input, got 4x4

// -----

%x = "test.op"() : () -> tensor<8x4xi8>
%y = spat.global_avgpool %x : tensor<8x4xi8> -> tensor<1x4xi8>
// CHECK: 'spat.global_avgpool' input must be [H, W, C] (rank 3), got rank 2

// -----

%x = "test.op"() : () -> tensor<8x8x4xi8>
%y = spat.global_avgpool %x : tensor<8x8x4xi8> -> tensor<1x4xi8>
// CHECK: 'spat.global_avgpool' result must be 1x1x4, got 1x4

// -----

%x = "test.op"() : () -> tensor<8x8x4xi8>
%y = spat.global_avgpool %x : tensor<8x8x4xi8> -> tensor<1x1x4xi32>
// CHECK: 'spat.global_avgpool' input and result must have the same element type

// -----

// Concat
%y = spat.concat axis 0 : -> tensor<4xi8>
// CHECK: 'spat.concat' needs at least one input

// -----

%a = "test.op"() : () -> tensor<4x4xi8>
%y = spat.concat axis 2 %a, %a : tensor<4x4xi8>, tensor<4x4xi8> -> tensor<4x8xi8>
// CHECK: 'spat.concat' axis 2 is out of range for rank 2

// -----

%a = "test.op"() : () -> tensor<4x4xi8>
%b = "test.op"() : () -> tensor<4x4xi32>
%y = spat.concat axis 1 %a, %b : tensor<4x4xi8>, tensor<4x4xi32> -> tensor<4x8xi8>
// CHECK: 'spat.concat' input 1 must have the result's element type

// -----

%a = "test.op"() : () -> tensor<4x4xi8>
%b = "test.op"() : () -> tensor<3x4xi8>
%y = spat.concat axis 1 %a, %b : tensor<4x4xi8>, tensor<3x4xi8> -> tensor<4x8xi8>
// CHECK: 'spat.concat' input 1 shape [3, 4] must match the result shape [4, 8] except along axis 1

// -----

%a = "test.op"() : () -> tensor<4x4xi8>
%y = spat.concat axis 1 %a, %a : tensor<4x4xi8>, tensor<4x4xi8> -> tensor<4x9xi8>
// CHECK: 'spat.concat' result has 9 elements along axis 1, the inputs 8

// -----

// Channels
%ch = spat.channel_new
%v = "test.op"() : () -> tensor<4xi32>
spat.channel_send %v to %ch : tensor<4xi32>
spat.channel_send %v to %ch : tensor<4xi32>
%r = spat.channel_receive %ch : tensor<4xi32>
// CHECK: 'spat.channel_new' channel has 2 sends but 1 receives; they must pair up

// -----

%ch = spat.channel_new
%v = "test.op"() : () -> tensor<?xi32>
spat.channel_send %v to %ch : tensor<?xi32>
%r = spat.channel_receive %ch : tensor<4xi32>
// CHECK: 'spat.channel_send' value must have a static shape, got tensor<?xi32>

// -----

%ch = spat.channel_new
%v = "test.op"() : () -> tensor<4xi32>
spat.channel_send %v to %ch : tensor<4xi32>
%r = spat.channel_receive %ch : tensor<?xi32>
// CHECK: 'spat.channel_receive' result must have a static shape, got tensor<?xi32>

// -----

// im2col form: the matrices' rows must fit the unrolled positions x channels.
%w = "test.op"() : () -> tensor<10x2xi8>
spat.compute [%w] () : [tensor<10x2xi8>] () -> {
^bb0(%a: tensor<10x2xi8>):
  %x = "test.op"() : () -> tensor<4x4x3xi8>
  %y = spat.apply_filters %x weights [0] kernel [3, 3] pads [1, 1, 1, 1] im2col [0, 1, 2] : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
  spat.yield
}
// CHECK: 'spat.apply_filters' im2col rows 0:10 exceed the 9 rows of 3 positions x 3 channels

// -----

%w = "test.op"() : () -> tensor<9x2xi8>
spat.compute [%w] () : [tensor<9x2xi8>] () -> {
^bb0(%a: tensor<9x2xi8>):
  %x = "test.op"() : () -> tensor<4x4x3xi8>
  %y = spat.apply_filters %x weights [0] kernel [3, 3] pads [1, 1, 1, 1] im2col [0, 9, 2] : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
  spat.yield
}
// CHECK: 'spat.apply_filters' im2col positions must lie in [0, 9)

// -----

%w = "test.op"() : () -> tensor<9x2xi8>
spat.compute [%w] () : [tensor<9x2xi8>] () -> {
^bb0(%a: tensor<9x2xi8>):
  %x = "test.op"() : () -> tensor<4x4x3xi8>
  %y = spat.apply_filters %x weights [0, -1] kernel [3, 3] pads [1, 1, 1, 1] im2col [0, 1, 2] : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
  spat.yield
}
// CHECK: 'spat.apply_filters' im2col packing needs at least one weight index, all >= 0

// -----

%w = "test.op"() : () -> tensor<9x3xi8>
spat.compute [%w] () : [tensor<9x3xi8>] () -> {
^bb0(%a: tensor<9x3xi8>):
  %x = "test.op"() : () -> tensor<4x4x3xi8>
  %y = spat.apply_filters %x weights [0] kernel [3, 3] pads [1, 1, 1, 1] im2col [0, 1, 2] : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
  spat.yield
}
// CHECK: 'spat.apply_filters' weight 0 must be Nx2 (rows x output channels), got 9x3

// -----

// Two pixels per read need matrices of their 2 x 2 channels.
%w = "test.op"() : () -> tensor<36x2xi8>
spat.compute [%w] () : [tensor<36x2xi8>] () -> {
^bb0(%a: tensor<36x2xi8>):
  %x = "test.op"() : () -> tensor<4x4x3xi8>
  %y = spat.apply_filters %x weights [0] kernel [3, 4] strides [1, 2] pads [1, 1, 1, 1] im2col [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] pixels 2 : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
  spat.yield
}
// CHECK: 'spat.apply_filters' weight 0 must be Nx4 (rows x output channels), got 36x2

// -----

%w = "test.op"() : () -> tensor<36x6xi8>
spat.compute [%w] () : [tensor<36x6xi8>] () -> {
^bb0(%a: tensor<36x6xi8>):
  %x = "test.op"() : () -> tensor<4x4x3xi8>
  %y = spat.apply_filters %x weights [0] kernel [3, 4] strides [1, 2] pads [1, 1, 1, 1] im2col [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] pixels 3 : tensor<4x4x3xi8> -> tensor<4x4x2xi32>
  spat.yield
}
// CHECK: 'spat.apply_filters' im2col pixels must be a positive divisor of the output width, got 3

// -----

%x = "test.op"() : () -> tensor<6x4x2xi32>
%band = spat.extract_rows %x offset 4 : tensor<6x4x2xi32> -> tensor<3x4x2xi32>
// CHECK: 'spat.extract_rows' rows 4:7 exceed the input's 6 rows

// -----

%x = "test.op"() : () -> tensor<6x4x2xi32>
%band = spat.extract_rows %x offset 0 : tensor<6x4x2xi32> -> tensor<3x4x3xi32>
// CHECK: 'spat.extract_rows' result must keep the input's element type and its other axes

// -----

%x = "test.op"() : () -> tensor<2x4x2xi32>
%part = spat.extract_columns %x offset 3 : tensor<2x4x2xi32> -> tensor<2x2x2xi32>
// CHECK: 'spat.extract_columns' columns 3:5 exceed the input's 4 columns

// -----

%x = "test.op"() : () -> tensor<2x4x2xi32>
%part = spat.extract_columns %x offset 0 : tensor<2x4x2xi32> -> tensor<1x2x2xi32>
// CHECK: 'spat.extract_columns' result must keep the input's element type and its other axes
