// RUN: irc-opt %s --verify-diagnostics
// RUN: %exit1 irc-opt %s 2>&1 | filecheck %s
// CHECK: irc-opt: error: {{.*}}contract_bad_kind.mlir:7:21: {{.+}}
// CHECK-NOT: Traceback
func.func @f(%x: tensor<2x3xf32>, %w: tensor<4x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{Expected `linear`, `matmul`, or `packed`.}}
  %0 = irt.contract conv %x, %w : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32> {
  ^bb0(%acc: f32):
    irt.yield %acc : f32
  }
  func.return %0 : tensor<2x4xf32>
}
