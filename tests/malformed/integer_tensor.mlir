func.func @f(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{irt.relu: operand 0 must be a tensor of f32, got tensor<4xi32>}}
  %0 = irt.relu %x : tensor<4xi32>
  func.return %0 : tensor<4xi32>
}
