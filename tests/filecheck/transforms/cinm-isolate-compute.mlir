// RUN: cim-opt %s --split-input-file -p cinm-isolate-compute | filecheck %s
// RUN: cim-opt %s --split-input-file -p cinm-isolate-compute-blocks | filecheck %s
// RUN: not cim-opt %s --split-input-file -p cinm-to-cim 2>&1 | filecheck %s --check-prefix=STRAY

// A run of stray cinm ops with a product becomes one compute yielding what is used after it; host
// ops end a run; ops already inside a compute, and runs with no product, stay where they are.
func.func @runs(%a: tensor<4x8xi32>, %b: tensor<8x4xi32>, %v: tensor<8xi32>) -> (tensor<4x4xi32>, tensor<4xi32>) {
  %r = cinm.op.gemm %a, %b : (tensor<4x8xi32>, tensor<8x4xi32>) -> tensor<4x4xi32>
  %s = cinm.op.add %r, %r : tensor<4x4xi32>
  %c = arith.constant 1 : i32
  %g = cinm.op.gemv %a, %v : (tensor<4x8xi32>, tensor<8xi32>) -> tensor<4xi32>
  %k = cinm.compute -> tensor<4xi32> {
    %h = cinm.op.gemv %a, %v : (tensor<4x8xi32>, tensor<8xi32>) -> tensor<4xi32>
    cinm.yield %h : tensor<4xi32>
  }
  %t = cinm.op.add %g, %k : tensor<4xi32>
  func.return %s, %t : tensor<4x4xi32>, tensor<4xi32>
}

// CHECK-LABEL: func.func @runs
// CHECK-NEXT:    %[[S:.*]] = cinm.compute -> tensor<4x4xi32> {
// CHECK-NEXT:      %[[R:.*]] = cinm.op.gemm %a, %b
// CHECK-NEXT:      %[[S1:.*]] = cinm.op.add %[[R]], %[[R]]
// CHECK-NEXT:      cinm.yield %[[S1]] : tensor<4x4xi32>
// CHECK-NEXT:    }
// CHECK-NEXT:    arith.constant 1 : i32
// CHECK-NEXT:    %[[G:.*]] = cinm.compute -> tensor<4xi32> {
// CHECK-NEXT:      %[[G1:.*]] = cinm.op.gemv %a, %v
// CHECK-NEXT:      cinm.yield %[[G1]] : tensor<4xi32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[K:.*]] = cinm.compute -> tensor<4xi32> {
// CHECK-NEXT:      %[[H:.*]] = cinm.op.gemv %a, %v
// CHECK-NEXT:      cinm.yield %[[H]] : tensor<4xi32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[T:.*]] = cinm.op.add %[[G]], %[[K]]
// CHECK-NEXT:    func.return %[[S]], %[[T]]

// STRAY: cinm-to-cim: a matrix product outside any cinm.compute would not be offloaded (run cinm-isolate-compute first) ('cinm.op.gemm')

// -----

// A stray op whose result is unused is still offloaded, in a compute with no results.
func.func @unused(%a: tensor<4x8xi32>, %b: tensor<8x4xi32>) {
  %r = cinm.op.gemm %a, %b : (tensor<4x8xi32>, tensor<8x4xi32>) -> tensor<4x4xi32>
  func.return
}

// CHECK-LABEL: func.func @unused
// CHECK-NEXT:    cinm.compute {
// CHECK-NEXT:      cinm.op.gemm %a, %b
// CHECK-NEXT:      cinm.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return

// -----

// A cinm.compute_block (Cinnamon's compute isolated from above) becomes a cinm.compute on the
// values its arguments name; its attributes and platform stay.
func.func @compute_block(%x: tensor<4x8xi32>, %w: tensor<8x4xi32>) -> tensor<4x4xi32> {
  %r = cinm.compute_block on platform #upmem.platform<type = v1A, dpus = 8> (%a = %x : tensor<4x8xi32>, %b = %w : tensor<8x4xi32>) -> tensor<4x4xi32> attributes {workgroupShape = array<i64: 1, 4, 1>} {
    %g = cinm.op.gemm %a, %b : tensor<4x8xi32>, tensor<8x4xi32> -> tensor<4x4xi32>
    cinm.yield %g : tensor<4x4xi32>
  }
  func.return %r : tensor<4x4xi32>
}

// CHECK-LABEL: func.func @compute_block
// CHECK-NEXT:    %[[R:.*]] = cinm.compute on platform #upmem.platform<type = v1A, dpus = 8> attributes {workgroupShape = array<i64: 1, 4, 1>} -> tensor<4x4xi32> {
// CHECK-NEXT:      %g = cinm.op.gemm %x, %w : (tensor<4x8xi32>, tensor<8x4xi32>) -> tensor<4x4xi32>
// CHECK-NEXT:      cinm.yield %g : tensor<4x4xi32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[R]] : tensor<4x4xi32>
