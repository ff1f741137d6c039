// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}gelu_bad_approx.mlir:7:27: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{Expected `none`, or `tanh`.}}
  %0 = irt.gelu %x approx sigmoid : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
