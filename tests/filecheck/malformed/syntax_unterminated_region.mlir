// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}syntax_unterminated_region.mlir:8:1: {{.+}}
// CHECK-NOT: Traceback
// expected-error @+3 {{unexpected end of input (in block definition): is a '}' missing?}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
