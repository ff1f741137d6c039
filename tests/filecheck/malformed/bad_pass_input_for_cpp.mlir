// RUN: irc-opt %s -t cpp --verify-diagnostics
// RUN: %exit1 irc-opt %s -t cpp 2>&1 | filecheck %s
// CHECK: irc-opt: error: NotImplementedError: cpp emitter: {{.+}}
// CHECK-NOT: Traceback
// expected-error @unknown {{NotImplementedError: cpp emitter: function arguments must be memrefs or sizes, got tensor<4xf32>}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = irt.relu %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
