func.func @f(%x: tensor<9223372036854775807x4xf32>) -> tensor<9223372036854775807x4xf32> {
  %0 = irt.relu %x : tensor<9223372036854775807x4xf32>
  func.return %0 : tensor<9223372036854775807x4xf32>
}
