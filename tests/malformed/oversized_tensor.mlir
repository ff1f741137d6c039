func.func @f(%x: tensor<9223372036854775807x4xf32>) -> tensor<9223372036854775807x4xf32> {
  // expected-error @+1 {{irt.relu: operand 0 has type tensor<9223372036854775807x4xf32>: 3.69e+19 elements, more than a 64-bit size can address}}
  %0 = irt.relu %x : tensor<9223372036854775807x4xf32>
  func.return %0 : tensor<9223372036854775807x4xf32>
}
