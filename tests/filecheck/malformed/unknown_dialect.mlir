// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}unknown_dialect.mlir:7:16: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{Operation nope.op is not registered}}
  %0 = nope.op %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
