// RUN-ARGS: -p irc-fuse,irc-to-loops -t cpp
func.func @f(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  func.return %x : tensor<?x4xf32>
}
