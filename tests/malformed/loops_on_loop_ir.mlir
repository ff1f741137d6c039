// RUN-ARGS: -p irc-to-loops
// expected-error @unknown {{ValueError: irc-to-loops expects functions on tensors (irt level), got an argument or result of type memref<4xf32>}}
func.func @f(%x: memref<4xf32>) {
  func.return
}
