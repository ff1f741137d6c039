// expected-error @+1 {{Expected shape type.}}
func.func @f(%x: tensor<-3x4xf32>) -> tensor<-3x4xf32> {
  func.return %x : tensor<-3x4xf32>
}
