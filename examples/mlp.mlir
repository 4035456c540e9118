// A two-layer int8 MLP (64 -> 128 -> 10, batch 8) in standard MLIR: linalg products, host ReLU
// and requantization (shift right by 7, clamp to int8). Values are int8 held in i32 tensors.
// The README's tour lowers it step by step and with `-p memristor`, and runs the result on a crossbar
// device: cim-opt examples/mlp.mlir -p 'memristor{device=isaac crossbars=4}' -o out/mlp_lowered.mlir
func.func @main(%x: tensor<8x64xi32>, %w1: tensor<64x128xi32>, %b1: tensor<8x128xi32>, %w2: tensor<128x10xi32>) -> tensor<8x10xi32> {
  %h = linalg.matmul ins(%x, %w1 : tensor<8x64xi32>, tensor<64x128xi32>) outs(%b1 : tensor<8x128xi32>) -> tensor<8x128xi32>
  %zero = arith.constant dense<0> : tensor<8x128xi32>
  %shift = arith.constant dense<7> : tensor<8x128xi32>
  %max = arith.constant dense<127> : tensor<8x128xi32>
  %relu = arith.maxsi %h, %zero : tensor<8x128xi32>
  %scaled = arith.shrsi %relu, %shift : tensor<8x128xi32>
  %q = arith.minsi %scaled, %max : tensor<8x128xi32>
  %init = tensor.empty() : tensor<8x10xi32>
  %y = linalg.matmul ins(%q, %w2 : tensor<8x128xi32>, tensor<128x10xi32>) outs(%init : tensor<8x10xi32>) -> tensor<8x10xi32>
  return %y : tensor<8x10xi32>
}
