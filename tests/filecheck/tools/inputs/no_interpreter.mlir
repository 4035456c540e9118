// An op the interpreter has no function for: cim-run names it and where it is.
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = math.atan %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}
