func.func @into_without_type(%m: tensor<4x8xi32>, %v: tensor<8xi32>, %d: tensor<4xi32>) -> tensor<4xi32> {
  %r = cinm.op.gemv %m, %v into %d : tensor<4x8xi32>, tensor<8xi32> -> tensor<4xi32>
  return %r : tensor<4xi32>
}
