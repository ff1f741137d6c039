// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}elementwise_no_yield.mlir:9:10: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = irt.elementwise ins(%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: f32):
    // expected-error @+1 {{Operation arith.addf terminates block in single-block region but is not a terminator}}
    %1 = arith.addf %a, %a : f32
  }
  func.return %0 : tensor<4xf32>
}
