// An invalid product (inner dimensions differ).
func.func @main(%a: tensor<6x4xi32>, %b: tensor<5x22xi32>) -> tensor<6x22xi32> {
  %d = cinm.op.gemm %a, %b : (tensor<6x4xi32>, tensor<5x22xi32>) -> tensor<6x22xi32>
  return %d : tensor<6x22xi32>
}
