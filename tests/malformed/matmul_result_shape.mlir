func.func @f(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{irt.matmul: result shape 4x2 should be 2x4}}
  %0 = irt.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<4x2xf32>
  func.return %0 : tensor<4x2xf32>
}
