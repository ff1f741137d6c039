// RUN-ARGS: -p irc-to-loops
// expected-error @unknown {{irc-to-loops expects functions on tensors (irt level), got argument 0 of @f of type memref<4xf32>}}
func.func @f(%x: memref<4xf32>) {
  func.return
}
