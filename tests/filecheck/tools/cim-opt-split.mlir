// RUN: cim-opt %s --split-input-file | filecheck %s
// RUN: cim-opt %s --split-input-file | cim-opt --split-input-file | filecheck %s

// A split file whose first chunk holds only comments (as Cinnamon's test files start with a
// preamble): the chunk is an empty module, as with mlir-opt.

// CHECK:      builtin.module {
// CHECK-NEXT: }
// CHECK:      {{//}} {{-----}}
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @f() {

// -----
func.func @f() {
  func.return
}
