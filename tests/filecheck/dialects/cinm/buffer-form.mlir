// RUN: cim-opt %s | filecheck %s
// RUN: cim-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: cim-opt %s --print-op-generic | cim-opt | filecheck %s
// RUN: not cim-opt %S/inputs/into_without_type.mlir 2>&1 | filecheck %s --check-prefix=INTO
// RUN: cim-opt %S/inputs/buffer_form_invalid.mlir --split-input-file --verify-diagnostics | filecheck %s --check-prefix=INVALID

// Cinnamon's buffer form of cinm ops (its main branch): memref operands, the product added into
// (element-wise: written into) an 'into' memref, no result. Printed in Cinnamon's syntax.
func.func @buffers(%a: memref<8x16xi32>, %b: memref<16x4xi32>, %c: memref<8x4xi32>, %m: memref<8x16xi32>, %v: memref<16xi32>, %w: memref<8xi32>, %x: memref<6xf32>, %y: memref<6xf32>) {
  cinm.op.gemm %a, %b into %c : memref<8x16xi32>, memref<16x4xi32> into memref<8x4xi32>
  cinm.op.gemm %a, %b plus %c into %c : memref<8x16xi32>, memref<16x4xi32> plus memref<8x4xi32> into memref<8x4xi32>
  cinm.op.gemv %m, %v into %w : memref<8x16xi32>, memref<16xi32> into memref<8xi32>
  cinm.op.elementwise mul %x, %x into %y : memref<6xf32> into memref<6xf32>
  cinm.op.elementwise exp %x into %y : memref<6xf32> into memref<6xf32>
  return
}
// CHECK:      cinm.op.gemm %a, %b into %c : memref<8x16xi32>, memref<16x4xi32> into memref<8x4xi32>
// CHECK-NEXT: cinm.op.gemm %a, %b plus %c into %c : memref<8x16xi32>, memref<16x4xi32> plus memref<8x4xi32> into memref<8x4xi32>
// CHECK-NEXT: cinm.op.gemv %m, %v into %w : memref<8x16xi32>, memref<16xi32> into memref<8xi32>
// CHECK-NEXT: cinm.op.elementwise mul %x, %x into %y : memref<6xf32> into memref<6xf32>
// CHECK-NEXT: cinm.op.elementwise exp %x into %y : memref<6xf32> into memref<6xf32>

// GENERIC:      "cinm.op.gemm"(%a, %b, %c) <{operandSegmentSizes = array<i32: 1, 1, 0, 1>}> : (memref<8x16xi32>, memref<16x4xi32>, memref<8x4xi32>) -> ()
// GENERIC-NEXT: "cinm.op.gemm"(%a, %b, %c, %c) <{operandSegmentSizes = array<i32: 1, 1, 1, 1>}>
// GENERIC-NEXT: "cinm.op.gemv"(%m, %v, %w) <{operandSegmentSizes = array<i32: 1, 1, 0, 1>}>
// GENERIC-NEXT: "cinm.op.elementwise"(%x, %x, %y) <{kind = "mul"}> : (memref<6xf32>, memref<6xf32>, memref<6xf32>) -> ()
// GENERIC-NEXT: "cinm.op.elementwise"(%x, %y) <{kind = "exp"}> : (memref<6xf32>, memref<6xf32>) -> ()

// INTO: 'cinm.op.gemv' with 'into' needs the destination's type ('into' type)

// INVALID: operands must be tensors with a result, or memrefs adding into an 'into' memref (Cinnamon's buffer form) without one
// INVALID: operands must be tensors with a result, or memrefs adding into an 'into' memref (Cinnamon's buffer form) without one
// INVALID: 'cinm.op.gemm' result must be 8x4, got 8x5
// INVALID: 'cinm.op.gemm' takes left, right, an optional bias and an optional 'into' buffer, got 3 operands with segment sizes [1, 1, 1, 1]
// INVALID: 'cinm.op.elementwise' mul takes 2 operand(s) and an 'into' memref
// INVALID: 'cinm.op.elementwise' 'into' memref must have the operands' shape
