// RUN: cim-opt %s --split-input-file | filecheck %s
// RUN: cim-opt %s --split-input-file --print-op-generic | cim-opt --split-input-file | filecheck %s
// RUN: not cim-opt %s --split-input-file 2>&1 -p cinm-to-cim | filecheck %s --check-prefix=NONE

// IR in the syntax of Cinnamon's main branch (since 2025) parses; cimxdsl prints the thesis-era
// generation: products with parenthesized operand types, `cinm.op.add` for
// `cinm.op.elementwise add`, a compute's attributes before its result types.

func.func @products(%X: tensor<8x512xi32>, %W: tensor<512x256xi32> {cinm.static}, %b: tensor<8x256xi32>, %M: tensor<256x512xi32>, %v: tensor<512xi32>) -> (tensor<8x256xi32>, tensor<256xi32>) {
  %r:2 = cinm.compute -> tensor<8x256xi32>, tensor<256xi32> attributes {workgroupShape = array<i64: 1, 128, 1>} {
    %p = cinm.op.gemm %X, %W : tensor<8x512xi32>, tensor<512x256xi32> -> tensor<8x256xi32>
    %q = cinm.op.gemm %X, %W plus %b : tensor<8x512xi32>, tensor<512x256xi32> plus tensor<8x256xi32> -> tensor<8x256xi32>
    %s = cinm.op.elementwise add %p, %q : tensor<8x256xi32>
    %t = cinm.op.elementwise mul %s, %q {cinm.notile} : tensor<8x256xi32>
    %u = cinm.op.gemv %M, %v : tensor<256x512xi32>, tensor<512xi32> -> tensor<256xi32>
    cinm.yield %t, %u : tensor<8x256xi32>, tensor<256xi32>
  }
  func.return %r#0, %r#1 : tensor<8x256xi32>, tensor<256xi32>
}

// CHECK-LABEL: func.func @products
// CHECK-NEXT:    %{{.*}} = cinm.compute attributes {workgroupShape = array<i64: 1, 128, 1>} -> tensor<8x256xi32>, tensor<256xi32> {
// CHECK-NEXT:      %[[P:.*]] = cinm.op.gemm %X, %W : (tensor<8x512xi32>, tensor<512x256xi32>) -> tensor<8x256xi32>
// CHECK-NEXT:      %[[Q:.*]] = cinm.op.gemm %X, %W plus %b : (tensor<8x512xi32>, tensor<512x256xi32>) -> tensor<8x256xi32>
// CHECK-NEXT:      %[[S:.*]] = cinm.op.add %[[P]], %[[Q]] : tensor<8x256xi32>
// CHECK-NEXT:      %[[T:.*]] = cinm.op.mul %[[S]], %[[Q]] {cinm.notile} : tensor<8x256xi32>
// CHECK-NEXT:      %[[U:.*]] = cinm.op.gemv %M, %v : (tensor<256x512xi32>, tensor<512xi32>) -> tensor<256xi32>
// CHECK-NEXT:      cinm.yield %[[T]], %[[U]] : tensor<8x256xi32>, tensor<256xi32>

// -----

// A gemv with a bias (`plus`), and destinations (`into`) on tensors: Cinnamon uses a tensor
// destination only as a bufferization hint, so it is checked and dropped. Unary element-wise kinds
// print as `cinm.op.element_wise` (`neg` as `negf`).
func.func @destinations(%M: tensor<256x512xf32>, %v: tensor<512xf32>, %b: tensor<256xf32>, %X: tensor<8x512xf32>, %W: tensor<512x256xf32>, %c: tensor<8x256xf32>) -> (tensor<256xf32>, tensor<8x256xf32>) {
  %r = cinm.op.gemv %M, %v plus %b into %b : tensor<256x512xf32>, tensor<512xf32> plus tensor<256xf32> into tensor<256xf32> -> tensor<256xf32>
  %g = cinm.op.gemm %X, %W into %c : tensor<8x512xf32>, tensor<512x256xf32> into tensor<8x256xf32> -> tensor<8x256xf32>
  %e = cinm.op.elementwise exp %r into %b : tensor<256xf32> into tensor<256xf32>
  %n = cinm.op.elementwise neg %e : tensor<256xf32>
  %d = cinm.op.elementwise div %n, %e into %b : tensor<256xf32> into tensor<256xf32>
  func.return %d, %g : tensor<256xf32>, tensor<8x256xf32>
}

// CHECK-LABEL: func.func @destinations
// CHECK-NEXT:    %r = cinm.op.gemv %M, %v plus %b : (tensor<256x512xf32>, tensor<512xf32>) -> tensor<256xf32>
// CHECK-NEXT:    %g = cinm.op.gemm %X, %W : (tensor<8x512xf32>, tensor<512x256xf32>) -> tensor<8x256xf32>
// CHECK-NEXT:    %e = cinm.op.element_wise exp(%r) : tensor<256xf32>
// CHECK-NEXT:    %n = cinm.op.element_wise negf(%e) : tensor<256xf32>
// CHECK-NEXT:    %d = cinm.op.div %n, %e : tensor<256xf32>

// -----

// Computes on a named platform (kept, not used), the isolated `cinm.compute_block` with its
// argument bindings, and `cinm.op.mergePartial` (declared without operands, results or custom
// syntax by Cinnamon: generic form only).
func.func @computes(%x: tensor<8x64xi32>, %w: tensor<64x32xi32>) -> tensor<8x32xi32> {
  %r = cinm.compute on platform #upmem.platform<type = v1A, dpus = 2048, tasklets = 24> -> tensor<8x32xi32> attributes {workgroupShape = array<i64: 8, 32, 1>} {
    %g = cinm.op.gemm %x, %w : tensor<8x64xi32>, tensor<64x32xi32> -> tensor<8x32xi32>
    cinm.yield %g : tensor<8x32xi32>
  }
  %s = cinm.compute_block (%a = %r : tensor<8x32xi32>, %b = %x : tensor<8x64xi32>) -> tensor<8x32xi32> attributes {cinm.note = 1 : i64} {
    %t = cinm.op.elementwise add %a, %a : tensor<8x32xi32>
    cinm.yield %t : tensor<8x32xi32>
  }
  "cinm.op.mergePartial"() : () -> ()
  func.return %s : tensor<8x32xi32>
}

// CHECK-LABEL: func.func @computes
// CHECK-NEXT:    %r = cinm.compute on platform #upmem.platform<type = v1A, dpus = 2048, tasklets = 24> attributes {workgroupShape = array<i64: 8, 32, 1>} -> tensor<8x32xi32> {
// CHECK:         %s = cinm.compute_block (%a = %r : tensor<8x32xi32>, %b = %x : tensor<8x64xi32>) attributes {cinm.note = 1 : i64} -> tensor<8x32xi32> {
// CHECK-NEXT:      %t = cinm.op.add %a, %a : tensor<8x32xi32>
// CHECK-NEXT:      cinm.yield %t : tensor<8x32xi32>
// CHECK-NEXT:    }
// CHECK-NEXT:    "cinm.op.mergePartial"() : () -> ()

// -----

// A benchmark of Cinnamon's main branch (a product outside any compute): the memristor flow wraps
// it in a compute; cinm-to-cim alone names it.
func.func @_2mm_par(%X: tensor<8x64xi32>, %W1: tensor<64x64xi32> {cinm.static}, %W2: tensor<64x64xi32> {cinm.static}) -> (tensor<8x64xi32>, tensor<8x64xi32>) {
  %r1 = cinm.op.gemm %X, %W1 : tensor<8x64xi32>, tensor<64x64xi32> -> tensor<8x64xi32>
  %r2 = cinm.op.gemm %X, %W2 : tensor<8x64xi32>, tensor<64x64xi32> -> tensor<8x64xi32>
  func.return %r1, %r2 : tensor<8x64xi32>, tensor<8x64xi32>
}

// CHECK-LABEL: func.func @_2mm_par
// CHECK-NEXT:    %r1 = cinm.op.gemm %X, %W1 : (tensor<8x64xi32>, tensor<64x64xi32>) -> tensor<8x64xi32>
// NONE: cinm-to-cim: a matrix product outside any cinm.compute would not be offloaded
