func.func @f(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = irt.relu %x : tensor<?x4xf32>
  func.return %0 : tensor<?x4xf32>
}
