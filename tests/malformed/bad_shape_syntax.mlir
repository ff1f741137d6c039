// expected-error @+1 {{Expected shape type.}}
func.func @f(%x: tensor<4x>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
