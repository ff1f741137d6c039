func.func @f(%x: tensor<3x0xf32>) -> tensor<3xf32> {
  %0 = irt.reduce max %x [1] : (tensor<3x0xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
