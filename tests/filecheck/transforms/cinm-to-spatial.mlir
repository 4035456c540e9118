// RUN: cim-opt %s --split-input-file -p 'cinm-to-spatial{xbar-size=3 crossbars-per-compute=5}' | filecheck %s
// RUN: cim-opt %s --split-input-file -p 'cinm-to-spatial{xbar-size=2 crossbars-per-compute=4}' | filecheck %s --check-prefix=TWO

// A 3x3 convolution (its zero padding folded from tensor.pad), 4 input channels, 2 filters, then
// ReLU. With 3x3 crossbars the image splits into channel tiles 0:3 and 3:4 (host glue slices the
// NCHW input into [H, W, C] tiles); the 18 crossbar matrices, ordered by input tile and kernel
// position, make computes of at most 5; the last compute of the output tile adds the others' partial
// sums (Miotti 2025, Listing 4.1, passes them along a chain instead). The ReLU runs in the compute
// that finishes the sum.
func.func @conv(%x: tensor<1x4x4x4xi32>) -> tensor<1x2x4x4xi32> {
  %c0 = arith.constant 0 : i32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %c0 : i32
  } : tensor<1x4x4x4xi32> to tensor<1x4x6x6xi32>
  %w = arith.constant dense<1> : tensor<36x2xi32>
  %y = cinm.compute -> tensor<1x2x4x4xi32> {
    %cols = cinm.op.im2col %p {kernel = array<i64: 3, 3>} : tensor<1x4x6x6xi32> -> tensor<16x36xi32>
    %g = cinm.op.gemm %cols, %w : (tensor<16x36xi32>, tensor<36x2xi32>) -> tensor<16x2xi32>
    %e = tensor.expand_shape %g [[0, 1, 2], [3]] output_shape [1, 4, 4, 2] : tensor<16x2xi32> into tensor<1x4x4x2xi32>
    %i = tensor.empty() : tensor<1x2x4x4xi32>
    %t = linalg.transpose ins(%e : tensor<1x4x4x2xi32>) outs(%i : tensor<1x2x4x4xi32>) permutation = [0, 3, 1, 2]
    cinm.yield %t : tensor<1x2x4x4xi32>
  }
  %z = arith.constant dense<0> : tensor<1x2x4x4xi32>
  %r = arith.maxsi %y, %z : tensor<1x2x4x4xi32>
  func.return %r : tensor<1x2x4x4xi32>
}

// CHECK-LABEL: func.func @conv
// CHECK:         %[[NHWC:.*]] = linalg.transpose ins(%x{{.*}}) outs({{.*}}) permutation = [0, 2, 3, 1]
// CHECK-NEXT:    %[[HWC:.*]] = tensor.collapse_shape %[[NHWC]] {{.*}} : tensor<1x4x4x4xi32> into tensor<4x4x4xi32>
// CHECK-NEXT:    %[[T0:.*]] = tensor.extract_slice %[[HWC]][0, 0, 0] [4, 4, 3] [1, 1, 1] : tensor<4x4x4xi32> to tensor<4x4x3xi32>
// CHECK-NEXT:    %[[T1:.*]] = tensor.extract_slice %[[HWC]][0, 0, 3] [4, 4, 1] [1, 1, 1] : tensor<4x4x4xi32> to tensor<4x4x1xi32>
// CHECK-NEXT:    %[[W0:.*]] = arith.constant {origin = "y: input channels 0:3, output channels 0:2 kernel position (0, 0)"} dense<1> : tensor<3x2xi32>
// CHECK:         {origin = "y: input channels 3:4, output channels 0:2 kernel position (2, 2)"} dense<1> : tensor<1x2xi32>
// CHECK-NEXT:    %[[C0:.*]] = spat.compute[%[[W0]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] (%[[T0]]) : [tensor<3x2xi32>, tensor<3x2xi32>, tensor<3x2xi32>, tensor<3x2xi32>, tensor<3x2xi32>] (tensor<4x4x3xi32>) -> tensor<4x4x2xi32> {
// CHECK-NEXT:    ^bb0({{.*}}, %[[A0:.*]]: tensor<4x4x3xi32>):
// CHECK-NEXT:      %[[Y0:.*]] = spat.apply_filters %[[A0]] weights [0, 1, 2, 3, 4, -1, -1, -1, -1] kernel [3, 3] pads [1, 1, 1, 1] : tensor<4x4x3xi32> -> tensor<4x4x2xi32>
// CHECK-NEXT:      spat.yield %[[Y0]] : tensor<4x4x2xi32>
// CHECK-NEXT:    }
// The second compute finishes tile 0:3 and starts tile 3:4 and adds both; like the third it yields
// its partial sum, and the last compute adds all three to its own (where they meet, not along a
// chain: the first three read side by side).
// CHECK-NEXT:    %[[C1:.*]] = spat.compute[{{.*}}] (%[[T0]], %[[T1]]) : [tensor<3x2xi32>, tensor<3x2xi32>, tensor<3x2xi32>, tensor<3x2xi32>, tensor<1x2xi32>] (tensor<4x4x3xi32>, tensor<4x4x1xi32>) -> tensor<4x4x2xi32> {
// CHECK-NEXT:    ^bb0({{.*}}, %[[B0:.*]]: tensor<4x4x3xi32>, %[[B1:.*]]: tensor<4x4x1xi32>):
// CHECK-NEXT:      %[[Y1:.*]] = spat.apply_filters %[[B0]] weights [-1, -1, -1, -1, -1, 0, 1, 2, 3] kernel [3, 3] pads [1, 1, 1, 1]
// CHECK-NEXT:      %[[Y2:.*]] = spat.apply_filters %[[B1]] weights [4, -1, -1, -1, -1, -1, -1, -1, -1] kernel [3, 3] pads [1, 1, 1, 1] : tensor<4x4x1xi32> -> tensor<4x4x2xi32>
// CHECK-NEXT:      %[[S1:.*]] = spat.vadd %[[Y1]], %[[Y2]] : tensor<4x4x2xi32>, tensor<4x4x2xi32>
// CHECK-NEXT:      spat.yield %[[S1]] : tensor<4x4x2xi32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[C2:.*]] = spat.compute[{{.*}}] (%[[T1]])
// CHECK:           spat.apply_filters %{{.*}} weights [-1, 0, 1, 2, 3, 4, -1, -1, -1]
// CHECK:         %[[C3:.*]] = spat.compute[%{{.*}}, %{{.*}}, %{{.*}}] (%[[T1]], %[[C0]], %[[C1]], %[[C2]])
// CHECK-NEXT:    ^bb0({{.*}}, %[[P0:.*]]: tensor<4x4x2xi32>, %[[P1:.*]]: tensor<4x4x2xi32>, %[[P2:.*]]: tensor<4x4x2xi32>):
// CHECK-NEXT:      %[[Y3:.*]] = spat.apply_filters %{{.*}} weights [-1, -1, -1, -1, -1, -1, 0, 1, 2]
// CHECK-NEXT:      %[[S3:.*]] = spat.vadd %[[P0]], %[[Y3]]
// CHECK-NEXT:      %[[S4:.*]] = spat.vadd %[[P1]], %[[S3]]
// CHECK-NEXT:      %[[S5:.*]] = spat.vadd %[[P2]], %[[S4]]
// CHECK-NEXT:      %[[R:.*]] = spat.vrelu %[[S5]] : tensor<4x4x2xi32>
// CHECK-NEXT:      spat.yield %[[R]] : tensor<4x4x2xi32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[E:.*]] = tensor.expand_shape %[[C3]] {{.*}} output_shape [1, 4, 4, 2] : tensor<4x4x2xi32> into tensor<1x4x4x2xi32>
// CHECK-NEXT:    %[[I:.*]] = tensor.empty() : tensor<1x2x4x4xi32>
// CHECK-NEXT:    %[[OUT:.*]] = linalg.transpose ins(%[[E]]{{.*}}) outs(%[[I]]{{.*}}) permutation = [0, 3, 1, 2]
// CHECK-NEXT:    func.return %[[OUT]] : tensor<1x2x4x4xi32>
// CHECK-NOT:     cinm.

// With 2x2 crossbars and at most 4 per compute, the same 36x2 matrix makes 2 input tiles x 9
// positions = 18 crossbars in 5 computes; the IR does not depend on the image size.
// TWO-LABEL: func.func @conv
// TWO-COUNT-18: arith.constant {origin
// TWO-COUNT-5:  spat.compute
// TWO-NOT:      spat.compute

// -----

// Weight skipping. On a 1x1 image with zero padding 1 only the centre kernel position meets a
// pixel, so the other eight positions get no crossbar (-1); filters 2:4 are all zeros, so their
// output tile is a constant.
func.func @skipping(%x: tensor<1x2x1x1xi32>) -> tensor<1x4x1x1xi32> {
  %c0 = arith.constant 0 : i32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %c0 : i32
  } : tensor<1x2x1x1xi32> to tensor<1x2x3x3xi32>
  %w = arith.constant dense<[[1, 2, 0, 0], [3, 4, 0, 0], [5, 6, 0, 0], [7, 8, 0, 0], [9, 10, 0, 0], [11, 12, 0, 0], [13, 14, 0, 0], [15, 16, 0, 0], [17, 18, 0, 0], [19, 20, 0, 0], [21, 22, 0, 0], [23, 24, 0, 0], [25, 26, 0, 0], [27, 28, 0, 0], [29, 30, 0, 0], [31, 32, 0, 0], [33, 34, 0, 0], [35, 36, 0, 0]]> : tensor<18x4xi32>
  %y = cinm.compute -> tensor<1x4x1x1xi32> {
    %cols = cinm.op.im2col %p {kernel = array<i64: 3, 3>} : tensor<1x2x3x3xi32> -> tensor<1x18xi32>
    %g = cinm.op.gemm %cols, %w : (tensor<1x18xi32>, tensor<18x4xi32>) -> tensor<1x4xi32>
    %e = tensor.expand_shape %g [[0, 1, 2], [3]] output_shape [1, 1, 1, 4] : tensor<1x4xi32> into tensor<1x1x1x4xi32>
    %i = tensor.empty() : tensor<1x4x1x1xi32>
    %t = linalg.transpose ins(%e : tensor<1x1x1x4xi32>) outs(%i : tensor<1x4x1x1xi32>) permutation = [0, 3, 1, 2]
    cinm.yield %t : tensor<1x4x1x1xi32>
  }
  func.return %y : tensor<1x4x1x1xi32>
}

// TWO-LABEL: func.func @skipping
// TWO:         %[[HWC:.*]] = tensor.collapse_shape {{.*}} into tensor<1x1x2xi32>
// TWO-NEXT:    %[[W:.*]] = arith.constant {origin = "y: input channels 0:2, output channels 0:2 kernel position (1, 1)"} dense<{{\[}}[9, 10], [27, 28]]> : tensor<2x2xi32>
// TWO-NEXT:    %[[A:.*]] = spat.compute[%[[W]]] (%[[HWC]])
// TWO-NEXT:    ^bb0
// TWO-NEXT:      spat.apply_filters %{{.*}} weights [-1, -1, -1, -1, 0, -1, -1, -1, -1] kernel [3, 3] pads [1, 1, 1, 1] : tensor<1x1x2xi32> -> tensor<1x1x2xi32>
// TWO:         %[[B:.*]] = spat.compute[] () : [] () -> tensor<1x1x2xi32> {
// TWO-NEXT:      %[[Z:.*]] = arith.constant dense<0> : tensor<1x1x2xi32>
// TWO-NEXT:      spat.yield %[[Z]] : tensor<1x1x2xi32>
// TWO-NEXT:    }
// TWO-NEXT:    %[[ALL:.*]] = spat.concat axis 2 %[[A]], %[[B]] : tensor<1x1x2xi32>, tensor<1x1x2xi32> -> tensor<1x1x4xi32>
// TWO-NEXT:    tensor.expand_shape %[[ALL]]

// -----

// A fully connected layer (Miotti 2025, App. B: the 1x1-kernel case, here on [rows, K] matrices)
// with a bias, ReLU and requantization: the bias is sliced per output tile and passed in, splat
// constants (shift, clamp) live in the computes, the output tiles are joined along axis 1.
func.func @dense(%x: tensor<2x5xi32>) -> tensor<2x4xi32> {
  %w = arith.constant dense<[[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15, 16], [17, 18, 19, 20]]> : tensor<5x4xi32>
  %b = arith.constant dense<[[1, 2, 3, 4], [5, 6, 7, 8]]> : tensor<2x4xi32>
  %y = cinm.compute -> tensor<2x4xi32> {
    %g = cinm.op.gemm %x, %w plus %b : (tensor<2x5xi32>, tensor<5x4xi32>) -> tensor<2x4xi32>
    cinm.yield %g : tensor<2x4xi32>
  }
  %zero = arith.constant dense<0> : tensor<2x4xi32>
  %r = arith.maxsi %y, %zero : tensor<2x4xi32>
  %two = arith.constant dense<2> : tensor<2x4xi32>
  %s = arith.shrsi %r, %two : tensor<2x4xi32>
  %top = arith.constant dense<127> : tensor<2x4xi32>
  %q = arith.minsi %s, %top : tensor<2x4xi32>
  func.return %q : tensor<2x4xi32>
}

// CHECK-LABEL: func.func @dense
// CHECK-NEXT:    %[[X0:.*]] = tensor.extract_slice %x[0, 0] [2, 3] [1, 1] : tensor<2x5xi32> to tensor<2x3xi32>
// CHECK-NEXT:    %[[X1:.*]] = tensor.extract_slice %x[0, 3] [2, 2] [1, 1] : tensor<2x5xi32> to tensor<2x2xi32>
// CHECK-NEXT:    %[[W00:.*]] = arith.constant {origin = "y: input channels 0:3, output channels 0:3"} dense<{{\[}}[1, 2, 3], [5, 6, 7], [9, 10, 11]]> : tensor<3x3xi32>
// CHECK-NEXT:    %[[W10:.*]] = arith.constant {origin = "y: input channels 3:5, output channels 0:3"} dense<{{\[}}[13, 14, 15], [17, 18, 19]]> : tensor<2x3xi32>
// CHECK-NEXT:    %[[W01:.*]] = arith.constant {origin = "y: input channels 0:3, output channels 3:4"} dense<{{\[}}[4], [8], [12]]> : tensor<3x1xi32>
// CHECK-NEXT:    %[[W11:.*]] = arith.constant {origin = "y: input channels 3:5, output channels 3:4"} dense<{{\[}}[16], [20]]> : tensor<2x1xi32>
// CHECK-NEXT:    %[[B0:.*]] = arith.constant dense<{{\[}}[1, 2, 3], [5, 6, 7]]> : tensor<2x3xi32>
// CHECK-NEXT:    %[[B1:.*]] = arith.constant dense<{{\[}}[4], [8]]> : tensor<2x1xi32>
// CHECK-NEXT:    %[[F0:.*]], %[[F1:.*]] = spat.compute[%[[W00]], %[[W10]], %[[W01]], %[[W11]]] (%[[X0]], %[[X1]], %[[B0]], %[[B1]])
// CHECK-NEXT:    ^bb0(%{{.*}}, %[[IN0:.*]]: tensor<2x3xi32>, %[[IN1:.*]]: tensor<2x2xi32>, %[[BIAS0:.*]]: tensor<2x3xi32>, %[[BIAS1:.*]]: tensor<2x1xi32>):
// CHECK-NEXT:      %[[G0:.*]] = spat.apply_filters %[[IN0]] weights [0] : tensor<2x3xi32> -> tensor<2x3xi32>
// CHECK-NEXT:      %[[G1:.*]] = spat.apply_filters %[[IN1]] weights [1] : tensor<2x2xi32> -> tensor<2x3xi32>
// CHECK-NEXT:      %[[G:.*]] = spat.vadd %[[G0]], %[[G1]]
// CHECK-NEXT:      %[[H0:.*]] = spat.apply_filters %[[IN0]] weights [2] : tensor<2x3xi32> -> tensor<2x1xi32>
// CHECK-NEXT:      %[[H1:.*]] = spat.apply_filters %[[IN1]] weights [3] : tensor<2x2xi32> -> tensor<2x1xi32>
// CHECK-NEXT:      %[[H:.*]] = spat.vadd %[[H0]], %[[H1]]
// CHECK-NEXT:      %[[GB:.*]] = spat.vadd %[[G]], %[[BIAS0]] : tensor<2x3xi32>, tensor<2x3xi32>
// CHECK-NEXT:      %[[HB:.*]] = spat.vadd %[[H]], %[[BIAS1]] : tensor<2x1xi32>, tensor<2x1xi32>
// CHECK-NEXT:      %[[GR:.*]] = spat.vrelu %[[GB]] : tensor<2x3xi32>
// CHECK-NEXT:      %[[HR:.*]] = spat.vrelu %[[HB]] : tensor<2x1xi32>
// CHECK-NEXT:      %[[SH:.*]] = arith.constant dense<2> : tensor<2x3xi32>
// CHECK-NEXT:      %[[GS:.*]] = arith.shrsi %[[GR]], %[[SH]] : tensor<2x3xi32>
// CHECK:           %[[TOP:.*]] = arith.constant dense<127> : tensor<2x3xi32>
// CHECK-NEXT:      %[[GQ:.*]] = arith.minsi %[[GS]], %[[TOP]] : tensor<2x3xi32>
// CHECK:           %[[HQ:.*]] = arith.minsi
// CHECK-NEXT:      spat.yield %[[GQ]], %[[HQ]] : tensor<2x3xi32>, tensor<2x1xi32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[Q:.*]] = spat.concat axis 1 %[[F0]], %[[F1]] : tensor<2x3xi32>, tensor<2x1xi32> -> tensor<2x4xi32>
// CHECK-NEXT:    func.return %[[Q]] : tensor<2x4xi32>

// -----

// Max pooling (padded with the smallest i32, folded as pads), global average pooling (reduce_sum
// over H and W, then floordivsi by H·W), flatten (free: a 1x1 image) and a fully connected layer
// as 1x1 filters on that image.
func.func @head(%x: tensor<1x2x4x4xi32>) -> tensor<1x3xi32> {
  %min = arith.constant -2147483648 : i32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %min : i32
  } : tensor<1x2x4x4xi32> to tensor<1x2x6x6xi32>
  %win = tensor.empty() : tensor<3x3xi32>
  %e = tensor.empty() : tensor<1x2x2x2xi32>
  %init = linalg.fill ins(%min : i32) outs(%e : tensor<1x2x2x2xi32>) -> tensor<1x2x2x2xi32>
  %m = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%p, %win : tensor<1x2x6x6xi32>, tensor<3x3xi32>) outs(%init : tensor<1x2x2x2xi32>) -> tensor<1x2x2x2xi32>
  %s1 = tosa.reduce_sum %m {axis = 2 : i32} : (tensor<1x2x2x2xi32>) -> tensor<1x2x1x2xi32>
  %s2 = tosa.reduce_sum %s1 {axis = 3 : i32} : (tensor<1x2x1x2xi32>) -> tensor<1x2x1x1xi32>
  %n = arith.constant dense<4> : tensor<1x2x1x1xi32>
  %avg = arith.floordivsi %s2, %n : tensor<1x2x1x1xi32>
  %f = tensor.collapse_shape %avg [[0], [1, 2, 3]] : tensor<1x2x1x1xi32> into tensor<1x2xi32>
  %w = arith.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %y = cinm.compute -> tensor<1x3xi32> {
    %g = cinm.op.gemm %f, %w : (tensor<1x2xi32>, tensor<2x3xi32>) -> tensor<1x3xi32>
    cinm.yield %g : tensor<1x3xi32>
  }
  func.return %y : tensor<1x3xi32>
}

// TWO-LABEL: func.func @head
// TWO:         %[[HWC:.*]] = tensor.collapse_shape {{.*}} into tensor<4x4x2xi32>
// TWO:         %[[POOLED:.*]] = spat.compute[] (%[[HWC]]) : [] (tensor<4x4x2xi32>) -> tensor<1x1x2xi32> {
// TWO-NEXT:    ^bb0(%[[IN:.*]]: tensor<4x4x2xi32>):
// TWO-NEXT:      %[[M:.*]] = spat.maxpool %[[IN]] kernel [3, 3] strides [2, 2] pads [1, 1, 1, 1] : tensor<4x4x2xi32> -> tensor<2x2x2xi32>
// TWO-NEXT:      %[[G:.*]] = spat.global_avgpool %[[M]] : tensor<2x2x2xi32> -> tensor<1x1x2xi32>
// TWO-NEXT:      spat.yield %[[G]] : tensor<1x1x2xi32>
// TWO-NEXT:    }
// TWO-NEXT:    %[[FC0:.*]], %[[FC1:.*]] = spat.compute[{{.*}}] (%[[POOLED]])
// TWO-NEXT:    ^bb0
// TWO-NEXT:      spat.apply_filters %{{.*}} weights [0] : tensor<1x1x2xi32> -> tensor<1x1x2xi32>
// TWO-NEXT:      spat.apply_filters %{{.*}} weights [1] : tensor<1x1x2xi32> -> tensor<1x1x1xi32>
// TWO:         %[[ALL:.*]] = spat.concat axis 2 %[[FC0]], %[[FC1]] : tensor<1x1x2xi32>, tensor<1x1x1xi32> -> tensor<1x1x3xi32>
// TWO-NEXT:    %[[FLAT:.*]] = tensor.collapse_shape %[[ALL]] {{.*}} : tensor<1x1x3xi32> into tensor<1x3xi32>
// TWO-NEXT:    func.return %[[FLAT]] : tensor<1x3xi32>
