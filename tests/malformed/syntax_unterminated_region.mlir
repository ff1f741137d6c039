// expected-error @+3 {{unexpected end of input (in block definition): is a '}' missing?}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
