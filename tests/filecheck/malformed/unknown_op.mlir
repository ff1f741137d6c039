// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}unknown_op.mlir:7:23: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{Operation irt.frobnicate is not registered}}
  %0 = irt.frobnicate %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
