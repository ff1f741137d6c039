func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = irt.relu %x
  // expected-error @+1 {{Expected ':'}}
  func.return %0 : tensor<4xf32>
}
