func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{operand is used with type tensor<5xf32>, but has been previously used or defined with type tensor<4xf32>}}
  %0 = irt.relu %x : tensor<5xf32>
  func.return %0 : tensor<4xf32>
}
