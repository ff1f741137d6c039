func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{use of undefined value %y}}
  %0 = irt.relu %y : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
