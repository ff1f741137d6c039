func.func @f(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // expected-error @+1 {{Expected arguments to have the same types as the function output types: expected [tensor<4xf32>, tensor<4xf32>], got [tensor<4xf32>]}}
  func.return %x : tensor<4xf32>
}
