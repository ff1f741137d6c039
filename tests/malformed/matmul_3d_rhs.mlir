func.func @f(%x: tensor<2x3xf32>, %w: tensor<1x3x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{irt.matmul: a matmul contraction needs lhs of rank >= 1 and a 2-D rhs, got 2x3 and 1x3x4}}
  %0 = irt.matmul %x, %w : (tensor<2x3xf32>, tensor<1x3x4xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}
