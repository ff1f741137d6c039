func.func @f(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{irt.transpose: [0, 0] is not a permutation of 2 dimensions}}
  %0 = irt.transpose %x [0, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}
