func.func @f(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{irt.mul: result shape 5 does not match the broadcast operand shape 4}}
  %0 = irt.mul %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<5xf32>
  func.return %0 : tensor<5xf32>
}
