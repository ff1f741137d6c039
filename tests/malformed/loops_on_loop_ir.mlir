// RUN-ARGS: -p irc-to-loops
func.func @f(%x: memref<4xf32>) {
  func.return
}
