func.func @f(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = irt.transpose %x [1, 0] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
