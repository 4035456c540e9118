// RUN: cim-opt %s -p 'spatial-mapping{strategy=greedy cores=2 crossbars-per-core=2}' | filecheck %s
// RUN: cim-opt %s -p 'spatial-mapping{strategy=none cores=2 crossbars-per-core=2}' | filecheck %s --check-prefix=NONE

// The 3x3 layer (144 crossbar reads of 5.6 us on the pimcomp chip) is worth a second copy on the other core: each copy
// computes 2 of the 4 rows, from the 3 input rows its band needs; the 1x1 layer joins the bands.
func.func @main(%x: tensor<4x4x2xi32>) -> tensor<4x4x2xi32> {
  %w = arith.constant dense<1> : tensor<2x2xi32>
  %a = spat.compute [%w] (%x) : [tensor<2x2xi32>] (tensor<4x4x2xi32>) -> tensor<4x4x2xi32> {
  ^bb0(%wa: tensor<2x2xi32>, %in: tensor<4x4x2xi32>):
    %y = spat.apply_filters %in weights [0, 0, 0, 0, 0, 0, 0, 0, 0] kernel [3, 3] pads [1, 1, 1, 1] : tensor<4x4x2xi32> -> tensor<4x4x2xi32>
    %r = spat.vrelu %y : tensor<4x4x2xi32>
    spat.yield %r : tensor<4x4x2xi32>
  }
  %b = spat.compute [%w] (%a) : [tensor<2x2xi32>] (tensor<4x4x2xi32>) -> tensor<4x4x2xi32> {
  ^bb0(%wb: tensor<2x2xi32>, %in: tensor<4x4x2xi32>):
    %z = spat.apply_filters %in weights [0] : tensor<4x4x2xi32> -> tensor<4x4x2xi32>
    spat.yield %z : tensor<4x4x2xi32>
  }
  func.return %b : tensor<4x4x2xi32>
}

// CHECK:      func.func @main(%x: tensor<4x4x2xi32>) -> tensor<4x4x2xi32> attributes {spat.mapping = "greedy mapping on 2 cores of 2 crossbars: 1 computes replicated (up to 2x), 3 crossbars, busiest core {{[0-9.]+}} ms per image on chip 'pimcomp' (without replicas {{[0-9.]+}} ms)"} {
// CHECK:        %0 = spat.compute[%w] (%x) {core = 0 : i64} : [tensor<2x2xi32>] (tensor<4x4x2xi32>) -> tensor<2x4x2xi32> {
// CHECK-NEXT:   ^bb0(%1: tensor<2x2xi32>, %2: tensor<4x4x2xi32>):
// CHECK-NEXT:     %3 = spat.extract_rows %2 offset 0 : tensor<4x4x2xi32> -> tensor<3x4x2xi32>
// CHECK-NEXT:     %4 = spat.apply_filters %3 weights [0, 0, 0, 0, 0, 0, 0, 0, 0] kernel [3, 3] pads [1, 1, 0, 1] : tensor<3x4x2xi32> -> tensor<2x4x2xi32>
// CHECK-NEXT:     %5 = spat.vrelu %4 : tensor<2x4x2xi32>
// CHECK-NEXT:     spat.yield %5 : tensor<2x4x2xi32>
// CHECK:        %6 = spat.compute[%w] (%x) {core = 1 : i64} : [tensor<2x2xi32>] (tensor<4x4x2xi32>) -> tensor<2x4x2xi32> {
// CHECK:          %9 = spat.extract_rows %8 offset 1 : tensor<4x4x2xi32> -> tensor<3x4x2xi32>
// CHECK-NEXT:     %10 = spat.apply_filters %9 weights [0, 0, 0, 0, 0, 0, 0, 0, 0] kernel [3, 3] pads [0, 1, 1, 1] : tensor<3x4x2xi32> -> tensor<2x4x2xi32>
// CHECK:        %b = spat.compute[%w] (%0, %6) {core = 0 : i64} : [tensor<2x2xi32>] (tensor<2x4x2xi32>, tensor<2x4x2xi32>) -> tensor<4x4x2xi32> {
// CHECK-NEXT:   ^bb0(%12: tensor<2x2xi32>, %13: tensor<2x4x2xi32>, %14: tensor<2x4x2xi32>):
// CHECK-NEXT:     %15 = spat.concat axis 0 %13, %14 : tensor<2x4x2xi32>, tensor<2x4x2xi32> -> tensor<4x4x2xi32>
// CHECK-NEXT:     %z = spat.apply_filters %15 weights [0] : tensor<4x4x2xi32> -> tensor<4x4x2xi32>

// NONE:     %a = spat.compute[%w] (%x) {core = 0 : i64}
// NONE:     %b = spat.compute[%w] (%a) {core = 1 : i64}
