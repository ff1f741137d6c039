func.func @f(%x: tensor<4xi32>) -> tensor<4xi32> {
  %0 = irt.relu %x : tensor<4xi32>
  func.return %0 : tensor<4xi32>
}
