func.func @main(%a: memref<2x200xi32>, %b: memref<200x4xi32>, %o: memref<2x4xi32>) {
  cinm.compute {
    cinm.op.gemm %a, %b into %o : memref<2x200xi32>, memref<200x4xi32> into memref<2x4xi32>
    cinm.yield
  }
  func.return
}
