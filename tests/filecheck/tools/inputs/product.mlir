func.func @main(%a: tensor<2x3xi32>, %b: tensor<3x2xi32>) -> tensor<2x2xi32> {
  %r = cinm.compute -> tensor<2x2xi32> {
    %0 = cinm.op.gemm %a, %b : (tensor<2x3xi32>, tensor<3x2xi32>) -> tensor<2x2xi32>
    cinm.yield %0 : tensor<2x2xi32>
  }
  return %r : tensor<2x2xi32>
}
