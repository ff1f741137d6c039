// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}elementwise_body_args.mlir:7:8: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{irt.elementwise: the scalar body must take 1 f32 argument(s), got (f32, f32)}}
  %0 = irt.elementwise ins(%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: f32, %b: f32):
    irt.yield %a : f32
  }
  func.return %0 : tensor<4xf32>
}
