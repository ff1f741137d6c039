// expected-error @+1 {{')' expected}}
func.func @f(%x: tensor<4xf32> -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
