// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}syntax_missing_paren.mlir:6:32: {{.+}}
// CHECK-NOT: Traceback
// expected-error @+1 {{')' expected}}
func.func @f(%x: tensor<4xf32> -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
