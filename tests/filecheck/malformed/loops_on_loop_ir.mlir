// RUN: irc-opt %s -p irc-to-loops --verify-diagnostics
// RUN: %exit1 irc-opt %s -p irc-to-loops 2>&1 | filecheck %s
// CHECK: irc-opt: error: ValueError: irc-to-loops {{.+}}
// CHECK-NOT: Traceback
// expected-error @unknown {{irc-to-loops expects functions on tensors (irt level), got argument 0 of @f of type memref<4xf32>}}
func.func @f(%x: memref<4xf32>) {
  func.return
}
