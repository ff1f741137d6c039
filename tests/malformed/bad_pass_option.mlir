// RUN-ARGS: -p irc-fuse{bogus=1}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
