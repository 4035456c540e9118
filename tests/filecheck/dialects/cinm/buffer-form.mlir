// RUN: not cim-opt %s 2>&1 | filecheck %s
// RUN: not cim-opt %S/inputs/buffer_eltwise.mlir 2>&1 | filecheck %s --check-prefix=ELTWISE
// RUN: not cim-opt %S/inputs/into_without_type.mlir 2>&1 | filecheck %s --check-prefix=INTO

// Cinnamon's buffer form of cinm ops (memref operands accumulating into an 'into' buffer, no
// result) is refused with the op's place; cimxdsl's cinm is tensor-only.
func.func @gemm(%a: memref<8x16xi32>, %b: memref<16x4xi32>, %c: memref<8x4xi32>) {
  cinm.op.gemm %a, %b into %c : memref<8x16xi32>, memref<16x4xi32> into memref<8x4xi32>
  return
}
// CHECK: buffer-form.mlir:8:16
// CHECK: 'cinm.op.gemm' on memrefs (Cinnamon's buffer form) is not supported: use tensors
// CHECK-NOT: Traceback
// ELTWISE: buffer_eltwise.mlir:2:23
// ELTWISE: 'cinm.op.elementwise' on memrefs (Cinnamon's buffer form) is not supported: use tensors
// INTO: 'cinm.op.gemv' with 'into' needs the destination's type ('into' type)
