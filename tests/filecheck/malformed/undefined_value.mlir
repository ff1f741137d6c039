// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}undefined_value.mlir:7:17: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{use of undefined value %y}}
  %0 = irt.relu %y : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
