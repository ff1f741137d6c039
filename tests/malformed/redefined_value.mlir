func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = irt.relu %x : tensor<4xf32>
  // expected-error @+1 {{SSA value %0 is already defined}}
  %0 = irt.relu %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
