func.func @f(%x: tensor<2x3xf32>) -> tensor<7xf32> {
  %0 = irt.reshape %x : (tensor<2x3xf32>) -> tensor<7xf32>
  func.return %0 : tensor<7xf32>
}
