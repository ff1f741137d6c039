func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{Expected `none`, or `tanh`.}}
  %0 = irt.gelu %x approx sigmoid : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
